// The journal's records (docs/JOURNAL.md, "Operation records"): every mutation of a volume,
// as the call that made it, with the time it stamped and the overlay's next inode number
// before it. Replaying a record makes the same call on the overlay, stamped with the same
// time, so the replayed tree is the original tree exactly, inode numbers included; the
// next-inode number is checked before each replay, so a journal that does not belong to the
// tree it is replayed on is caught at its first record, never applied half-wrong.
//
// Every operation names what it acts on by inode number (the volume's nodes: Node::id ==
// st_ino, stable across compactions and replays): a directory and a name for the namespace
// calls, the inode for attribute changes and a handle's writes and truncates. So a tree of any
// depth is journaled, and replay makes the same node calls. Writes to a file with no name left
// are not recorded (after a crash such a file is gone, as on any filesystem). Journals of
// earlier versions named paths (types 1-14): they are still read and replayed by path.
//
// Payloads are little-endian fields in the order listed per type; strings and data are a u32
// length and the bytes. A decoder checks every length against the payload and refuses
// trailing bytes: EUCLEAN naming the record type and the field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "packfs/backend.hpp"
#include "packfs/error.hpp"

namespace packfs::volume {

enum class RecordType : uint16_t {
    mkdir = 1,
    rmdir = 2,
    unlink = 3,
    rename = 4,
    symlink = 5,
    link = 6,
    mknod = 7,
    chmod = 8,
    chown = 9,
    utimens = 10,
    truncate = 11,
    setxattr = 12,
    removexattr = 13,
    open = 14,       // open() with O_CREAT or O_TRUNC
    write = 15,      // a handle's pwrite, by inode
    ftruncate = 16,  // a handle's truncate, by inode
    // By node (what every mutation records now):
    create_at = 17,  // a regular file made in directory `ino`
    mkdir_at = 18,
    mknod_at = 19,
    symlink_at = 20,  // target in `value`
    link_at = 21,     // inode `ino` named `name` in directory `ino2`
    unlink_at = 22,
    rmdir_at = 23,
    rename_at = 24,  // `ino`/`name` -> `ino2`/`name2`
    setattr = 25,    // chmod, chown, utimens, truncate of inode `ino`
    setxattr_at = 26,
    removexattr_at = 27,
    fallocate = 28,    // a handle's fallocate of inode `ino`: mode in `flags`, [offset, +length)
    clone_range = 29,  // inode `ino`'s [offset, +length) into inode `ino2` at `offset2`
};

const char* record_type_name(RecordType type) noexcept;

// One operation. Which fields a type uses is in docs/JOURNAL.md; the rest stay zero/empty.
struct OpRecord {
    RecordType type = RecordType::mkdir;
    Time time{};            // what the operation stamped as "now"
    uint64_t next_ino = 0;  // the overlay's next inode number before the operation
    std::string path;       // the path operated on; rename: from; link: existing
    std::string path2;      // rename: to; link: the new name; symlink: the target
    std::string name;       // xattr name; the entry name of the *_at types
    std::string name2;      // rename_at: the new name
    std::string value;      // xattr value; symlink_at: the target
    uint64_t ino = 0;       // write, ftruncate, setattr, *xattr_at: the inode; other *_at: the
                            // directory (link_at: the inode named)
    uint64_t ino2 = 0;      // rename_at: the new directory; link_at: the directory
    uint64_t offset = 0;    // write, fallocate: offset; truncate, ftruncate, setattr: size;
                            // mknod: rdev
    uint64_t length = 0;    // fallocate, clone_range
    uint64_t offset2 = 0;   // clone_range: the destination offset
    uint32_t mode = 0;      // mkdir, mknod, chmod, open, *_at; chown: uid; setattr: mode
    uint32_t flags = 0;     // rename: RenameFlags; open, create_at: O_* flags; setxattr:
                            // XattrMode; chown, utimens: Follow; mknod: FileType; write: 1 =
                            // append; setattr: 1 = truncate to `offset`; fallocate: its mode
    uint32_t uid = 0;       // setattr; the owner of a made entry
    uint32_t gid = 0;       // chown, setattr; the owner of a made entry
    bool has_owner = false; // a made entry: `uid`/`gid` own it (else the volume's default)
    TimeUpdate atime{}, mtime{};       // utimens, setattr
    std::span<const std::byte> data;   // write (a view: into the caller's buffer or the frame)
};

std::vector<std::byte> encode_record(const OpRecord& record);
// `payload` must outlive the record (data is a view into it).
Result<OpRecord> decode_record(uint16_t type, std::span<const std::byte> payload);

// Makes the record's call on `overlay` (a live mem tree: its nodes are its inode numbers),
// stamped with its time. Fails with EUCLEAN when the overlay is not in the state the record was
// made in (its next inode number differs), and with the call's own error when the call fails.
Result<void> apply_record(Backend& overlay, const OpRecord& record);

// "rename /a -> /b", "mkdir 12/src", for reports.
std::string describe_record(const OpRecord& record);

}  // namespace packfs::volume
