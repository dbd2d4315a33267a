// The read-only tree under an overlay (DESIGN §9), as the mem engine sees it: nodes reached
// by (directory node, name), numbered with the inode numbers the overlay reports.
//
// A mem tree with a lower is an overlay: its own maps hold only what changed (the "upper"),
// and everything else is looked up here. The engine never asks a lower for a path: it walks
// the lower one component at a time itself, so symlinks, renames and whiteouts of the upper
// apply to the lower's names too. Implementations live in src/overlay/ (a pack, any Backend,
// a stack of several lowers).
//
// Contract:
// - Immutable: the same question always gets the same answer (the lower never changes while
//   an overlay uses it), and every method is safe to call from many threads at once.
// - `ino` is unique per inode and below ino_limit(); the root is ino 1 (kRootIno). Hard links
//   are several names of one node with one ino. `id` is the layer's own handle for the node
//   (never 0); only the layer interprets it.
// - Errors (damage, I/O) come back as values; the engine turns them into the operation's error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "packfs/error.hpp"
#include "packfs/types.hpp"

namespace packfs::mem {

struct LowerNode {
    uint64_t ino = 0;
    uint64_t id = 0;  // 0: no lower node
    FileType type = FileType::regular;
};

// The bytes of one lower file, for reads of files the overlay has not changed and for the
// chunks of copied-up files that were never overwritten.
class LowerContent {
public:
    virtual ~LowerContent() = default;
    // Copies up to out.size() bytes from `offset`; 0 at or past the end.
    virtual Result<std::size_t> read(uint64_t offset, std::span<std::byte> out) const = 0;
};

using Xattrs = std::vector<std::pair<std::string, std::string>>;

class LowerLayer {
public:
    virtual ~LowerLayer() = default;

    virtual LowerNode root() const = 0;
    // The entry `name` (one component, never "." or "..") of directory `dir`; nullopt if none.
    virtual Result<std::optional<LowerNode>> lookup(const LowerNode& dir,
                                                    std::string_view name) const = 0;
    // The node with inode number `ino`, if the layer has one.
    virtual Result<std::optional<LowerNode>> by_ino(uint64_t ino) const = 0;
    // Every entry of directory `dir`, in the layer's order.
    virtual Result<std::vector<std::pair<std::string, LowerNode>>> list(
        const LowerNode& dir) const = 0;
    // The same as a listing shows it (names, inode numbers, types: no ids), which a layer may
    // answer faster; listing a merged directory needs no more.
    virtual Result<std::vector<DirEntry>> readdir(const LowerNode& dir) const {
        auto nodes = list(dir);
        if (!nodes) return std::unexpected(nodes.error());
        std::vector<DirEntry> out;
        out.reserve(nodes->size());
        for (auto& [name, node] : *nodes) out.push_back(DirEntry{std::move(name), node.ino, node.type});
        return out;
    }

    virtual Result<Stat> stat(const LowerNode& node) const = 0;  // st_ino == node.ino
    virtual Result<std::string> readlink(const LowerNode& link) const = 0;
    virtual Result<std::shared_ptr<const LowerContent>> content(const LowerNode& file) const = 0;
    virtual Result<std::optional<std::string>> getxattr(const LowerNode& node,
                                                        std::string_view name) const = 0;
    virtual Result<Xattrs> xattrs(const LowerNode& node) const = 0;

    // Every inode number of the layer is below this; the overlay numbers its new inodes from here.
    virtual uint64_t ino_limit() const = 0;
    // statfs of the layer, for the overlay's answer.
    virtual StatFs statfs() const = 0;
};

using LowerPtr = std::shared_ptr<const LowerLayer>;

// A lower's error while serving a mutation or a walk: carried out of the engine's deep helpers
// as an exception and turned back into a value at the engine's edge (MemState::mutate and the
// read entry points). Never crosses the public API.
struct LowerFault {
    Error error;
};

[[noreturn]] inline void throw_lower(Error e) { throw LowerFault{std::move(e)}; }

template <class T>
T lower_value(Result<T>&& r) {
    if (!r) throw_lower(std::move(r.error()));
    return std::move(*r);
}

}  // namespace packfs::mem
