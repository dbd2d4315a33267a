// A complete read-only backend over an "entries + offsets" index, to show what a new backend
// writes: the node calls of a read-only tree (lookup, getattr, list, readlink, open, the xattr
// reads, lookup_ino, inode_numbering, statfs) plus snapshot() and read_only(). Everything else
// comes from the Backend contract: every path call (stat, lstat, readdir, open, readlink,
// getxattr, ... by path) is derived by the library's generic walker, which follows symlinks,
// resolves "..", checks trailing slashes and answers in Linux's errno order, and every mutation
// answers EROFS. The index is one vector of entries (entry 0 is the root; node id and st_ino are
// the entry number + 1), each a slice of one byte blob (file contents, symlink targets), with
// extra names for hard links; one sorted (directory, name) table makes lookup O(log n).
// index_builder.hpp makes an Index from any Backend; tests/examples runs the conformance suite.
#pragma once

#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "packfs/backend.hpp"
#include "packfs/path.hpp"

namespace packfs::example {

struct IndexEntry {
    uint32_t parent = 0;              // the entry number of its directory (the root's is 0, itself)
    std::string name;                 // "" for the root
    Stat stat;                        // st_ino is set to the node id by the backend
    uint64_t offset = 0, length = 0;  // a file's contents or a symlink's target, in the blob
    std::vector<std::pair<std::string, std::string>> xattrs;
};

struct HardLink {  // another name of an entry (hard links share the entry, so one st_ino)
    uint32_t parent = 0;
    std::string name;
    uint32_t entry = 0;
};

struct Index {
    std::vector<IndexEntry> entries;  // entries[0] is the root directory
    std::vector<HardLink> links;
    std::string blob;
};

class IndexBackend final : public Backend, public std::enable_shared_from_this<IndexBackend> {
public:
    explicit IndexBackend(Index index) : ix_(std::move(index)) {
        for (uint32_t i = 0; i < ix_.entries.size(); ++i) {
            ix_.entries[i].stat.ino = node_of(i).id;
            if (i != 0) children_.push_back({ix_.entries[i].parent, ix_.entries[i].name, i});
        }
        for (const HardLink& l : ix_.links) children_.push_back({l.parent, l.name, l.entry});
        std::ranges::sort(children_, {}, &Child::key);
    }

    Result<Entry> lookup(Node dir, std::string_view name) override {
        if (name.empty() || name == "." || name == ".." ||
            name.find_first_of(std::string_view("/\0", 2)) != name.npos)
            return fail(EINVAL, "lookup", name);
        if (name.size() > kMaxNameLength) return fail(ENAMETOOLONG, "lookup", name);
        if (auto ok = check_dir(dir, "lookup"); !ok) return std::unexpected(ok.error());
        const std::pair key(uint32_t(dir.id - 1), name);
        auto it = std::ranges::lower_bound(children_, key, {}, &Child::key);
        if (it == children_.end() || it->key() != key) return fail(ENOENT, "lookup", name);
        return Entry{node_of(it->entry), ix_.entries[it->entry].stat};
    }
    Result<Stat> getattr(Node node) override {
        if (const IndexEntry* e = at(node)) return e->stat;
        return fail(ESTALE, "getattr");
    }
    Result<std::vector<DirEntry>> list(Node dir) override {
        if (auto ok = check_dir(dir, "readdir"); !ok) return std::unexpected(ok.error());
        std::vector<DirEntry> out;
        for (const Child& c :
             std::ranges::equal_range(children_, uint32_t(dir.id - 1), {}, &Child::dir))
            out.push_back(
                {std::string(c.name), node_of(c.entry).id, ix_.entries[c.entry].stat.type});
        return out;
    }
    Result<std::string> readlink(Node node) override {
        const IndexEntry* e = at(node);
        if (!e) return fail(ESTALE, "readlink");
        if (e->stat.type != FileType::symlink) return fail(EINVAL, "readlink");
        return ix_.blob.substr(e->offset, e->length);
    }
    Result<FileHandle> open(Node node, int flags) override {
        const IndexEntry* e = at(node);
        if (!e) return fail(ESTALE, "open");
        // The checks of check_open_target (src/core/checks.hpp, private to the library), in order.
        const FileType type = e->stat.type;
        const int access = flags & O_ACCMODE;
        if (access == O_ACCMODE) return fail(EINVAL, "open");
        if ((flags & O_DIRECTORY) && type != FileType::directory) return fail(ENOTDIR, "open");
        if (type == FileType::directory && access != O_RDONLY) return fail(EISDIR, "open");
        if (type == FileType::symlink) return fail(ELOOP, "open");
        if (type != FileType::regular && type != FileType::directory) return fail(ENOTSUP, "open");
        if (access != O_RDONLY || (flags & O_TRUNC)) return fail(EROFS, "open");
        return std::make_unique<IndexFile>(shared_from_this(), *e);
    }
    Result<std::string> getxattr(Node node, std::string_view name) override {
        const IndexEntry* e = at(node);
        if (!e) return fail(ESTALE, "getxattr");
        for (const auto& [key, value] : e->xattrs)
            if (key == name) return value;
        return fail(ENODATA, "getxattr");
    }
    Result<std::vector<std::string>> listxattr(Node node) override {
        const IndexEntry* e = at(node);
        if (!e) return fail(ESTALE, "listxattr");
        std::vector<std::string> out;
        for (const auto& [key, value] : e->xattrs) out.push_back(key);
        return out;
    }
    Result<Entry> lookup_ino(uint64_t ino) override {
        if (const IndexEntry* e = at(Node{ino})) return Entry{Node{ino}, e->stat};
        return fail(ESTALE, "lookup by inode number");
    }
    InodeNumbering inode_numbering() const override { return {true, ix_.entries.size() + 1}; }
    Result<StatFs> statfs(Node) override {
        return StatFs{.blocks = (ix_.blob.size() + 4095) / 4096, .files = ix_.entries.size()};
    }
    Result<std::shared_ptr<Backend>> snapshot() override {
        return std::shared_ptr<Backend>(shared_from_this());  // immutable: frozen already
    }
    bool read_only() const noexcept override { return true; }

private:
    struct Child {  // one name in one directory
        uint32_t dir;
        std::string_view name;  // into ix_, which never changes
        uint32_t entry;
        std::pair<uint32_t, std::string_view> key() const { return {dir, name}; }
    };
    // An open file (or directory): its slice of the blob, kept alive by the backend it holds.
    struct IndexFile final : File {
        IndexFile(std::shared_ptr<const IndexBackend> fs, const IndexEntry& e) : fs_(fs), e_(e) {}
        Result<std::size_t> pread(std::span<std::byte> buf, uint64_t offset) override {
            if (e_.stat.type == FileType::directory) return fail(EISDIR, "read");
            if (offset >= e_.length) return 0;
            const std::size_t n = std::min<uint64_t>(buf.size(), e_.length - offset);
            std::memcpy(buf.data(), fs_->ix_.blob.data() + e_.offset + offset, n);
            return n;
        }
        Result<std::size_t> pwrite(std::span<const std::byte>, uint64_t) override {
            return fail(EBADF, "write");
        }
        Result<void> truncate(uint64_t) override { return fail(EINVAL, "ftruncate"); }
        Result<void> fsync(bool) override { return {}; }
        Result<Stat> fstat() override { return e_.stat; }
        std::shared_ptr<const IndexBackend> fs_;
        const IndexEntry& e_;
    };

    static Node node_of(uint32_t entry) { return Node{uint64_t{entry} + 1}; }
    // The entry a node names; nullptr for an id no entry has (ESTALE).
    const IndexEntry* at(Node node) const {
        return node.id != 0 && node.id <= ix_.entries.size() ? &ix_.entries[node.id - 1] : nullptr;
    }
    Result<void> check_dir(Node node, std::string_view op) const {
        const IndexEntry* e = at(node);
        if (!e) return fail(ESTALE, op);
        if (e->stat.type != FileType::directory) return fail(ENOTDIR, op);
        return {};
    }

    Index ix_;
    std::vector<Child> children_;  // sorted by (dir, name): a directory's names are adjacent
};

inline std::shared_ptr<IndexBackend> make_index_backend(Index index) {
    return std::make_shared<IndexBackend>(std::move(index));
}

}  // namespace packfs::example
