// The Verifier's phases over the tree (verifier.hpp): 5, every directory, entry, file and
// xattr record reachable from the root against what it describes, and 6, the inode numbers.
// The phases over the image itself (metadata, contents, data region, digest) are verifier.cpp.
#include "pack/reader/verifier.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>

#include "pack/format/codec.hpp"
#include "packfs/path.hpp"

namespace packfs::pack {

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
    } else if (v2_ && in_base(node.rec.ref, node.rec.size)) {
        const uint32_t pack = locator_base(node.rec.ref);
        const auto found = base_items_.find({pack, node.aux});  // gathered from every inode
        if (found == base_items_.end()) {
            problem(path, fmt::format("content {} of base {} was not gathered", node.aux, pack));
            return;
        }
        const BaseItem& item = found->second;
        if (item.offset != (node.rec.ref & kBaseOffsetMask) || item.size != node.rec.size)
            problem(path, fmt::format("content {} of base {} is at offset {} size {} in another "
                                      "file; here at {} size {}",
                                      node.aux, pack, item.offset, item.size,
                                      node.rec.ref & kBaseOffsetMask, node.rec.size));
        else if (!item.bad.empty())
            problem(path, fmt::format("content {} of base {}: {}", node.aux, pack, item.bad));
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

}  // namespace packfs::pack
