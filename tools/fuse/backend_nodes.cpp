// Any Backend served by node id. The Backend speaks paths; the kernel speaks nodes. Between
// them sits a table of the nodes the kernel holds references to, each with the links (parent
// node, name) it is known by, so a node's path is its first link's parent's path plus the
// name. A node stays in the table while the kernel holds it, while another node names it as
// parent, or while a file of it is open (an unlinked file answers fstat through its handle).
//
// Node id = the Backend's st_ino, with the root's st_ino and 1 swapped (FUSE's root is 1): a
// bijection, so ids are as stable as the Backend's inode numbers (a volume's survive
// compaction and remounts). A host directory reuses the inode number of a removed file at
// once, while the kernel may still hold the removed file's node (an O_PATH descriptor, a
// cwd, or just not forgotten yet): the kernel would take the new file for the old one (its
// nlink 0, its attributes). So a node whose file died through the mount keeps its id, and
// the next file with that inode number gets a fresh id (kFreshIds on) until it goes; ids
// are never reused while the mount lives.
//
// Locking: `namespace_` is held shared by every call that turns nodes into paths and uses
// them, and exclusively by rename, the one call that moves other nodes' paths; `table_`
// guards the table itself for short sections only.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>

#include "node_fs.hpp"
#include "packfs/path.hpp"

namespace packfs::fuse {

namespace {

// A chain of parents deeper than this is a damaged table, not a tree (a path of 4095 bytes
// holds at most 2048 components).
constexpr std::size_t kMaxDepth = 4096;

// Node ids for files whose inode number still names a dead node (see above): far above any
// inode number a filesystem hands out in practice.
constexpr uint64_t kFreshIds = 0xFFFF'FF00'0000'0000ull;

struct Link {
    uint64_t parent;
    std::string name;
    bool operator==(const Link&) const = default;
};

struct Node {
    uint64_t lookups = 0;       // references the kernel holds
    uint64_t children = 0;      // links of other nodes naming this one as their parent
    std::vector<Link> links;    // links[0] gives the path
    std::vector<OpenFile*> open;  // open files, for an unlinked file's attributes
    // Set when its last name went through the mount (unlink, rmdir, rename over it): the
    // file is gone, though the kernel may still hold the node; what it looked like then
    // (nlink 0).
    std::optional<Stat> died_as;
};

class BackendFile final : public OpenFile {
public:
    explicit BackendFile(FileHandle file) : file_(std::move(file)) {}
    Result<std::span<const std::byte>> read(uint64_t offset, std::size_t size,
                                            std::string& scratch) override {
        scratch.resize(size);
        auto n = file_->pread(std::as_writable_bytes(std::span(scratch.data(), size)), offset);
        if (!n) return std::unexpected(n.error());
        return std::as_bytes(std::span(scratch.data(), *n));
    }
    Result<std::size_t> write(std::span<const std::byte> data, uint64_t offset) override {
        return file_->pwrite(data, offset);
    }
    Result<void> truncate(uint64_t size) override { return file_->truncate(size); }
    Result<void> fsync(bool data_only) override { return file_->fsync(data_only); }
    Result<Stat> fstat() override { return file_->fstat(); }

private:
    FileHandle file_;
};

class BackendNodes final : public NodeFs {
public:
    BackendNodes(std::shared_ptr<Backend> backend, BackendNodesOptions options, uint64_t root_ino)
        : backend_(std::move(backend)), options_(std::move(options)), root_ino_(root_ino) {
        nodes_[kRootNode].lookups = 1;  // the root is never forgotten
    }

    bool read_only() const noexcept override { return backend_->read_only(); }
    CachePolicy cache_policy() const noexcept override {
        // The only writer: whatever the kernel was told stays true until the kernel itself
        // changes it (and it updates or drops what it cached when it does).
        if (options_.exclusive)
            return {.entry_seconds = 3600,
                    .attr_seconds = 3600,
                    .cache_negative = true,
                    .keep_page_cache = true};
        return {};
    }
    bool has_xattrs() const noexcept override { return true; }

    Result<Entry> lookup(uint64_t parent, std::string_view name) override {
        std::shared_lock ns(namespace_);
        auto path = child_path(parent, name);
        if (!path) return std::unexpected(path.error());
        return entry_at(*path);
    }
    void remember(uint64_t parent, std::string_view name, const Entry& entry) override {
        std::lock_guard lock(table_);
        Node& node = nodes_[entry.node];
        ++node.lookups;
        add_link(node, entry.stat.type, Link{parent, std::string(name)});
    }
    void forget(uint64_t id, uint64_t count) override {
        std::lock_guard lock(table_);
        auto it = nodes_.find(id);
        if (it == nodes_.end()) return;
        it->second.lookups -= std::min(count, it->second.lookups);
        drop_if_unused(id);
    }

    Result<Stat> getattr(uint64_t id, OpenFile* file) override {
        if (file) return file->fstat();
        std::shared_lock ns(namespace_);
        auto path = path_of(id);
        if (!path) {
            // Unlinked, but open somewhere: the handle still knows it.
            if (auto st = fstat_open(id)) return *st;
            // Gone, but still held by the kernel: what it was when its last name went.
            if (auto last = last_of(id)) return *last;
            return std::unexpected(path.error());
        }
        return backend_->lstat(*path);
    }
    Result<Stat> setattr(uint64_t id, const AttrChange& change, OpenFile* file) override {
        std::shared_lock ns(namespace_);
        auto path = path_of(id);
        if (!path && !(file && !change.mode && !change.uid && !change.gid &&
                       change.atime.kind == TimeUpdate::Kind::omit &&
                       change.mtime.kind == TimeUpdate::Kind::omit))
            return std::unexpected(path.error());
        if (change.mode) {
            if (auto r = backend_->chmod(*path, change.to.mode & 07777); !r)
                return std::unexpected(r.error());
        }
        if (change.uid || change.gid) {
            uint32_t uid = change.to.uid, gid = change.to.gid;
            if (!change.uid || !change.gid) {
                auto now = backend_->lstat(*path);
                if (!now) return std::unexpected(now.error());
                if (!change.uid) uid = now->uid;
                if (!change.gid) gid = now->gid;
            }
            if (auto r = backend_->chown(*path, uid, gid, Follow::no); !r)
                return std::unexpected(r.error());
        }
        if (change.size) {
            auto r = file ? file->truncate(change.to.size) : backend_->truncate(*path, change.to.size);
            if (!r) return std::unexpected(r.error());
        }
        if (change.atime.kind != TimeUpdate::Kind::omit ||
            change.mtime.kind != TimeUpdate::Kind::omit) {
            if (auto r = backend_->utimens(*path, change.atime, change.mtime, Follow::no); !r)
                return std::unexpected(r.error());
        }
        if (!path) return file->fstat();
        return backend_->lstat(*path);
    }
    Result<std::string> readlink(uint64_t id) override {
        std::shared_lock ns(namespace_);
        auto path = path_of(id);
        if (!path) return std::unexpected(path.error());
        return backend_->readlink(*path);
    }
    Result<Listing> list(uint64_t id) override {
        std::shared_lock ns(namespace_);
        auto path = path_of(id);
        if (!path) return std::unexpected(path.error());
        auto entries = backend_->readdir(*path);
        if (!entries) return std::unexpected(entries.error());
        std::vector<ListedEntry> out;
        out.reserve(entries->size());
        std::lock_guard lock(table_);  // once, not per entry: a listing may hold a million
        for (auto& e : *entries) {
            ListedEntry listed{std::move(e.name), node_of_locked(e.ino), {}};
            listed.stat.ino = e.ino;
            listed.stat.type = e.type;
            out.push_back(std::move(listed));
        }
        return std::make_shared<const std::vector<ListedEntry>>(std::move(out));
    }
    Result<Entry> entry(uint64_t parent, const ListedEntry& listed) override {
        return lookup(parent, listed.name);
    }

    Result<std::unique_ptr<OpenFile>> open(uint64_t id, int flags) override {
        std::shared_lock ns(namespace_);
        auto path = path_of(id);
        if (!path) return std::unexpected(path.error());
        auto file = backend_->open(*path, (flags & (O_ACCMODE | O_APPEND | O_TRUNC)) | O_NOFOLLOW);
        if (!file) return std::unexpected(file.error());
        auto out = std::make_unique<BackendFile>(std::move(*file));
        track_open(id, out.get());
        return out;
    }
    Result<std::pair<Entry, std::unique_ptr<OpenFile>>> create(uint64_t parent,
                                                               std::string_view name, int flags,
                                                               uint32_t mode) override {
        std::shared_lock ns(namespace_);
        auto path = child_path(parent, name);
        if (!path) return std::unexpected(path.error());
        const int pass = (flags & (O_ACCMODE | O_APPEND | O_TRUNC | O_EXCL)) | O_CREAT | O_NOFOLLOW;
        auto file = backend_->open(*path, pass, mode & 07777);
        if (!file) return std::unexpected(file.error());
        auto st = (*file)->fstat();
        if (!st) return std::unexpected(st.error());
        Entry entry{node_of(st->ino), *st};
        auto out = std::make_unique<BackendFile>(std::move(*file));
        track_open(entry.node, out.get());
        learn(parent, name, entry);
        return std::pair{entry, std::unique_ptr<OpenFile>(std::move(out))};
    }
    Result<std::unique_ptr<OpenFile>> opendir(uint64_t id) override {
        std::shared_lock ns(namespace_);
        auto path = path_of(id);
        if (!path) return std::unexpected(path.error());
        auto dir = backend_->open(*path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        if (!dir) return std::unexpected(dir.error());
        auto out = std::make_unique<BackendFile>(std::move(*dir));
        track_open(id, out.get());
        return std::unique_ptr<OpenFile>(std::move(out));
    }
    void release(uint64_t id, OpenFile& file) override {
        std::lock_guard lock(table_);
        auto it = nodes_.find(id);
        if (it == nodes_.end()) return;
        std::erase(it->second.open, &file);
        drop_if_unused(id);
    }

    Result<Entry> mkdir(uint64_t parent, std::string_view name, uint32_t mode) override {
        return make(parent, name, [&](const std::string& p) { return backend_->mkdir(p, mode); });
    }
    Result<Entry> mknod(uint64_t parent, std::string_view name, FileType type, uint32_t mode,
                        uint64_t rdev) override {
        return make(parent, name,
                    [&](const std::string& p) { return backend_->mknod(p, type, mode, rdev); });
    }
    Result<Entry> symlink(uint64_t parent, std::string_view name,
                          std::string_view target) override {
        return make(parent, name,
                    [&](const std::string& p) { return backend_->symlink(target, p); });
    }
    Result<Entry> link(uint64_t id, uint64_t new_parent, std::string_view new_name) override {
        std::shared_lock ns(namespace_);
        auto from = path_of(id);
        if (!from) return std::unexpected(from.error());
        auto to = child_path(new_parent, new_name);
        if (!to) return std::unexpected(to.error());
        if (auto r = backend_->link(*from, *to); !r) return std::unexpected(r.error());
        return entry_at(*to);
    }
    Result<void> unlink(uint64_t parent, std::string_view name) override {
        return remove(parent, name, [&](const std::string& p) { return backend_->unlink(p); });
    }
    Result<void> rmdir(uint64_t parent, std::string_view name) override {
        return remove(parent, name, [&](const std::string& p) { return backend_->rmdir(p); });
    }
    Result<void> rename(uint64_t parent, std::string_view name, uint64_t new_parent,
                        std::string_view new_name, RenameFlags flags) override {
        std::unique_lock ns(namespace_);
        auto from = child_path(parent, name);
        if (!from) return std::unexpected(from.error());
        auto to = child_path(new_parent, new_name);
        if (!to) return std::unexpected(to.error());
        auto moved = backend_->lstat(*from);
        auto replaced = backend_->lstat(*to);
        if (auto r = backend_->rename(*from, *to, flags); !r) return std::unexpected(r.error());
        std::lock_guard lock(table_);
        const Link old_link{parent, std::string(name)}, new_link{new_parent, std::string(new_name)};
        // Unlink the target's name first: when both names are links of one inode, rename is a
        // no-op and both links must survive. Both ids before either changes: marking the
        // replaced file dead changes what its inode number maps to.
        const bool same = moved && replaced && moved->ino == replaced->ino;
        const uint64_t target = replaced && !same ? node_of_locked(replaced->ino) : 0;
        const uint64_t mover = moved && !same ? node_of_locked(moved->ino) : 0;
        if (target) {
            const bool exchange = flags == RenameFlags::exchange;
            relink(target, new_link, exchange ? &old_link : nullptr);
            if (!exchange) died(target, *replaced);
        }
        if (mover) relink(mover, old_link, &new_link);
        return {};
    }

    Result<std::string> getxattr(uint64_t id, std::string_view name) override {
        return at_path<std::string>(id, [&](const std::string& p) {
            return backend_->getxattr(p, name);
        });
    }
    Result<std::vector<std::string>> listxattr(uint64_t id) override {
        return at_path<std::vector<std::string>>(
            id, [&](const std::string& p) { return backend_->listxattr(p); });
    }
    Result<void> setxattr(uint64_t id, std::string_view name, std::string_view value,
                          XattrMode mode) override {
        return at_path<void>(id, [&](const std::string& p) {
            return backend_->setxattr(p, name, value, mode);
        });
    }
    Result<void> removexattr(uint64_t id, std::string_view name) override {
        return at_path<void>(id,
                             [&](const std::string& p) { return backend_->removexattr(p, name); });
    }

    Result<StatFs> statfs() override { return backend_->statfs("/"); }
    Result<void> sync() override { return options_.sync ? options_.sync() : Result<void>{}; }
    Result<CompactReply> compact() override {
        if (!options_.compact) return fail(ENOTTY, "compact");
        return options_.compact();
    }

private:
    uint64_t node_of(uint64_t ino) {
        std::lock_guard lock(table_);
        return node_of_locked(ino);
    }
    // table_ held.
    uint64_t node_of_locked(uint64_t ino) {
        if (ino == root_ino_) return kRootNode;
        auto remapped = fresh_.find(ino);
        const uint64_t id = remapped != fresh_.end() ? remapped->second
                            : ino == kRootNode       ? root_ino_
                                                     : ino;
        auto it = nodes_.find(id);
        if (it == nodes_.end() || !it->second.died_as) return id;
        // The id is a dead file's the kernel still holds; this inode number is another file's.
        uint64_t fresh = next_fresh_++;
        while (nodes_.contains(fresh)) fresh = next_fresh_++;
        fresh_[ino] = fresh;
        return fresh;
    }
    std::optional<Stat> last_of(uint64_t id) const {
        std::lock_guard lock(table_);
        auto it = nodes_.find(id);
        return it == nodes_.end() ? std::nullopt : it->second.died_as;
    }
    // table_ held. `was` (lstat before the removal) has lost one name: when that was its last,
    // the file is gone and its node (if the kernel holds it) is dead.
    void died(uint64_t id, const Stat& was) {
        if (was.type != FileType::directory && was.nlink > 1) return;
        auto it = nodes_.find(id);
        if (it == nodes_.end()) return;
        it->second.died_as = was;
        it->second.died_as->nlink = 0;
    }

    Result<std::string> path_of(uint64_t id) const {
        std::lock_guard lock(table_);
        std::vector<const std::string*> names;
        for (uint64_t at = id; at != kRootNode;) {
            auto it = nodes_.find(at);
            if (it == nodes_.end() || it->second.links.empty())
                return fail(ENOENT, "lookup", "(a file no longer linked)");
            if (names.size() == kMaxDepth) return fail(ELOOP, "lookup", "(node table)");
            names.push_back(&it->second.links.front().name);
            at = it->second.links.front().parent;
        }
        if (names.empty()) return std::string("/");
        std::size_t length = 0;
        for (const auto* n : names) length += n->size() + 1;
        std::string out;
        out.reserve(length);
        for (auto it = names.rbegin(); it != names.rend(); ++it) {
            out += '/';
            out += **it;
        }
        return out;
    }
    Result<std::string> child_path(uint64_t parent, std::string_view name) const {
        if (name.size() > kMaxNameLength) return fail(ENAMETOOLONG, "lookup", name);
        auto dir = path_of(parent);
        if (!dir) return dir;
        return path_join(*dir, name);
    }
    Result<Entry> entry_at(const std::string& path) {
        auto st = backend_->lstat(path);
        if (!st) return std::unexpected(st.error());
        return Entry{node_of(st->ino), *st};
    }
    // fstat through any file open on `id`, under the table's lock so the file cannot be
    // released meanwhile; nullopt when none is open.
    std::optional<Result<Stat>> fstat_open(uint64_t id) const {
        std::lock_guard lock(table_);
        auto it = nodes_.find(id);
        if (it == nodes_.end() || it->second.open.empty()) return std::nullopt;
        return it->second.open.front()->fstat();
    }
    void track_open(uint64_t id, OpenFile* file) {
        std::lock_guard lock(table_);
        nodes_[id].open.push_back(file);
    }
    // A node just made under (parent, name) gets that link at once, before the kernel holds
    // it (remember() counts the reference later): the driver may change it in between, as
    // it does to give a new file to the caller who made it (fuse_ops.cpp, owned_by_caller),
    // and that needs its path. Without the link, every mkdir, mknod, symlink and create by
    // anyone but the daemon's own user failed with ENOENT, leaving the entry made behind.
    void learn(uint64_t parent, std::string_view name, const Entry& entry) {
        std::lock_guard lock(table_);
        add_link(nodes_[entry.node], entry.stat.type, Link{parent, std::string(name)});
    }

    template <typename Make>
    Result<Entry> make(uint64_t parent, std::string_view name, Make&& make_it) {
        std::shared_lock ns(namespace_);
        auto path = child_path(parent, name);
        if (!path) return std::unexpected(path.error());
        if (auto r = make_it(*path); !r) return std::unexpected(r.error());
        auto entry = entry_at(*path);
        if (entry) learn(parent, name, *entry);
        return entry;
    }
    template <typename Remove>
    Result<void> remove(uint64_t parent, std::string_view name, Remove&& remove_it) {
        std::shared_lock ns(namespace_);
        auto path = child_path(parent, name);
        if (!path) return std::unexpected(path.error());
        auto victim = backend_->lstat(*path);
        if (auto r = remove_it(*path); !r) return std::unexpected(r.error());
        if (victim) {
            std::lock_guard lock(table_);
            const uint64_t id = node_of_locked(victim->ino);
            died(id, *victim);
            relink(id, Link{parent, std::string(name)}, nullptr);
        }
        return {};
    }
    template <typename T, typename Op>
    Result<T> at_path(uint64_t id, Op&& op) {
        std::shared_lock ns(namespace_);
        auto path = path_of(id);
        if (!path) return std::unexpected(path.error());
        return op(*path);
    }

    // --- the table (table_ held) ---------------------------------------------------------
    // The newest link goes first, and so gives the path: it was just looked up (or made), so it
    // holds even when an older one was renamed or removed behind the daemon's back (a host
    // directory), where the older one would make the file unreachable by any name.
    void add_link(Node& node, FileType type, Link link) {
        if (auto at = std::ranges::find(node.links, link); at != node.links.end()) {
            std::rotate(node.links.begin(), at, at + 1);
            return;
        }
        // A directory has one name: a new one replaces whatever the table had.
        if (type == FileType::directory && !node.links.empty()) {
            unparent(node.links.front().parent);
            node.links.clear();
        }
        nodes_[link.parent].children++;
        node.links.insert(node.links.begin(), std::move(link));
    }
    // `id` is no longer linked as `from`; it is linked as `*to` instead when `to` is given.
    void relink(uint64_t id, const Link& from, const Link* to) {
        auto it = nodes_.find(id);
        if (it == nodes_.end()) return;
        Node& node = it->second;
        auto at = std::ranges::find(node.links, from);
        if (at == node.links.end()) {
            if (!to) return;
            // The kernel never looked this name up (it came from elsewhere): learn it.
            nodes_[to->parent].children++;
            node.links.insert(node.links.begin(), *to);
            return;
        }
        const uint64_t old_parent = at->parent;
        if (to) {
            nodes_[to->parent].children++;
            *at = *to;
        } else {
            node.links.erase(at);
        }
        unparent(old_parent);
        drop_if_unused(id);
    }
    void unparent(uint64_t parent) {
        auto it = nodes_.find(parent);
        if (it == nodes_.end()) return;
        if (it->second.children) --it->second.children;
        drop_if_unused(parent);
    }
    void drop_if_unused(uint64_t id) {
        if (id == kRootNode) return;
        auto it = nodes_.find(id);
        if (it == nodes_.end()) return;
        const Node& node = it->second;
        if (node.lookups || node.children || !node.open.empty()) return;
        std::vector<uint64_t> parents;
        for (const auto& l : node.links) parents.push_back(l.parent);
        nodes_.erase(it);
        if (id >= kFreshIds) std::erase_if(fresh_, [id](const auto& kv) { return kv.second == id; });
        for (uint64_t p : parents) unparent(p);
    }

    std::shared_ptr<Backend> backend_;
    BackendNodesOptions options_;
    uint64_t root_ino_;
    mutable std::shared_mutex namespace_;
    mutable std::mutex table_;
    std::unordered_map<uint64_t, Node> nodes_;
    std::unordered_map<uint64_t, uint64_t> fresh_;  // inode number -> fresh id (see above)
    uint64_t next_fresh_ = kFreshIds;
};

}  // namespace

Result<std::unique_ptr<NodeFs>> backend_nodes(std::shared_ptr<Backend> backend,
                                              BackendNodesOptions options) {
    auto root = backend->lstat("/");
    if (!root) return std::unexpected(root.error());
    return std::make_unique<BackendNodes>(std::move(backend), std::move(options), root->ino);
}

}  // namespace packfs::fuse
