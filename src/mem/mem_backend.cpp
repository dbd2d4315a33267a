// make_mem_backend (mem.hpp): a plain mem tree, the engine without a lower (live_tree.hpp).
#include "mem/live_tree.hpp"

namespace packfs {

std::shared_ptr<Backend> make_mem_backend(const MemOptions& options) {
    return std::make_shared<mem::LiveTree<Backend>>(options, nullptr, 0);
}

}  // namespace packfs
