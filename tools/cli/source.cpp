#include "source.hpp"

#include <sys/stat.h>

#include <cerrno>

#include "packfs/dir.hpp"
#include "packfs/volume.hpp"

namespace packfs::cli {

namespace {

// The op of a SOURCE that exists but is not something this build can open; source_failure
// recognises it by this name (the library never uses it). A missing SOURCE is plain "open".
constexpr std::string_view kSourceKind = "source";
constexpr std::string_view kOpen = "open";

}  // namespace

Result<SourceKind> source_kind(std::string_view spec) {
    const std::string path(spec);
    struct stat st {};
    if (path.empty()) return fail(ENOENT, kOpen, spec);
    if (::stat(path.c_str(), &st) != 0) return fail(errno, kOpen, spec);
    if (S_ISDIR(st.st_mode)) return is_volume_dir(path) ? SourceKind::volume : SourceKind::directory;
    if (S_ISREG(st.st_mode)) return SourceKind::pack;
    return fail(EINVAL, kSourceKind, spec);
}

Result<std::shared_ptr<Backend>> open_source(std::string_view spec) {
    auto kind = source_kind(spec);
    if (!kind) return std::unexpected(kind.error());
    switch (*kind) {
        case SourceKind::pack: {
            auto pack = open_pack(spec);
            if (!pack) return std::unexpected(pack.error());
            return std::shared_ptr<Backend>(std::move(*pack));
        }
        case SourceKind::volume: {
            // Opened read-only: the pack and the journal's valid records, nothing changed on
            // disk and no lock taken, so it works beside the process that has it open.
            VolumeOptions options;
            options.read_only = true;
            auto volume = Volume::open(std::string(spec), options);
            if (!volume) return std::unexpected(volume.error());
            return std::shared_ptr<Backend>(std::move(*volume));
        }
        case SourceKind::directory: {
            // A host directory, read-only and contained: no path given on the command line
            // and no symlink inside can reach outside it.
            DirOptions options;
            options.read_only = true;
            auto dir = open_dir_backend(std::string(spec), options);
            if (!dir) return std::unexpected(dir.error());
            return std::move(*dir);
        }
    }
    return fail(EINVAL, kSourceKind, spec);
}

Result<std::shared_ptr<PackBackend>> open_pack_file(std::string_view spec) {
    auto kind = source_kind(spec);
    if (!kind) return std::unexpected(kind.error());
    // A PACK argument: a directory is simply the wrong kind of file.
    if (*kind != SourceKind::pack) return fail(EISDIR, kOpen, spec);  // a directory or volume
    return open_pack(spec);
}

Failure source_failure(const Error& error) {
    Failure out = Failure::from(error);
    if (error.op() != kSourceKind) return out;
    if (error.code() == EINVAL) {
        out.message = "SOURCE is neither a pack file nor a directory";
    }
    return out;
}

}  // namespace packfs::cli
