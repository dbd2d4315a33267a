// TEST ONLY. Random operations for model-based tests (DESIGN §14), over a deliberately small
// name space so that collisions happen all the time: creating over an existing name, renames
// over existing entries and into their own subtree, rmdir of non-empty directories, symlink
// loops, hard links, handles kept open across unlinks, snapshots taken at random points.
//
// The generator looks at the reference model (never at the backend) to aim most operations at
// paths that exist, so that they do real work instead of all failing with ENOENT. It is
// deterministic for a seed: the same seed and the same model give the same sequence.
//
// Every backend's test reuses it; GeneratorOptions turns off what a backend cannot do (the
// host backend: no snapshots, no absolute or ".."-climbing symlinks, no special files).
#pragma once

#include <fcntl.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "model/reference_model.hpp"
#include "packfs/path.hpp"
#include "packfs/types.hpp"

namespace packfs::model {

enum class OpKind : uint8_t {
    // reads (may target a retained snapshot)
    stat,
    lstat,
    readdir,
    readlink,
    read_whole,
    getxattr,
    listxattr,
    // handles
    open,
    close,
    pread,
    pwrite,
    ftruncate,
    fstat,
    copy_range,
    // mutations
    truncate,
    mkdir,
    rmdir,
    unlink,
    rename,
    symlink,
    link,
    mknod,
    chmod,
    chown,
    utimens,
    setxattr,
    removexattr,
    // versions
    snapshot,
    drop_snapshot,
};

inline const char* op_kind_name(OpKind k) {
    static constexpr const char* names[] = {
        "stat",      "lstat",      "readdir",     "readlink", "read_whole",   "getxattr",
        "listxattr", "open",       "close",       "pread",    "pwrite",       "ftruncate",
        "fstat",     "copy_range", "truncate",    "mkdir",    "rmdir",        "unlink",
        "rename",    "symlink",    "link",        "mknod",    "chmod",        "chown",
        "utimens",   "setxattr",   "removexattr", "snapshot", "drop_snapshot"};
    return names[static_cast<int>(k)];
}

inline bool op_is_mutation(OpKind k) { return k >= OpKind::truncate && k <= OpKind::removexattr; }

struct Op {
    OpKind kind = OpKind::stat;
    int target = -1;  // -1: the live backend; otherwise the index of a retained snapshot
    std::string path;
    std::string path2;  // rename/link destination, symlink target
    int flags = 0;
    uint32_t mode = 0;
    uint64_t offset = 0;
    uint64_t length = 0;  // pread length, truncate size
    std::string data;     // pwrite data, xattr value
    RenameFlags rename_flags = RenameFlags::none;
    FileType type = FileType::regular;
    uint64_t rdev = 0;
    uint32_t uid = 0, gid = 0;
    Follow follow = Follow::yes;
    TimeUpdate atime, mtime;
    std::string name;  // xattr name
    XattrMode xattr_mode = XattrMode::any;
    int handle = 0;  // the model's handle id
    int handle2 = 0;       // copy_range: the destination handle
    uint64_t offset2 = 0;  // copy_range: the destination offset
    std::string describe() const {
        std::string text = describe_long();
        const std::string long_name(256, 'x');
        for (std::size_t pos; (pos = text.find(long_name)) != std::string::npos;) {
            text.replace(pos, long_name.size(), "<x*256>");
        }
        return text;
    }

private:
    std::string describe_long() const {
        std::string where = target < 0 ? std::string() : fmt::format("[snap {}] ", target);
        auto flag_text = [](int f) {
            std::string s;
            int acc = f & O_ACCMODE;
            s = acc == O_RDONLY ? "RDONLY" : acc == O_WRONLY ? "WRONLY" : "RDWR";
            if (f & O_CREAT) s += "|CREAT";
            if (f & O_EXCL) s += "|EXCL";
            if (f & O_TRUNC) s += "|TRUNC";
            if (f & O_APPEND) s += "|APPEND";
            if (f & O_NOFOLLOW) s += "|NOFOLLOW";
            if (f & O_DIRECTORY) s += "|DIRECTORY";
            return s;
        };
        auto time_text = [](const TimeUpdate& t) {
            if (t.kind == TimeUpdate::Kind::omit) return std::string("omit");
            if (t.kind == TimeUpdate::Kind::now) return std::string("now");
            return fmt::format("{}.{:09}", t.time.sec, t.time.nsec);
        };
        const char* k = op_kind_name(kind);
        switch (kind) {
            case OpKind::open:
                return fmt::format("{}open {:?} {} {:o}", where, path, flag_text(flags), mode);
            case OpKind::close:
            case OpKind::fstat: return fmt::format("{} h{}", k, handle);
            case OpKind::pread:
                return fmt::format("pread h{} off={} len={}", handle, offset, length);
            case OpKind::copy_range:
                return fmt::format("copy_range h{} off={} -> h{} off={} len={} ({})", handle,
                                   offset, handle2, offset2, length, data);
            case OpKind::pwrite:
                return fmt::format("pwrite h{} off={} len={} first=0x{:02x}", handle, offset,
                                   data.size(),
                                   data.empty() ? 0 : static_cast<unsigned char>(data[0]));
            case OpKind::ftruncate: return fmt::format("ftruncate h{} {}", handle, length);
            case OpKind::truncate: return fmt::format("{}truncate {:?} {}", where, path, length);
            case OpKind::mkdir:
                return fmt::format("{}mkdir {:?} {:o}", where, path, mode);
            case OpKind::rename:
                return fmt::format("{}rename {:?} {:?} {}", where, path, path2,
                                   rename_flags == RenameFlags::none        ? "none"
                                   : rename_flags == RenameFlags::noreplace ? "noreplace"
                                                                            : "exchange");
            case OpKind::symlink:
                return fmt::format("{}symlink target={:?} at {:?}", where, path2, path);
            case OpKind::link: return fmt::format("{}link {:?} -> new {:?}", where, path, path2);
            case OpKind::mknod:
                return fmt::format("{}mknod {:?} {} {:o} rdev={}", where, path,
                                   file_type_name(type), mode, rdev);
            case OpKind::chmod: return fmt::format("{}chmod {:?} {:o}", where, path, mode);
            case OpKind::chown:
                return fmt::format("{}chown {:?} {} {} {}", where, path, static_cast<int32_t>(uid),
                                   static_cast<int32_t>(gid),
                                   follow == Follow::yes ? "follow" : "nofollow");
            case OpKind::utimens:
                return fmt::format("{}utimens {:?} a={} m={} {}", where, path, time_text(atime),
                                   time_text(mtime),
                                   follow == Follow::yes ? "follow" : "nofollow");
            case OpKind::setxattr:
                return fmt::format("{}setxattr {:?} {} {:?} mode={}", where, path, name, data,
                                   static_cast<int>(xattr_mode));
            case OpKind::getxattr:
            case OpKind::removexattr:
                return fmt::format("{}{} {:?} {}", where, k, path, name);
            case OpKind::snapshot: return "snapshot";
            case OpKind::drop_snapshot: return fmt::format("drop_snapshot {}", target);
            default: return fmt::format("{}{} {:?}", where, k, path);
        }
    }
};

struct GeneratorOptions {
    std::vector<std::string> names{"a", "b", "c", "d"};
    int max_depth = 3;
    bool dotdot_in_paths = true;     // "x/../y" in API paths (lexical, per DESIGN §3)
    bool trailing_slashes = true;    // "x/" demanding a directory
    bool absolute_symlinks = true;   // targets starting with '/'
    bool dotdot_symlinks = true;     // targets starting with "../"
    bool special_files = true;       // mknod fifo / char device 0:0 / socket
    bool suid_bits = true;  // chmod with 07000 bits (on Linux, setuid is cleared by chown and
                            // a sticky world-writable directory restricts even root)
    bool xattrs_on_any_type = true;  // xattrs on symlinks and special files too
    bool snapshots = true;
    bool long_names = true;  // an occasional 256-byte component (ENAMETOOLONG)
    bool zero_length_writes = true;
    bool copy_range = true;         // Backend::copy_range between two handles' nodes
    bool utimens_both_omit = true;  // Linux answers 0 before even looking the path up
    uint64_t max_file_size = 300 * 1024;
    std::size_t max_handles = 8;
    std::size_t max_snapshots = 6;
};

class OpGenerator {
public:
    OpGenerator(uint64_t seed, GeneratorOptions options)
        : rng_(seed), options_(std::move(options)) {}

    // The next operation for the live model `live` and `snapshots` retained snapshots'
    // models (index i of `snapshots` is target i).
    Op next(const ReferenceModel& live, const std::vector<const ReferenceModel*>& snapshots) {
        live_ = &live;
        live_entries_ = live.entries();
        handles_ = live.handles();
        Op op;
        const int roll = uniform(0, 999);
        if (roll < 30 && !handles_.empty()) return handle_op(OpKind::close);
        if (roll < 70 && handles_.size() < options_.max_handles) return open_op(live_entries_);
        if (roll < 230 && !handles_.empty()) {
            int r = uniform(0, 99);
            if (r < 45) return handle_op(OpKind::pwrite);
            if (r < 75) return handle_op(OpKind::pread);
            if (r < 88) return handle_op(OpKind::ftruncate);
            if (r < 94 && options_.copy_range) {
                Op copy = copy_range_op();
                if (copy.kind == OpKind::copy_range) return copy;
            }
            return handle_op(OpKind::fstat);
        }
        if (options_.snapshots) {
            if (roll >= 230 && roll < 234 && snapshots.size() < options_.max_snapshots) {
                op.kind = OpKind::snapshot;
                return op;
            }
            if (roll >= 234 && roll < 237 && !snapshots.empty()) {
                op.kind = OpKind::drop_snapshot;
                op.target = uniform(0, static_cast<int>(snapshots.size()) - 1);
                return op;
            }
            if (roll >= 237 && roll < 300 && !snapshots.empty()) {
                int t = uniform(0, static_cast<int>(snapshots.size()) - 1);
                auto entries = snapshots[t]->entries();
                Op s = uniform(0, 19) == 0 ? mutation_op(entries) : read_op(entries);
                s.target = t;
                return s;
            }
        }
        if (roll < 600) return read_op(live_entries_);
        return mutation_op(live_entries_);
    }

private:
    using Entries = std::vector<ReferenceModel::Entry>;

    int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
    uint64_t uniform64(uint64_t lo, uint64_t hi) {
        return std::uniform_int_distribution<uint64_t>(lo, hi)(rng_);
    }
    bool chance(int percent) { return uniform(0, 99) < percent; }
    template <class T>
    const T& pick(const std::vector<T>& v) {
        return v[static_cast<std::size_t>(uniform(0, static_cast<int>(v.size()) - 1))];
    }

    const std::string& random_name() { return pick(options_.names); }

    std::string random_path() {
        std::string p;
        int depth = uniform(1, options_.max_depth);
        for (int i = 0; i < depth; ++i) p += "/" + random_name();
        return p;
    }

    // An existing path (of `type`, when given and present) or a plausible new one.
    std::string any_path(const Entries& entries, bool allow_root = false) {
        int r = uniform(0, 99);
        if (r < 60) {
            std::vector<const ReferenceModel::Entry*> c;
            for (const auto& e : entries) {
                if (allow_root || e.path != "/") c.push_back(&e);
            }
            if (!c.empty()) return decorate(pick(c)->path);
        }
        if (r < 85) return decorate(new_path(entries));
        return decorate(random_path());
    }

    std::string existing_of(const Entries& entries, FileType type) {
        std::vector<const ReferenceModel::Entry*> c;
        for (const auto& e : entries) {
            if (e.type == type && e.path != "/") c.push_back(&e);
        }
        if (c.empty() || chance(10)) return any_path(entries);
        return decorate(pick(c)->path);
    }

    // A fresh name inside an existing directory: creation then mostly succeeds.
    std::string new_path(const Entries& entries) {
        std::vector<const ReferenceModel::Entry*> dirs;
        for (const auto& e : entries) {
            if (e.type == FileType::directory) dirs.push_back(&e);
        }
        // Stay shallow, so names collide: only directories above the depth limit.
        std::erase_if(dirs, [&](const ReferenceModel::Entry* e) {
            return std::count(e->path.begin(), e->path.end(), '/') >= options_.max_depth &&
                   e->path != "/";
        });
        const auto* d = pick(dirs);
        if (options_.long_names && chance(1)) return path_join(d->path, std::string(256, 'x'));
        return path_join(d->path, random_name());
    }

    // Spellings that normalise to the same path, and the trailing '/' that does not.
    std::string decorate(std::string p) {
        int r = uniform(0, 99);
        if (r < 4) {
            auto pos = p.find('/', 1);
            if (pos != std::string::npos) p.insert(pos, "/");
            else p = "/" + p;
        } else if (r < 7) {
            auto pos = p.rfind('/');
            p.insert(pos, "/.");
        } else if (r < 10 && options_.dotdot_in_paths) {
            auto pos = p.rfind('/');
            p.insert(pos, "/" + random_name() + "/..");
        } else if (r < 12) {
            if (p.size() > 1) p.erase(0, 1);  // relative: taken from the root
        } else if (r < 16 && options_.trailing_slashes && p != "/") {
            p += "/";
        }
        return p;
    }

    uint32_t file_mode() {
        static const std::vector<uint32_t> modes{0644, 0600, 0755, 0444, 0640, 0700};
        return pick(modes);
    }
    uint32_t dir_mode() {
        static const std::vector<uint32_t> modes{0755, 0700, 0711, 0555, 0750, 01755};
        return pick(modes);
    }

    std::string bytes(std::size_t n) {
        std::string s(n, '\0');
        uint64_t x = rng_();
        for (std::size_t i = 0; i < n; ++i) {
            if (i % 8 == 0) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            s[i] = static_cast<char>(x >> (8 * (i % 8)));
        }
        return s;
    }

    uint64_t offset_near(uint64_t size) {
        static constexpr uint64_t kChunk = 64 * 1024;
        int r = uniform(0, 99);
        uint64_t off;
        if (r < 15) off = 0;
        else if (r < 40) off = uniform64(0, size);
        else if (r < 55) off = size;
        else if (r < 65) off = size + uniform64(1, 5000);
        else if (r < 80) off = kChunk * uniform64(1, 3) - uniform64(0, 64);
        else if (r < 90) off = kChunk * uniform64(1, 3) + uniform64(0, 64);
        else off = uniform64(0, options_.max_file_size);
        return std::min(off, options_.max_file_size);
    }

    uint64_t length() {
        int r = uniform(0, 99);
        if (r < 3) return 0;
        if (r < 50) return uniform64(1, 64);
        if (r < 95) return uniform64(65, 4096);
        return uniform64(4097, 70000);
    }

    Time random_time() {
        return Time{static_cast<int64_t>(uniform64(0, 2'000'000'000)),
                    static_cast<int64_t>(uniform64(0, 999'999'999))};
    }
    TimeUpdate time_update() {
        int r = uniform(0, 9);
        if (r < 2) return TimeUpdate::omit();
        if (r < 3) return TimeUpdate::now();
        return TimeUpdate::at(random_time());
    }

    std::string xattr_name() {
        static const std::vector<std::string> names{"user.a", "user.b", "user.long.name"};
        return pick(names);
    }

    // An xattr op's path: when xattrs are limited to files and directories, only those.
    std::string xattr_path(const Entries& entries) {
        if (options_.xattrs_on_any_type) return any_path(entries, true);
        std::vector<const ReferenceModel::Entry*> c;
        for (const auto& e : entries) {
            if (e.type == FileType::regular || e.type == FileType::directory) c.push_back(&e);
        }
        if (c.empty() || chance(5)) return decorate(new_path(entries));
        std::string p = pick(c)->path;
        return decorate(p);
    }

    std::string symlink_target(const Entries& entries) {
        int r = uniform(0, 99);
        if (r < 30) {  // an existing entry, by absolute or relative spelling
            const auto& e = pick(entries);
            if (options_.absolute_symlinks && chance(50)) return e.path;
            if (e.path == "/") return ".";
            return e.path.substr(e.path.rfind('/') + 1);
        }
        if (r < 45) return random_name();                         // sibling, maybe dangling
        if (r < 55) return random_name() + "/" + random_name();   // through a sibling dir
        if (r < 65 && options_.dotdot_symlinks) return "../" + random_name();
        if (r < 72 && options_.absolute_symlinks) return random_path();
        if (r < 80) return "missing";
        return random_name();  // often the link's own name: a loop
    }

    Op read_op(const Entries& entries) {
        Op op;
        int r = uniform(0, 99);
        if (r < 20) {
            op.kind = OpKind::stat;
            op.path = any_path(entries, true);
        } else if (r < 40) {
            op.kind = OpKind::lstat;
            op.path = any_path(entries, true);
        } else if (r < 55) {
            op.kind = OpKind::readdir;
            op.path = chance(70) ? existing_of(entries, FileType::directory)
                                 : any_path(entries, true);
            if (chance(5)) op.path = "/";
        } else if (r < 65) {
            op.kind = OpKind::readlink;
            op.path = existing_of(entries, FileType::symlink);
        } else if (r < 82) {
            op.kind = OpKind::read_whole;
            op.path = existing_of(entries, FileType::regular);
        } else if (r < 92) {
            op.kind = OpKind::getxattr;
            op.path = xattr_path(entries);
            op.name = xattr_name();
        } else {
            op.kind = OpKind::listxattr;
            op.path = xattr_path(entries);
        }
        return op;
    }

    Op open_op(const Entries& entries) {
        Op op;
        op.kind = OpKind::open;
        int r = uniform(0, 99);
        static const std::vector<int> access{O_RDONLY, O_WRONLY, O_RDWR, O_RDWR};
        op.flags = pick(access);
        if (r < 40) {
            op.path = chance(70) ? existing_of(entries, FileType::regular) : any_path(entries);
        } else if (r < 80) {
            op.path = chance(75) ? new_path(entries) : any_path(entries);
            op.flags |= O_CREAT;
            if (chance(30)) op.flags |= O_EXCL;
        } else {
            op.path = any_path(entries);
            if (chance(40)) op.flags |= O_CREAT;
        }
        if ((op.flags & O_ACCMODE) != O_RDONLY && chance(15)) op.flags |= O_TRUNC;
        if (chance(10)) op.flags |= O_APPEND;
        if (chance(8)) op.flags |= O_NOFOLLOW;
        if (!(op.flags & O_CREAT) && chance(5)) op.flags |= O_DIRECTORY;
        if (chance(5)) op.path = existing_of(entries, FileType::symlink);
        op.mode = file_mode();
        return op;
    }

    Op handle_op(OpKind kind) {
        Op op;
        op.kind = kind;
        // Prefer a handle on an unlinked file now and then: it must stay usable.
        std::vector<const ReferenceModel::HandleInfo*> unlinked;
        for (const auto& h : handles_) {
            if (h.unlinked) unlinked.push_back(&h);
        }
        const auto& h = (!unlinked.empty() && chance(30)) ? *pick(unlinked) : pick(handles_);
        op.handle = h.id;
        const uint64_t size = live_->view(h.ino).stat.size;
        if (kind == OpKind::pwrite) {
            op.offset = offset_near(size);
            op.data = bytes(length());
            if (op.data.empty() && !options_.zero_length_writes) op.data = bytes(1);
        } else if (kind == OpKind::pread) {
            op.offset = chance(70) ? uniform64(0, 70000) : offset_near(size);
            op.length = chance(20) ? 200000 : length();
        } else if (kind == OpKind::ftruncate) {
            op.length = offset_near(size);
        }
        return op;
    }

    // Between two handles on different files (a destination opened without O_APPEND): mostly
    // at equal 64 KiB offsets and to the source's end (what shares chunks), else anywhere.
    Op copy_range_op() {
        Op op;
        op.kind = OpKind::fstat;
        const auto& from = pick(handles_);
        std::vector<const ReferenceModel::HandleInfo*> to;
        for (const auto& h : handles_) {
            if (h.ino != from.ino && !h.append) to.push_back(&h);
        }
        if (to.empty()) {
            op.handle = from.id;
            return op;
        }
        const ReferenceModel::HandleInfo& dest = *pick(to);
        op.kind = OpKind::copy_range;
        op.handle = from.id;
        op.handle2 = dest.id;
        op.data = fmt::format("{}{} -> {}{}", from.readable ? "r" : "", from.writable ? "w" : "",
                              dest.readable ? "r" : "", dest.writable ? "w" : "");  // for the log
        static constexpr uint64_t kChunk = 64 * 1024;
        const uint64_t size = live_->view(from.ino).stat.size;
        const uint64_t to_size = live_->view(dest.ino).stat.size;
        if (chance(70)) {
            op.offset = kChunk * uniform64(0, 2);
            op.offset2 = chance(50) ? op.offset : kChunk * uniform64(0, 3);
            op.length = chance(60) ? UINT64_MAX / 4 : kChunk * uniform64(1, 3);
        } else {
            op.offset = offset_near(size);
            op.offset2 = offset_near(to_size);
            op.length = chance(30) ? UINT64_MAX / 4 : length();
        }
        return op;
    }

    Op mutation_op(const Entries& entries) {
        Op op;
        int r = uniform(0, 99);
        if (r < 10) {
            op.kind = OpKind::mkdir;
            op.path = chance(80) ? new_path(entries) : any_path(entries, true);
            op.mode = dir_mode();
        } else if (r < 17) {
            op.kind = OpKind::rmdir;
            op.path = chance(70) ? existing_of(entries, FileType::directory) : any_path(entries);
        } else if (r < 25) {
            op.kind = OpKind::unlink;
            op.path = any_path(entries);
        } else if (r < 42) {
            op.kind = OpKind::rename;
            op.path = any_path(entries);
            op.path2 = chance(50) ? any_path(entries) : decorate(new_path(entries));
            int f = uniform(0, 9);
            op.rename_flags = f < 6 ? RenameFlags::none
                              : f < 8 ? RenameFlags::noreplace
                                      : RenameFlags::exchange;
        } else if (r < 50) {
            op.kind = OpKind::symlink;
            op.path = chance(85) ? new_path(entries) : any_path(entries);
            op.path2 = symlink_target(entries);
            if (chance(15)) op.path2 = std::string(path_basename(op.path));  // self loop
        } else if (r < 56) {
            op.kind = OpKind::link;
            op.path = any_path(entries);
            op.path2 = chance(80) ? new_path(entries) : any_path(entries);
        } else if (r < 60) {
            op.kind = OpKind::mknod;
            op.path = chance(85) ? new_path(entries) : any_path(entries);
            op.mode = file_mode();
            std::vector<FileType> types{FileType::regular};
            if (options_.special_files) {
                types.insert(types.end(), {FileType::fifo, FileType::char_device,
                                           FileType::socket, FileType::directory});
            }
            op.type = pick(types);
            op.rdev = 0;
        } else if (r < 66) {
            op.kind = OpKind::truncate;
            op.path = chance(80) ? existing_of(entries, FileType::regular) : any_path(entries);
            op.length = offset_near(uniform64(0, 70000));
        } else if (r < 71) {
            op.kind = OpKind::chmod;
            op.path = any_path(entries, true);
            op.mode = static_cast<uint32_t>(uniform(0, 07777)) &
                      (options_.suid_bits ? 07777u : 0777u);
            op.mode |= 0700;  // keep the owner able to work on it (for the host backend)
        } else if (r < 76) {
            op.kind = OpKind::chown;
            op.path = any_path(entries, true);
            static const std::vector<uint32_t> ids{0, 1000, 65534, static_cast<uint32_t>(-1)};
            op.uid = pick(ids);
            op.gid = pick(ids);
            op.follow = chance(50) ? Follow::yes : Follow::no;
        } else if (r < 82) {
            op.kind = OpKind::utimens;
            op.path = any_path(entries, true);
            op.atime = time_update();
            op.mtime = time_update();
            if (!options_.utimens_both_omit && op.atime.kind == TimeUpdate::Kind::omit &&
                op.mtime.kind == TimeUpdate::Kind::omit) {
                op.mtime = TimeUpdate::at(random_time());
            }
            op.follow = chance(60) ? Follow::yes : Follow::no;
        } else if (r < 93) {
            op.kind = OpKind::setxattr;
            op.path = xattr_path(entries);
            op.name = xattr_name();
            op.data = chance(10) ? std::string() : bytes(uniform64(1, 40));
            int m = uniform(0, 9);
            op.xattr_mode = m < 6 ? XattrMode::any : m < 8 ? XattrMode::create
                                                           : XattrMode::replace;
        } else {
            op.kind = OpKind::removexattr;
            op.path = xattr_path(entries);
            op.name = xattr_name();
        }
        return op;
    }

    std::mt19937_64 rng_;
    GeneratorOptions options_;
    Entries live_entries_;
    std::vector<ReferenceModel::HandleInfo> handles_;
    const ReferenceModel* live_ = nullptr;
};

}  // namespace packfs::model
