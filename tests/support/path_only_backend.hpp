// A Backend that answers path calls only: the base of the test oracles that put the kernel
// itself behind the contract (support/host_backend.cpp on a host directory, the FUSE suites'
// views of a mount), so the suites compare PackFS with the kernel, not with PackFS's own walker.
// Their node calls answer ENOTSUP (the conformance suite's `nodes` capability is false for
// them). Every PackFS backend implements the node calls instead (backend.hpp).
#pragma once

#include <cerrno>
#include <string>
#include <string_view>
#include <vector>

#include "packfs/backend.hpp"

namespace packfs::test_support {

class PathOnlyBackend : public Backend {
public:
    Result<Entry> lookup(Node, std::string_view name) override { return fail(ENOTSUP, "lookup", name); }
    Result<Stat> getattr(Node) override { return fail(ENOTSUP, "getattr"); }
    Result<std::vector<DirEntry>> list(Node) override { return fail(ENOTSUP, "readdir"); }
    Result<std::string> readlink(Node) override { return fail(ENOTSUP, "readlink"); }
    Result<FileHandle> open(Node, int) override { return fail(ENOTSUP, "open"); }
    using Backend::open;
    using Backend::readlink;
};

}  // namespace packfs::test_support
