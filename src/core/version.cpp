#include "packfs/version.hpp"

#include "pack/format/format.hpp"
#include "volume/journal_format.hpp"

namespace packfs {

const char* version() noexcept {
    return PACKFS_VERSION_STRING;
}

FormatVersions format_versions() noexcept {
    return {.pack_oldest = pack::kOldestFormatVersion,
            .pack_newest = pack::kFormatVersion,
            .journal = volume::kJournalVersion};
}

}  // namespace packfs
