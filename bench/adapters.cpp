#include "bench/adapters.hpp"

#include <array>

#include "bench/backend_target.hpp"
#include "bench/raw_target.hpp"
#include "packfs/mem.hpp"

namespace packfs::bench {
namespace {

Result<std::unique_ptr<Target>> make_mem(const std::string&) {
    auto fs = make_mem_backend();
    if (!fs) return fail(ENOTSUP, "make_mem_backend");
    return make_backend_target(std::move(fs));
}

const std::array kAdapters{
    BackendAdapter{"mem", AdapterRole::subject, true, make_mem},
    BackendAdapter{"raw", AdapterRole::baseline, false,
                   [](const std::string& scratch) { return make_raw_target(scratch, false); }},
    BackendAdapter{"raw+fsync", AdapterRole::durable, false,
                   [](const std::string& scratch) { return make_raw_target(scratch, true); }},
};

}  // namespace

std::span<const BackendAdapter> backend_adapters() { return kAdapters; }

}  // namespace packfs::bench
