#include "packfs/source.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <string>

#include "packfs/dir.hpp"

namespace packfs {

Result<SourceKind> source_kind(std::string_view spec) {
    if (is_remote_url(spec)) return SourceKind::remote;
    if (spec.empty()) return fail(ENOENT, "open", spec);
    const std::string path(spec);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return fail(errno, "open", spec);
    if (S_ISDIR(st.st_mode)) return is_volume_dir(path) ? SourceKind::volume : SourceKind::directory;
    if (S_ISREG(st.st_mode)) return SourceKind::pack;
    return fail(EINVAL, kSourceKindOp, spec);
}

Result<Source> open_source(std::string_view spec, const SourceOptions& options) {
    auto kind = source_kind(spec);
    if (!kind) return std::unexpected(kind.error());
    Source out;
    out.kind = *kind;
    switch (*kind) {
        case SourceKind::pack:
        case SourceKind::remote: {
            if (options.writable) return fail(EROFS, "open", spec);  // a pack never changes
            auto pack = *kind == SourceKind::remote ? open_remote_pack(spec, options.remote)
                                                    : open_pack(spec, options.pack);
            if (!pack) return std::unexpected(pack.error());
            out.pack = std::move(*pack);
            out.backend = out.pack;
            return out;
        }
        case SourceKind::volume: {
            VolumeOptions volume_options;
            volume_options.read_only = !options.writable;
            auto volume = Volume::open(std::string(spec), volume_options);
            if (!volume) return std::unexpected(volume.error());
            out.volume = std::move(*volume);
            out.backend = out.volume;
            return out;
        }
        case SourceKind::directory: {
            DirOptions dir_options;
            dir_options.read_only = !options.writable;
            auto dir = open_dir_backend(std::string(spec), dir_options);
            if (!dir) return std::unexpected(dir.error());
            out.backend = std::move(*dir);
            return out;
        }
    }
    return fail(EINVAL, kSourceKindOp, spec);
}

}  // namespace packfs
