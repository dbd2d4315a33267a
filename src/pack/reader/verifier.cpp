// The Verifier's phases over the image (verifier.hpp; those over the tree are verifier_tree.cpp):
// each reads the pack through the reader's raw view of the metadata (a record in a failed block
// is still worth checking against what it describes) and its checked accessors, and adds what
// it finds to the report.
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
    check_base_contents();
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
        if ((n.mode & S_IFMT) != S_IFREG || n.size == 0 || n.aux >= m_.content_count_ ||
            in_base(n.ref, n.size))
            continue;
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
    if (v2_ && m_.extents_) gather_base_contents();
    for (uint64_t i = 0; i < m_.content_count_; ++i) {
        const Content c =
            v2_ ? located_[i] : load<Content>(m_.meta_ + m_.contents_rel_ + i * sizeof(Content));
        Item item{i, c.offset, c.size, c.size <= m_.inline_max_, {}};
        std::memcpy(item.sha.data(), c.sha256, item.sha.size());
        if (v2_ && m_.extent_count_ != 0 && (c.offset & kExtentLocator) != 0 && !item.is_inline) {
            item.extents = true;
            item.offset = c.offset & ~kExtentLocator;
            content_bytes_ += c.size;
            items_.push_back(item);
            continue;
        }
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

bool Verifier::in_base(uint64_t ref, uint64_t size) const noexcept {
    return m_.extents_ && (ref & kExtentLocator) == 0 && (ref & kBaseLocator) != 0 &&
           size > m_.inline_max_;
}

void Verifier::gather_base_contents() {
    for (uint64_t i = 0; i < m_.inode_count_; ++i) {
        const auto n = load<InodeV2>(m_.meta_ + m_.inode_rel(i));
        if ((n.mode & S_IFMT) != S_IFREG || !in_base(n.ref, n.size)) continue;
        auto [it, added] = base_items_.try_emplace({locator_base(n.ref), n.aux},
                                                   BaseItem{n.ref & kBaseOffsetMask, n.size, {}});
        if (added) content_bytes_ += n.size;
    }
}

// --- 3b. contents whole in a base ----------------------------------------------------------

void Verifier::check_base_contents() {
    for (auto& [key, item] : base_items_) {
        const auto [pack, index] = key;
        const PackReader* base = r_.base(pack);
        if (base == nullptr) {
            item.bad = fmt::format("its base {} is not open", pack);
            continue;
        }
        auto want = base->metadata().content_digest(index, ctx_);
        if (!want) {
            item.bad = want.error().message();
            continue;
        }
        const ContentRef ref{.where = ContentRef::Where::base,
                             .size = item.size,
                             .offset = item.offset,
                             .inline_data = nullptr,
                             .extent_count = 0,
                             .pack = pack};
        for (uint64_t done = 0; done < item.size;) {
            chunk_.resize(std::min<uint64_t>(kChunk, item.size - done));
            auto got = d_.read(ref, done, chunk_, ctx_);
            if (!got || *got != chunk_.size()) {
                item.bad = got ? std::string("ends early") : got.error().message();
                break;
            }
            sha_.update(chunk_);
            done += chunk_.size();
            meter_.add(chunk_.size());
        }
        const Sha256Digest got = sha_.finish();
        if (item.bad.empty() && got != *want)
            item.bad = fmt::format("SHA-256 mismatch: expected {}, found {}", to_hex(*want),
                                   to_hex(got));
    }
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
        if (a.extents != b.extents) return b.extents;  // those made of extents last
        return a.is_inline != b.is_inline ? a.is_inline : a.offset < b.offset;
    });
    block_state_.assign(d_.block_count_, 0);
    for (const Item& item : items_) check_content(item);
}

void Verifier::check_extents(const Item& item) {
    auto first = m_.extent(item.offset, ctx_);
    if (!first) {
        bad_content_[item.index] = "content " + first.error().message();
        return;
    }
    const ContentRef ref{.where = ContentRef::Where::extents,
                         .size = item.size,
                         .offset = item.offset,
                         .inline_data = nullptr,
                         .extent_count = first->count};
    if (first->count == 0 || first->count > m_.extent_count_ - item.offset) {
        bad_content_[item.index] =
            fmt::format("content's extent run at {} has a bad count {}", item.offset, first->count);
        return;
    }
    Sha256 extent_sha;
    uint64_t expected_at = 0;  // the run covers the content from 0, with no gap or overlap
    for (uint64_t i = 0; i < first->count; ++i) {
        auto e = m_.extent(item.offset + i, ctx_);
        if (!e) {
            (void)sha_.finish();
            bad_content_[item.index] = "content " + e.error().message();
            return;
        }
        if (e->at != expected_at || e->length > item.size - e->at) {
            (void)sha_.finish();
            bad_content_[item.index] =
                fmt::format("content's extent {} starts at {} of {} bytes where {} was expected",
                            item.offset + i, e->at, item.size, expected_at);
            return;
        }
        expected_at += e->length;
        for (uint64_t done = 0; done < e->length;) {
            chunk_.resize(std::min<uint64_t>(kChunk, e->length - done));
            auto got = d_.read(ref, e->at + done, chunk_, ctx_);
            if (!got || *got != chunk_.size()) {
                (void)sha_.finish();
                (void)extent_sha.finish();
                bad_content_[item.index] =
                    "content " + (got ? std::string("extent run ends early") : got.error().message());
                return;
            }
            sha_.update(chunk_);
            extent_sha.update(chunk_);
            done += chunk_.size();
            meter_.add(chunk_.size());
        }
        if (e->pack == 0) extent_ranges_.emplace_back(e->offset, e->length);
        if ((i == 0) != (e->count != 0))
            problem(fmt::format("extent {}", item.offset + i),
                    fmt::format("count {} (the first of a run has its count, the others 0)",
                                e->count));
        Sha256Digest want;
        std::memcpy(want.data(), e->sha256, 32);
        const Sha256Digest got = extent_sha.finish();
        // A content's only extent may be unnamed (all zero): the content's digest names it.
        if (first->count == 1 && want == Sha256Digest{}) continue;
        if (got != want)
            problem(fmt::format("extent {}", item.offset + i),
                    fmt::format("SHA-256 mismatch: expected {}, found {}", to_hex(want),
                                to_hex(got)));
    }
    const Sha256Digest got = sha_.finish();
    if (expected_at != item.size)
        bad_content_[item.index] = fmt::format("content's extents hold {} of its {} bytes",
                                               expected_at, item.size);
    else if (got != item.sha)
        bad_content_[item.index] = fmt::format("content SHA-256 mismatch: expected {}, found {}",
                                               to_hex(item.sha), to_hex(got));
}

void Verifier::check_content(const Item& item) {
    if (item.extents) return check_extents(item);
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
    // What contents hold of the stream: their ranges, and their extents' in this pack.
    std::vector<std::pair<uint64_t, uint64_t>> held = std::move(extent_ranges_);
    for (const Item& item : items_)
        if (!item.is_inline && !item.extents) held.emplace_back(item.offset, item.size);
    std::sort(held.begin(), held.end());
    uint64_t covered = 0;
    for (const auto& [offset, size] : held) {
        if (offset > covered) check_stream_zero(covered, offset - covered);
        covered = std::max(covered, offset + size);
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
