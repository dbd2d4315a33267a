#include "packfs/version.hpp"

namespace packfs {

const char* version() noexcept {
    return PACKFS_VERSION_STRING;
}

}  // namespace packfs
