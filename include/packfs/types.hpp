// The value types of the Backend contract (DESIGN §4): metadata, directory entries, times.
#pragma once

#include <compare>
#include <cstdint>
#include <string>

#include "packfs/export.hpp"

namespace packfs {

enum class FileType : uint8_t {
    regular,
    directory,
    symlink,
    fifo,
    char_device,
    block_device,
    socket,
};

// The S_IFMT bits of a type, and back (unknown bits give nullopt-like `regular`=false).
PACKFS_API uint32_t file_type_to_mode_bits(FileType type) noexcept;
PACKFS_API bool file_type_from_mode_bits(uint32_t mode, FileType& out) noexcept;
PACKFS_API const char* file_type_name(FileType type) noexcept;

// Nanosecond-resolution time since the epoch.
struct Time {
    int64_t sec = 0;
    int64_t nsec = 0;  // 0 .. 999,999,999
    friend constexpr auto operator<=>(const Time&, const Time&) = default;
    static Time now() noexcept;  // CLOCK_REALTIME
};

// How utimens treats one of its two times, as UTIME_NOW / UTIME_OMIT do.
struct TimeUpdate {
    enum class Kind : uint8_t { omit, now, set };
    Kind kind = Kind::omit;
    Time time{};
    static TimeUpdate omit() noexcept { return {Kind::omit, {}}; }
    static TimeUpdate now() noexcept { return {Kind::now, {}}; }
    static TimeUpdate at(Time t) noexcept { return {Kind::set, t}; }
};

struct Stat {
    uint64_t ino = 0;    // stable for the life of the file within its backend
    FileType type = FileType::regular;
    uint32_t mode = 0;   // permission bits only (07777); the type is in `type`
    uint32_t uid = 0;
    uint32_t gid = 0;
    uint64_t nlink = 0;
    uint64_t size = 0;   // bytes; a symlink's size is its target's length
    uint64_t rdev = 0;   // device number of a char/block device
    uint64_t blocks = 0; // 512-byte blocks allocated
    Time atime, mtime, ctime;
};

struct DirEntry {
    std::string name;
    uint64_t ino = 0;
    FileType type = FileType::regular;
    friend bool operator==(const DirEntry&, const DirEntry&) = default;
};

struct StatFs {
    uint64_t block_size = 4096;
    uint64_t blocks = 0;
    uint64_t blocks_free = 0;
    uint64_t files = 0;
    uint64_t files_free = 0;
    uint32_t name_max = 255;
};

// Flags of rename(2)'s renameat2 form.
enum class RenameFlags : uint8_t {
    none = 0,
    noreplace = 1,  // fail with EEXIST if the target exists
    exchange = 2,   // atomically swap source and target; both must exist
};

// Whether an operation on a final symlink acts on the link or on what it points to.
enum class Follow : uint8_t { yes, no };

// setxattr's XATTR_CREATE / XATTR_REPLACE.
enum class XattrMode : uint8_t { any, create, replace };

// A node: one object of a backend (a file, directory, symlink or special file), named by
// identity instead of by path, as a kernel VFS and FUSE name inodes (DESIGN §4). A cheap value;
// what `id` means is the backend's (an inode number, a record number, a table slot), with two
// rules every backend keeps: 0 is no node, and the root is kRootNode. A backend never gives one
// id to two objects while either can still be reached through it (ids are not reused while a
// node is held; mem, overlays and volumes never reuse them at all, and there id == st_ino).
struct Node {
    uint64_t id = 0;
    explicit constexpr operator bool() const noexcept { return id != 0; }
    friend constexpr bool operator==(const Node&, const Node&) = default;
};

inline constexpr Node kRootNode{1};

// Who makes a new entry: its owner, as a kernel filesystem makes new files belong to the
// caller. A backend applies the set-group-ID rule itself: in a directory with S_ISGID the new
// entry takes the directory's group, and a new subdirectory the S_ISGID bit too.
struct Owner {
    uint32_t uid = 0;
    uint32_t gid = 0;
};

// The changes of one setattr (chmod, chown, truncate, utimens, and their f* forms). Fields left
// unset are not changed; ctime becomes now when anything is.
struct SetAttr {
    static constexpr uint32_t kKeep = UINT32_MAX;  // chown's -1
    uint32_t mode = kKeep;                         // permission bits (07777)
    uint32_t uid = kKeep;
    uint32_t gid = kKeep;
    bool truncate = false;                         // set the size to `size`
    uint64_t size = 0;
    TimeUpdate atime = TimeUpdate::omit();
    TimeUpdate mtime = TimeUpdate::omit();

    static SetAttr chmod(uint32_t mode) noexcept {
        SetAttr a;
        a.mode = mode & 07777;
        return a;
    }
    static SetAttr chown(uint32_t uid, uint32_t gid) noexcept {
        SetAttr a;
        a.uid = uid;
        a.gid = gid;
        return a;
    }
    static SetAttr resize(uint64_t size) noexcept {
        SetAttr a;
        a.truncate = true;
        a.size = size;
        return a;
    }
    static SetAttr times(TimeUpdate atime, TimeUpdate mtime) noexcept {
        SetAttr a;
        a.atime = atime;
        a.mtime = mtime;
        return a;
    }
};

}  // namespace packfs
