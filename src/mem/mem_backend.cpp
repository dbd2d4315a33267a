#include "packfs/mem.hpp"
namespace packfs {
std::shared_ptr<Backend> make_mem_backend(const MemOptions&) { return nullptr; }
}
