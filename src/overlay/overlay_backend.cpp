// The overlay's live tree (overlay_backend.hpp): the mem engine's live tree and the calls only an
// overlay has, each one engine operation (engine_rebase.cpp, engine_rollback.cpp).
#include "overlay/overlay_backend.hpp"

#include "mem/live_tree.hpp"

namespace packfs::overlay {
namespace {

using mem::Engine;
using mem::make_snapshot_backend;

class OverlayBackend final : public mem::LiveTree<Overlay> {
public:
    OverlayBackend(const MemOptions& options, std::shared_ptr<mem::Lower> lower, uint64_t next_ino,
                   LowerMaker rebase_onto)
        : LiveTree(options, std::move(lower), next_ino), rebase_onto_(std::move(rebase_onto)) {}

    Result<Frozen> freeze() override {
        Engine::SnapshotInfo info;
        {
            auto lock = engine_->lock();
            info = engine_->take_snapshot();
            engine_->expect_rebase();
        }
        return Frozen{make_snapshot_backend(engine_, info), info.gen};
    }
    Result<void> rebase(std::shared_ptr<Backend> lower, uint64_t generation) override {
        if (!rebase_onto_)
            return fail(EINVAL, "rebase (the overlay's lower does not keep its inode numbers)");
        auto next = rebase_onto_(std::move(lower));
        if (!next) return std::unexpected(next.error());
        auto done = engine_->rebase(std::move(*next), generation);
        engine_->free_layers();
        return done;
    }

    Result<Checkpoint> checkpoint() override {
        uint64_t gen = 0;
        {
            auto lock = engine_->lock();
            gen = engine_->take_snapshot().gen;
        }
        std::shared_ptr<Engine> engine = engine_;
        return Checkpoint(gen, std::shared_ptr<void>(engine.get(), [engine, gen](void*) {
                              {
                                  auto lock = engine->lock();
                                  engine->drop_snapshot(gen);
                              }
                              engine->free_layers();
                          }));
    }
    Result<void> rollback(const Checkpoint& to) override {
        if (!to) return fail(EINVAL, "rollback (an empty checkpoint)");
        return engine_->rollback(to.generation());
    }
    void reserve_inode_numbers(uint64_t next) override { engine_->reserve_inodes(next); }

private:
    const LowerMaker rebase_onto_;
};

}  // namespace

std::shared_ptr<Overlay> make_overlay_backend(std::shared_ptr<mem::Lower> lower,
                                              const MemOptions& options, uint64_t next_ino,
                                              LowerMaker rebase_onto) {
    return std::make_shared<OverlayBackend>(options, std::move(lower), next_ino,
                                            std::move(rebase_onto));
}

}  // namespace packfs::overlay
