// The Verifier's phases (verifier.hpp): each reads the pack through the reader's raw view of
// the metadata (a record in a failed block is still worth checking against what it describes)
// and its checked accessors, and adds what it finds to the report.
#include "pack/reader/verifier.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>

#include "pack/format/codec.hpp"
#include "packfs/path.hpp"

namespace packfs::pack {

namespace {

constexpr uint64_t kChunk = 1 << 20;  // hashing slice, for progress and pread buffers

std::string hex64(uint64_t v) {
    return fmt::format("{:#018x}", v);
}

}  // namespace

void Verifier::Progress::add(uint64_t bytes) {
    done_ += bytes;
    if (callback_ && done_ - reported_ >= (8u << 20)) {
        reported_ = done_;
        callback_(std::min(done_, total_), total_);
    }
}

void Verifier::Progress::finish() {
    if (callback_) callback_(total_, total_);
}

Verifier::Verifier(const PackReader& reader,
                   const std::function<void(uint64_t, uint64_t)>& progress)
    : r_(reader),
      m_(reader.metadata()),
      d_(reader.data()),
      v2_(reader.version() >= 2),
      meter_(progress) {}

VerifyReport Verifier::run() {
    inflate_metadata();
    gather_contents();
    check_sections();
    check_metadata_blocks();
    check_contents();
    check_untouched_blocks();
    check_block_digests();
    check_padding();
    walk_tree();
    check_numbering();
    check_image_digest();
    if (r_.image().damaged())
        problem("pack file", "changed underneath it (truncated?) while it was read");
    report_.bytes_checked = meter_.done();
    meter_.finish();
    return std::move(report_);
}

void Verifier::problem(std::string where, std::string what) {
    report_.problems.push_back(VerifyProblem{std::move(where), std::move(what)});
}

// --- 0. compressed metadata --------------------------------------------------------------

// Every block inflated first, so everything below reads the region as if it were stored raw
// (a block whose frame is bad reads as zeros, and fails its sum).
void Verifier::inflate_metadata() {
    if (!m_.frames_) return;
    for (uint64_t b = 0; b < m_.block_sum_count_; ++b) {
        auto fault = m_.frames_->inflate(b);
        if (!fault) continue;
        const Corruption& c = fault->corruption;
        if (!fault->transient)
            m_.failed_[b / 64].fetch_or(uint64_t{1} << (b % 64), std::memory_order_acq_rel);
        problem(fmt::format("metadata block {} (offset {})", b, c.offset),
                fault->transient
                    ? c.what
                    : fmt::format("{}: expected {}, found {}", c.what, c.expected, c.actual));
    }
}

// --- the contents' records ---------------------------------------------------------------

// v2: each content's locator is in the inodes that hold it (the first one, in record order; the
// tree walk checks every other one agrees) and its SHA-256 in the digests section. Raw reads: a
// record in a failed block is still worth hashing against its data.
void Verifier::locate_v2_contents() {
    located_.assign(m_.content_count_, Content{});
    for (uint64_t i = 0; i < m_.inode_count_; ++i) {
        const auto n = load<InodeV2>(m_.meta_ + m_.inode_rel(i));
        if ((n.mode & S_IFMT) != S_IFREG || n.size == 0 || n.aux >= m_.content_count_) continue;
        Content& c = located_[n.aux];
        if (c.size == 0) {
            c.offset = n.ref;
            c.size = n.size;
        }
    }
    for (uint64_t i = 0; i < m_.content_count_; ++i)
        std::memcpy(located_[i].sha256, m_.meta_ + m_.contents_rel_ + i * 32, 32);
}

// The contents, read first (records only) so the progress total is known. v1: the content
// records; v2: locate_v2_contents().
void Verifier::gather_contents() {
    bad_content_.assign(m_.content_count_, std::string());
    items_.reserve(m_.content_count_);
    if (v2_) locate_v2_contents();
    for (uint64_t i = 0; i < m_.content_count_; ++i) {
        const Content c =
            v2_ ? located_[i] : load<Content>(m_.meta_ + m_.contents_rel_ + i * sizeof(Content));
        Item item{i, c.offset, c.size, c.size <= m_.inline_max_, {}};
        std::memcpy(item.sha.data(), c.sha256, item.sha.size());
        const uint64_t limit = item.is_inline ? m_.bytes_length_ : d_.stream_size_;
        if (c.size == 0 || c.offset > limit || c.size > limit - c.offset) {
            bad_content_[i] =
                c.size == 0 && v2_
                    ? fmt::format("content {} is held by no file", i)
                    : fmt::format("content record {} has a bad range (offset {}, size {})", i,
                                  c.offset, c.size);
            continue;
        }
        content_bytes_ += c.size;
        items_.push_back(item);
    }
    const uint64_t compressed_total = d_.codec_ == Codec::none && !d_.holes_ ? 0 : d_.data_length_;
    const uint64_t digested_total = d_.block_digests_ ? d_.data_length_ : 0;
    meter_.set_total(3 * m_.meta_length_ + content_bytes_ + compressed_total + digested_total);
}

// --- 1. sections -------------------------------------------------------------------------

void Verifier::check_sections() {
    for (std::size_t s = 0; s < kSectionCount; ++s) {
        const SectionEntry& e = section(m_.header_, s);
        if (e.offset == 0) continue;  // absent (open() checked its entry is all zero)
        const uint64_t sum = xxh3_64(std::span(m_.meta_ + (e.offset - m_.meta_offset_), e.length));
        ++report_.sections_checked;
        meter_.add(e.length);
        if (sum != e.checksum)
            problem(fmt::format("section {}", section_name(m_.version_, s)),
                    fmt::format("checksum mismatch: expected {}, found {}", hex64(e.checksum),
                                hex64(sum)));
    }
}

// --- 2. metadata blocks ------------------------------------------------------------------

void Verifier::check_metadata_blocks() {
    for (uint64_t b = 0; b < m_.block_sum_count_; ++b) {
        uint64_t expected = 0, actual = 0;
        const uint64_t bit = uint64_t{1} << (b % 64);
        ++report_.blocks_checked;
        meter_.add(std::min<uint64_t>(kMetaBlockSize, m_.meta_length_ - b * kMetaBlockSize));
        if (m_.block_sum_matches(b, expected, actual)) {
            // A block that failed before stays failed (the file changed in place since).
            if ((m_.failed_[b / 64].load(std::memory_order_acquire) & bit) == 0)
                m_.checked_[b / 64].fetch_or(bit, std::memory_order_acq_rel);
        } else {
            m_.failed_[b / 64].fetch_or(bit, std::memory_order_acq_rel);
            problem(fmt::format("metadata block {} (offset {})", b,
                                m_.meta_offset_ + b * kMetaBlockSize),
                    fmt::format("checksum mismatch: expected {}, found {}", hex64(expected),
                                hex64(actual)));
        }
    }
}

// --- 3. contents -------------------------------------------------------------------------

// In stream order (the inline ones first), so a compressed block is loaded once into block_.
void Verifier::check_contents() {
    std::sort(items_.begin(), items_.end(), [](const Item& a, const Item& b) {
        return a.is_inline != b.is_inline ? a.is_inline : a.offset < b.offset;
    });
    block_state_.assign(d_.block_count_, 0);
    for (const Item& item : items_) check_content(item);
}

void Verifier::check_content(const Item& item) {
    std::string why;
    for (uint64_t done = 0; done < item.size;) {
        auto slice = content_slice(item, done, why);
        if (!slice) {
            (void)sha_.finish();  // resets it
            bad_content_[item.index] = "content " + why;
            return;
        }
        sha_.update(*slice);
        done += slice->size();
        meter_.add(slice->size());
    }
    const Sha256Digest got = sha_.finish();
    if (got != item.sha) {
        bad_content_[item.index] = fmt::format("content SHA-256 mismatch: expected {}, found {}",
                                               to_hex(item.sha), to_hex(got));
    }
}

std::optional<std::span<const std::byte>> Verifier::content_slice(const Item& item, uint64_t done,
                                                                  std::string& why) {
    const uint64_t n = std::min(kChunk, item.size - done);
    if (item.is_inline) {
        auto at = m_.meta(m_.bytes_rel_ + item.offset, item.size, ctx_);
        if (!at) {
            why = at.error().message();
            return std::nullopt;
        }
        return std::span(*at, item.size);
    }
    if (d_.codec_ == Codec::none && !d_.holes_) {
        const uint64_t at = d_.data_offset_ + item.offset + done;
        if (const std::byte* map = r_.image().mapping()) return std::span(map + at, n);
        chunk_.resize(n);
        if (!r_.image().read_at(at, chunk_)) {
            why = "cannot be read (I/O error or short file)";
            return std::nullopt;
        }
        return std::span<const std::byte>(chunk_);
    }
    const uint64_t pos = item.offset + done;
    const uint64_t index = pos / d_.block_size_;
    if (!load_block(index)) {
        why = fmt::format("cannot be read: data block {} is bad", index);
        return std::nullopt;
    }
    const uint64_t in_block = pos % d_.block_size_;
    return std::span<const std::byte>(block_).subspan(
        in_block, std::min<uint64_t>(n, block_.size() - in_block));
}

bool Verifier::load_block(uint64_t index) {
    if (index == block_index_) return true;
    block_index_ = UINT64_MAX;
    if (index >= d_.block_count_) {  // contents were checked against the stream; be sure anyway
        problem(fmt::format("data block {}", index), "past the blocks section");
        return false;
    }
    if (block_state_[index] == 2) return false;
    auto where = d_.stored_block(index, ctx_);
    Result<void> ok;
    if (!where) {
        ok = std::unexpected(where.error());
    } else {
        block_.resize(where->stream_length);
        if (where->hole()) {
            std::fill(block_.begin(), block_.end(), std::byte{0});
        } else if (where->raw()) {
            if (const std::byte* map = r_.image().mapping()) {
                std::memcpy(block_.data(), map + where->stored_offset, block_.size());
            } else if (!r_.image().read_at(where->stored_offset, block_)) {
                ok = fail(EIO, "verify");
            }
        } else {
            ok = d_.decompress(index, *where, block_, ctx_);
        }
        meter_.add(where->stored_length);
    }
    if (block_state_[index] == 0) ++report_.blocks_checked;
    if (!ok) {
        block_state_[index] = 2;
        problem(fmt::format("data block {}", index), ok.error().message());
        return false;
    }
    block_state_[index] = 1;
    block_index_ = index;
    return true;
}

// --- 4. the rest of the data region ------------------------------------------------------

// Blocks no content touched (padding, or contents with bad records).
void Verifier::check_untouched_blocks() {
    for (uint64_t i = 0; i < d_.block_count_; ++i) {
        if (block_state_[i] == 0) (void)load_block(i);
    }
}

// Each block's stored bytes against its digest (the block-digests feature).
void Verifier::check_block_digests() {
    if (!d_.block_digests_) return;
    std::vector<std::byte> stored;
    for (uint64_t i = 0, count = d_.stream_block_count(); i < count; ++i) {
        auto extent = d_.block_extent(i, ctx_);
        auto want = extent ? d_.block_digest(i, ctx_) : std::unexpected(extent.error());
        if (!want) {
            problem(fmt::format("data block {}", i), want.error().message());
            continue;
        }
        std::span<const std::byte> bytes;
        if (const std::byte* map = r_.image().mapping()) {
            bytes = std::span(map + extent->offset, extent->length);
        } else {
            stored.resize(extent->length);
            if (!r_.image().read_at(extent->offset, stored)) {
                problem(fmt::format("data block {}", i),
                        "cannot be read (I/O error or short file)");
                continue;
            }
            bytes = stored;
        }
        const Sha256Digest got = sha256(bytes);
        meter_.add(bytes.size());
        if (std::memcmp(got.data(), want->data(), got.size()) != 0)
            problem(fmt::format("data block {} (offset {})", i, extent->offset),
                    fmt::format("block digest mismatch: expected {}, found {}",
                                to_hex(std::span<const uint8_t>(*want)), to_hex(got)));
    }
}

// Bytes that belong to nothing are zero (format.hpp): the header page after the header, the gap
// before the metadata, and the bytes of a raw stream outside every content.
void Verifier::check_padding() {
    check_zero(kHeaderSize, d_.data_offset_ - kHeaderSize, "header page");
    check_zero(d_.data_offset_ + d_.data_length_,
               m_.meta_offset_ - d_.data_offset_ - d_.data_length_, "gap before the metadata");
    if (d_.codec_ != Codec::none) return;
    uint64_t covered = 0;  // items: the inline ones first, then by stream offset
    for (const Item& item : items_) {
        if (item.is_inline) continue;
        if (item.offset > covered) check_stream_zero(covered, item.offset - covered);
        covered = std::max(covered, item.offset + item.size);
    }
    if (d_.stream_size_ > covered) check_stream_zero(covered, d_.stream_size_ - covered);
}

void Verifier::check_zero(uint64_t offset, uint64_t length, std::string_view what) {
    for (uint64_t done = 0; done < length;) {
        const uint64_t n = std::min(kChunk, length - done);
        const std::byte* at = nullptr;
        if (const std::byte* map = r_.image().mapping()) {
            at = map + offset + done;
        } else {
            zeros_.resize(n);
            if (!r_.image().read_at(offset + done, zeros_)) {
                problem(std::string(what), "cannot be read (I/O error or short file)");
                return;
            }
            at = zeros_.data();
        }
        for (uint64_t i = 0; i < n; ++i) {
            if (at[i] != std::byte{0}) {
                problem(std::string(what),
                        fmt::format("byte at offset {} is {:#04x}; padding must be zero",
                                    offset + done + i, static_cast<unsigned>(at[i])));
                return;
            }
        }
        done += n;
    }
}

// Stream bytes [offset, offset + length) where they are stored raw: all of a raw stream, or
// with holes the raw blocks' parts (a hole stores nothing).
void Verifier::check_stream_zero(uint64_t offset, uint64_t length) {
    if (!d_.holes_) return check_zero(d_.data_offset_ + offset, length, "stream padding");
    for (uint64_t pos = offset, end = offset + length; pos < end;) {
        const uint64_t index = pos / d_.block_size_, in_block = pos % d_.block_size_;
        auto where = d_.stored_block(index, ctx_);
        if (!where) return;  // reported with the blocks
        const uint64_t n = std::min(end - pos, where->stream_length - in_block);
        if (!where->hole()) check_zero(where->stored_offset + in_block, n, "stream padding");
        pos += n;
    }
}

// --- 5. the tree -------------------------------------------------------------------------

// Every record checked, and the paths of the files with bad content.
void Verifier::walk_tree() {
    bad_paths_.assign(m_.content_count_, {});
    seen_dir_.assign(m_.inode_count_ + 1, false);
    if (auto root = m_.inode(kRootIno, ctx_); !root) {
        problem("/", root.error().message());
    } else if (root->type != FileType::directory) {
        problem("/", "the root inode is not a directory");
    } else {
        seen_dir_[kRootIno] = true;
        check_xattrs("/", *root);
        dirs_.push_back(Dir{"/", *root});
    }
    while (!dirs_.empty()) {
        const Dir dir = std::move(dirs_.back());
        dirs_.pop_back();
        check_directory(dir);
    }
    report_bad_contents();
}

void Verifier::check_directory(const Dir& dir) {
    auto entries = r_.list(dir.node, Ctx{"verify", dir.path});
    if (!entries) {
        problem(dir.path, entries.error().message());
        return;
    }
    const std::byte* dirents = m_.meta_ + m_.dirents_rel_ + dir.node.rec.ref * sizeof(Dirent);
    if (v2_) check_buckets(dir.path, dir.node, *entries);
    for (std::size_t i = 0; i < entries->size(); ++i) {
        const DirEntry& e = (*entries)[i];
        const std::byte* dirent = dirents + i * sizeof(Dirent);
        std::string path = path_join(dir.path, e.name);
        check_entry_key(path, *entries, i, dirent);
        // DirEntry::ino is the inode number; the walk goes by record number (list() checked it
        // in range).
        check_entry(std::move(path), e, load<uint32_t>(dirent + offsetof(Dirent, ino)));
    }
}

// list() checked the range; lookups trust the order and the keys (v1: the name's prefix, v2:
// its hash; the order is by key, then name), so check both.
void Verifier::check_entry_key(const std::string& path, const std::vector<DirEntry>& entries,
                               std::size_t i, const std::byte* dirent) {
    auto key_of = [&](const std::string& name) {
        return v2_ ? m_.hash_of(name) : name_prefix(name.data(), name.size());
    };
    const std::string& name = entries[i].name;
    const auto key = load<uint32_t>(dirent + kDirentHashOffset);
    if (key != key_of(name))
        problem(path, fmt::format("dirent {} {:#x} does not match the name (a lookup may miss it)",
                                  v2_ ? "name hash" : "name prefix", key));
    if (i > 0) {
        const std::string& before = entries[i - 1].name;
        const uint32_t key_before = key_of(before);
        if (key_before > key_of(name) || (key_before == key_of(name) && before >= name))
            problem(path, "directory entries out of order (a lookup may miss them)");
    }
}

void Verifier::check_entry(std::string path, const DirEntry& entry, uint64_t record) {
    auto node = m_.inode(record, Ctx{"verify", path});
    if (!node) {
        problem(path, node.error().message());
        return;
    }
    if (node->type != entry.type) {  // v2 lists from the dirents alone
        problem(path, fmt::format("dirent type {} differs from its inode's, {}",
                                  file_type_name(entry.type), file_type_name(node->type)));
        return;
    }
    check_xattrs(path, *node);
    switch (node->type) {
        case FileType::directory:
            if (seen_dir_[record]) {
                problem(path, "directory reached twice (a cycle or a linked directory)");
            } else {
                seen_dir_[record] = true;
                dirs_.push_back(Dir{std::move(path), *node});
            }
            break;
        case FileType::regular:
            ++report_.files_checked;
            if (node->rec.size != 0) check_file(std::move(path), *node);
            break;
        case FileType::symlink:
            if (auto t = m_.symlink_target(*node, Ctx{"verify", path}); !t)
                problem(path, t.error().message());
            break;
        default:
            break;
    }
}

// A regular file with content: its locator sound (v2: the same as every other file sharing its
// content), and its path remembered when that content is bad.
void Verifier::check_file(std::string path, const InodeView& node) {
    const uint64_t c = v2_ ? node.aux : node.rec.ref - 1;
    if (auto ok = m_.content(node, Ctx{"verify", path}); !ok) {
        problem(path, ok.error().message());
    } else if (v2_ && (located_[c].offset != node.rec.ref || located_[c].size != node.rec.size)) {
        problem(path,
                fmt::format("content {} is at offset {} size {} in another file; here at {} "
                            "size {}",
                            c, located_[c].offset, located_[c].size, node.rec.ref, node.rec.size));
    } else if (!bad_content_[c].empty()) {
        bad_paths_[c].push_back(std::move(path));
    }
}

// Every xattr record of an inode: name and value inside `bytes`, lengths in range.
void Verifier::check_xattrs(const std::string& path, const InodeView& node) {
    if (node.rec.xattr_count == 0) return;
    const Ctx at{"verify", path};
    auto names = m_.xattr_names(node, at);
    if (!names) {
        problem(path, names.error().message());
        return;
    }
    std::string value;
    for (const std::string& name : *names) {
        if (auto found = m_.find_xattr(node, name, value, at); !found) {
            problem(path, found.error().message());
            return;
        }
    }
}

// A v2 directory's buckets against its entries (lookups trust them): each bucket starts where
// the first entry whose hash's top bits reach it is.
void Verifier::check_buckets(const std::string& path, const InodeView& dir,
                             const std::vector<DirEntry>& entries) {
    const unsigned bits = bucket_bits(dir.rec.size);
    if (bits == 0) return;
    const uint64_t count = uint64_t{1} << bits;
    auto starts =
        m_.meta(m_.buckets_rel_ + uint64_t{dir.aux} * 4, (count + 1) * 4, Ctx{"verify", path});
    if (!starts) {
        problem(path, starts.error().message());
        return;
    }
    uint64_t at = 0;
    for (uint64_t k = 0; k <= count; ++k) {
        while (at < entries.size() && (m_.hash_of(entries[at].name) >> (32 - bits)) < k) ++at;
        const uint64_t stored = load<uint32_t>(*starts + k * 4);
        if (stored != at) {
            problem(path, fmt::format("directory bucket {} starts at entry {}, should at {} (a "
                                      "lookup may miss entries)",
                                      k, stored, at));
            return;
        }
    }
}

void Verifier::report_bad_contents() {
    for (uint64_t c = 0; c < m_.content_count_; ++c) {
        if (bad_content_[c].empty()) continue;
        if (bad_paths_[c].empty()) problem(fmt::format("content {}", c), bad_content_[c]);
        for (std::string& path : bad_paths_[c]) problem(std::move(path), bad_content_[c]);
    }
}

// --- 6. inode numbers --------------------------------------------------------------------

// Every stored number non-zero; inode_order a permutation of the records, sorted strictly
// ascending by number (so no two numbers are equal). Each kind of fault is reported once, with
// how often it occurs and where first: a hostile pack could otherwise add a problem per inode.
void Verifier::check_numbering() {
    if (!m_.numbered_) return;
    const uint64_t n = m_.inode_count_;
    auto numbers = m_.meta(m_.numbers_rel_, n * 8, ctx_);
    auto order = m_.meta(m_.order_rel_, n * 4, ctx_);
    if (!numbers || !order) {
        problem("inode numbers", (!numbers ? numbers.error() : order.error()).message());
        return;
    }
    struct Fault {
        const char* what;
        const char* unit;  // what `first` counts
        uint64_t count = 0, first = 0;
        void note(uint64_t at) {
            if (count++ == 0) first = at;
        }
    };
    Fault zero{"a stored inode number is 0", "record"},
        range{"an inode order entry names no record", "position"},
        twice{"inode order lists a record twice", "position"},
        unsorted{"inode order is not strictly ascending by number", "position"};
    std::vector<bool> listed(n, false);
    uint64_t previous = 0;  // no number is 0
    for (uint64_t i = 0; i < n; ++i) {
        if (load<uint64_t>(*numbers + i * 8) == 0) zero.note(i);
        const uint64_t index = load<uint32_t>(*order + i * 4);
        if (index >= n) {
            range.note(i);
            continue;
        }
        if (listed[index]) twice.note(i);
        listed[index] = true;
        const auto number = load<uint64_t>(*numbers + index * 8);
        if (i > 0 && number <= previous) unsorted.note(i);
        previous = number;
    }
    for (const Fault* f : {&zero, &range, &twice, &unsorted}) {
        if (f->count == 0) continue;
        problem("inode numbers", fmt::format("{} (first at {} {}, {} in all)", f->what, f->unit,
                                             f->first, f->count));
    }
}

// --- 7. the image digest -----------------------------------------------------------------

// The header (checksum and digest zero), then the metadata region, or with metadata digests
// their table, each block checked against its entry.
void Verifier::check_image_digest() {
    Header zeroed = m_.header_;
    zeroed.header_checksum = 0;
    std::memset(zeroed.image_digest, 0, sizeof zeroed.image_digest);
    sha_.update(std::as_bytes(std::span(&zeroed, 1)));
    if (!m_.meta_digests_.empty()) {
        for (uint64_t b = 0; b < m_.block_sum_count_; ++b) {
            const uint64_t at = b * kMetaBlockSize;
            const uint64_t n = std::min<uint64_t>(kMetaBlockSize, m_.meta_length_ - at);
            if (auto mismatch = check_meta_block(m_.meta_digests_, b, std::span(m_.meta_ + at, n)))
                problem(fmt::format("metadata block {} (offset {})", b, m_.meta_offset_ + at),
                        fmt::format("SHA-256 mismatch: expected {}, found {}", mismatch->expected,
                                    mismatch->found));
            meter_.add(n);
        }
        sha_.update(m_.meta_digests_);
    } else {
        for (uint64_t at = 0; at < m_.meta_length_; at += kChunk) {
            const uint64_t n = std::min(kChunk, m_.meta_length_ - at);
            sha_.update(std::span(m_.meta_ + at, n));
            meter_.add(n);
        }
    }
    const Sha256Digest digest = sha_.finish();
    if (std::memcmp(digest.data(), m_.header_.image_digest, digest.size()) != 0)
        problem(
            "image digest",
            fmt::format("mismatch: expected {}, found {}",
                        to_hex(std::span<const uint8_t>(m_.header_.image_digest)), to_hex(digest)));
}

// --- the entry point ---------------------------------------------------------------------

VerifyReport PackReader::verify(const std::function<void(uint64_t, uint64_t)>& progress) const {
    return Verifier(*this, progress).run();
}

}  // namespace packfs::pack
