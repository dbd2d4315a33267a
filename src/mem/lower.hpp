// What the mem engine asks of a tree under it (engine.hpp, OVERLAY): the one interface between
// the engine and an overlay's lower. The engine knows nothing else of the lower: src/overlay
// implements it over a read-only Backend (overlay/lower_view.hpp), deciding how the lower's
// objects are numbered. A lower object is named two ways here: its number (the engine's inode
// number, stable while the engine lives) and its node (the lower's own handle on it, valid for
// this Lower only).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "packfs/backend.hpp"

namespace packfs::mem {

// A lower directory's entry: its number, its node and its type.
struct LowerEntry {
    uint64_t ino = 0;
    uint64_t node = 0;
    FileType type = FileType::regular;
};

class Lower {
public:
    virtual ~Lower() = default;

    // Every number of a lower object is below this; the engine numbers its new inodes above.
    virtual uint64_t limit() const noexcept = 0;
    // The entry `name` of directory node `dir`; nullopt when it has none.
    virtual Result<std::optional<LowerEntry>> lookup(uint64_t dir, std::string_view name) = 0;
    // Whether directory node `dir` has an entry `name` (numbering nothing).
    virtual Result<bool> has(uint64_t dir, std::string_view name) = 0;
    // The node of the object numbered `ino`; ESTALE when there is none.
    virtual Result<uint64_t> node_of(uint64_t ino) = 0;
    // A directory's entries, numbered as the engine numbers them.
    virtual Result<std::vector<DirEntry>> list(uint64_t dir) = 0;
    // A directory's names alone (an emptiness test: no numbering needed).
    virtual Result<std::vector<DirEntry>> names(uint64_t dir) = 0;
    // The node's attributes (st_ino is the lower's; the engine sets its own number).
    virtual Result<Stat> getattr(uint64_t node) = 0;
    virtual Result<std::string> readlink(uint64_t node) = 0;
    virtual Result<std::string> getxattr(uint64_t node, std::string_view name) = 0;
    virtual Result<std::vector<std::string>> listxattr(uint64_t node) = 0;
    // The node opened read-only.
    virtual Result<FileHandle> open(uint64_t node) = 0;
    // The lower's whole use (the engine's statfs counts it as used).
    virtual Result<StatFs> statfs() = 0;
};

}  // namespace packfs::mem
