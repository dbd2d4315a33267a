// The checks of rename(2), in the order Linux makes them, so that every backend and the path
// layer answer each failure with Linux's errno (the conformance and model suites pin it).
#pragma once

#include <optional>

#include "packfs/types.hpp"

namespace packfs {

// What the two names of a rename are. `victim` is the entry at the destination, if any.
struct RenameCase {
    RenameFlags flags = RenameFlags::none;
    std::optional<FileType> moved;   // nullopt: the source name does not exist
    std::optional<FileType> victim;  // nullopt: the destination name is free
    bool same_object = false;        // both names name one object (hard links, or one name)
    bool from_wants_dir = false;     // the caller wrote "a/" (path calls only)
    bool to_wants_dir = false;
    bool moved_contains_to_dir = false;    // the destination's directory is the moved one or below it
    bool victim_contains_from_dir = false;  // the source's directory is the victim or below it
};

struct RenameVerdict {
    int code = 0;         // 0: go ahead (unless `noop`)
    bool names_to = false;  // the error is about the destination
    bool noop = false;      // success without a change (one object under both names)
};

// `victim_has_entries` is asked only when it decides the answer (a directory replaced).
template <class HasEntries>
RenameVerdict check_rename(const RenameCase& c, HasEntries&& victim_has_entries) {
    const bool exchange = c.flags == RenameFlags::exchange;
    const bool src_dir = c.moved == FileType::directory;
    const bool victim_dir = c.victim == FileType::directory;
    if (!c.moved) return {ENOENT, false};
    if (exchange && !c.victim) return {ENOENT, true};
    if (c.victim && c.flags == RenameFlags::noreplace) return {EEXIST, true};
    if (exchange && !victim_dir && c.to_wants_dir) return {ENOTDIR, true};
    if (!src_dir && (c.from_wants_dir || (!exchange && c.to_wants_dir))) return {ENOTDIR, false};
    if (src_dir && c.moved_contains_to_dir) return {EINVAL, false};
    if (victim_dir && c.victim_contains_from_dir) return {exchange ? EINVAL : ENOTEMPTY, true};
    if (c.victim && c.same_object) return {0, false, true};
    if (c.victim && !exchange) {
        if (src_dir && !victim_dir) return {ENOTDIR, true};
        if (!src_dir && victim_dir) return {EISDIR, true};
        if (victim_dir && victim_has_entries()) return {ENOTEMPTY, true};
    }
    return {};
}

inline bool valid_rename_flags(RenameFlags flags) noexcept {
    return flags == RenameFlags::none || flags == RenameFlags::noreplace ||
           flags == RenameFlags::exchange;
}

}  // namespace packfs
