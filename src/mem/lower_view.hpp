// How an overlay numbers its lower's inodes (DESIGN §9): the overlay's inode numbers are its
// nodes (Node::id == st_ino), so each lower object needs one, stable while the overlay lives.
//
// - A lower that numbers uniquely (Backend::inode_numbering: a pack, a mem snapshot, a stack of
//   lowers) keeps its numbers: the overlay's number is the lower's st_ino, and the lower node of
//   a number is found with lookup_ino(). The lower's root must be number 1, as the overlay's is.
// - Any other lower (a host directory: numbers reused, or repeated across devices) is
//   numbered by the overlay in the order it first meets each object: the lower node is held
//   (never forgotten) for the overlay's life, and found again by a table.
// New inodes of the overlay are numbered from limit() up, so the two never meet.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "packfs/backend.hpp"

namespace packfs::mem {

class LowerView {
public:
    explicit LowerView(Backend* lower);

    bool present() const noexcept { return lower_ != nullptr; }
    bool keeps_numbers() const noexcept { return keeps_; }
    // Every number of a lower object is below this.
    uint64_t limit() const noexcept { return limit_; }

    // The overlay's number of a lower entry (a lookup's answer), and its st_ino rewritten so.
    uint64_t number(const Entry& e);
    // The lower node of a lower object's number. ESTALE when the lower has none.
    Result<uint64_t> node_of(uint64_t ino);
    // A listing's inode numbers as the overlay's (the lower's `dir` node).
    Result<std::vector<DirEntry>> list(uint64_t dir);

private:
    Backend* lower_;
    bool keeps_ = true;
    uint64_t limit_ = 2;

    // Numbers given to the objects of a lower that does not keep its own.
    static constexpr uint64_t kInternedLimit = 1ull << 48;
    std::mutex mu_;
    std::unordered_map<uint64_t, uint64_t> by_node_;  // lower node id -> number
    std::vector<uint64_t> by_number_;                 // number - 2 -> lower node id
};

}  // namespace packfs::mem
