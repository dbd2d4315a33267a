// TEST ONLY. A Backend over a real host directory with plain syscalls (no containment),
// used to check the conformance suite itself against the kernel's behaviour.
//
// Every virtual path is normalised as the PackFS API does (path.hpp: "//", "." and ".."
// resolved lexically, a trailing '/' demands a directory) and then resolved under the root
// with openat2(RESOLVE_IN_ROOT), so absolute symlink targets and ".." inside targets stay
// inside the root, as they do in a virtual tree. Where the Backend contract deliberately
// differs from a plain syscall it is emulated here and said so beside the code: open() of a
// special file answers ENOTSUP, and the root answers rmdir/rename with EBUSY as the real "/"
// does. snapshot() answers ENOTSUP. Modes are passed to the kernel as given, so callers that
// want them stored verbatim run with umask(0).
#pragma once
#include <memory>
#include <string>

#include "packfs/backend.hpp"

namespace packfs::testing {

std::shared_ptr<Backend> make_host_backend(const std::string& root_dir);

// A host backend over a fresh directory made under $TMPDIR (or /tmp); the directory and all it
// holds are removed when the last reference to the backend goes. nullptr if it cannot be made.
std::shared_ptr<Backend> make_temp_host_backend();

// The kernel's copy_file_range(2) between two handles whose bytes are host files (a host
// backend's, whose host_bytes() name their descriptors), looped to the end as cp does; through
// a FUSE mount this is the driver's COPY_FILE_RANGE. Handles of anything else: copy_bytes.
Result<uint64_t> host_copy_file_range(File& from, uint64_t offset, File& to, uint64_t to_offset,
                                      uint64_t length);

}  // namespace packfs::testing
