// An overlay's lower as the mem engine sees it (mem/lower.hpp, DESIGN §9): a read-only Backend
// reached through its node calls, its objects numbered for the overlay. The overlay's inode
// numbers are its nodes (Node::id == st_ino), so each lower object needs one, stable while the
// overlay lives.
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
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "mem/lower.hpp"
#include "packfs/backend.hpp"

namespace packfs::overlay {

class LowerView final : public mem::Lower {
public:
    explicit LowerView(std::shared_ptr<Backend> lower);

    const std::shared_ptr<Backend>& backend() const noexcept { return lower_; }
    bool keeps_numbers() const noexcept { return keeps_; }

    uint64_t limit() const noexcept override { return limit_; }
    Result<std::optional<mem::LowerEntry>> lookup(uint64_t dir, std::string_view name) override;
    Result<bool> has(uint64_t dir, std::string_view name) override;
    Result<uint64_t> node_of(uint64_t ino) override;
    Result<std::vector<DirEntry>> list(uint64_t dir) override;
    Result<std::vector<DirEntry>> names(uint64_t dir) override { return lower_->list(Node{dir}); }
    Result<Stat> getattr(uint64_t node) override { return lower_->getattr(Node{node}); }
    Result<std::string> readlink(uint64_t node) override { return lower_->readlink(Node{node}); }
    Result<std::string> getxattr(uint64_t node, std::string_view name) override {
        return lower_->getxattr(Node{node}, name);
    }
    Result<std::vector<std::string>> listxattr(uint64_t node) override {
        return lower_->listxattr(Node{node});
    }
    Result<FileHandle> open(uint64_t node) override;
    Result<StatFs> statfs() override { return lower_->statfs(kRootNode); }

private:
    // The overlay's number of a lower entry (a lookup's answer).
    uint64_t number(const Entry& e);

    const std::shared_ptr<Backend> lower_;
    bool keeps_ = true;
    uint64_t limit_ = 2;

    // Numbers given to the objects of a lower that does not keep its own.
    static constexpr uint64_t kInternedLimit = 1ull << 48;
    std::mutex mu_;
    std::unordered_map<uint64_t, uint64_t> by_node_;  // lower node id -> number
    std::vector<uint64_t> by_number_;                 // number - 2 -> lower node id
};

}  // namespace packfs::overlay
