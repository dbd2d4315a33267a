// The `packfs` Python module: packfs.open(source) and packfs.mem() give a Tree; packfs.build()
// packs a host directory. A SOURCE is told apart by the CLI's rules (tools/cli/source.cpp): an
// http(s):// or oci:// URL is a remote pack, a directory holding a volume's manifest a volume,
// any other directory a host directory, a regular file a pack.
#include <sys/stat.h>

#include <cerrno>

#include "binding.hpp"
#include "packfs/dir.hpp"
#include "packfs/mem.hpp"
#include "packfs/remote.hpp"
#include "packfs/version.hpp"
#include "packfs/volume.hpp"

namespace packfs::python {
namespace {

Result<Source> open_source(const std::string& spec, bool writable) {
    if (is_remote_url(spec)) {
        if (writable) return fail(EROFS, "open", spec);
        auto pack = open_remote_pack(spec);
        if (!pack) return std::unexpected(pack.error());
        return Source{*pack, *pack, nullptr, "remote"};
    }
    struct stat st {};
    if (spec.empty()) return fail(ENOENT, "open", spec);
    if (::stat(spec.c_str(), &st) != 0) return fail(errno, "open", spec);
    if (S_ISDIR(st.st_mode) && is_volume_dir(spec)) {
        // Read-only, a volume takes no lock and changes nothing on disk (it can be read beside
        // the process that has it open); writable, it is this process's until closed.
        VolumeOptions options;
        options.read_only = !writable;
        auto volume = Volume::open(spec, options);
        if (!volume) return std::unexpected(volume.error());
        return Source{*volume, nullptr, *volume, "volume"};
    }
    if (S_ISDIR(st.st_mode)) {
        // Contained as the CLI's: no path and no symlink inside reaches outside it.
        DirOptions options;
        options.read_only = !writable;
        auto dir = open_dir_backend(spec, options);
        if (!dir) return std::unexpected(dir.error());
        return Source{*dir, nullptr, nullptr, "directory"};
    }
    if (!S_ISREG(st.st_mode)) return fail(EINVAL, "open", spec);
    if (writable) return fail(EROFS, "open", spec);  // a pack is immutable
    auto pack = open_pack(spec);
    if (!pack) return std::unexpected(pack.error());
    return Source{*pack, *pack, nullptr, "pack"};
}

py::object open_tree(py::object source, bool writable) {
    PathArg p(source);
    std::string spec(p.view());
    auto opened = nogil([&] { return open_source(spec, writable); });
    return make_tree(take(std::move(opened), source), source);
}

py::dict build(py::object src_dir, py::object out_pack, const std::string& compression, int level,
               unsigned jobs, const std::vector<std::string>& exclude) {
    PackWriteOptions options;
    for (const std::string& pattern : exclude) {
        if (auto r = options.exclude.add(pattern); !r) throw py::value_error(r.error().message());
    }
    if (compression == "zstd")
        options.compression = Compression::zstd;
    else if (compression == "lz4")
        options.compression = Compression::lz4;
    else if (compression != "none")
        throw py::value_error("compression is 'none', 'zstd' or 'lz4', not '" + compression + "'");
    options.level = level;
    options.jobs = jobs;
    PathArg src(src_dir), out(out_pack);
    auto stats = take(nogil([&] { return write_pack_from_host(src.view(), out.view(), options); }),
                      src_dir, out_pack);
    py::dict d;
    d["files"] = stats.regular_files;
    d["directories"] = stats.directories;
    d["symlinks"] = stats.symlinks;
    d["excluded"] = stats.excluded;
    d["file_bytes"] = stats.file_bytes;
    d["pack_bytes"] = stats.pack_bytes;
    d["digest"] = stats.digest;
    return d;
}

}  // namespace
}  // namespace packfs::python

PYBIND11_MODULE(packfs, m) {
    using namespace packfs::python;
    using namespace py::literals;
    m.doc() =
        "PackFS: packs, volumes, host directories and mem trees with the os module's calls "
        "(docs/PYTHON.md)";
    m.attr("__version__") = packfs::version();
    bind_view(m);
    bind_file(m);
    bind_listing(m);
    bind_tree(m);
    m.def("open", &open_tree, "source"_a, "writable"_a = false,
          "A Tree over a pack file, an http(s):// or oci:// pack URL, a volume directory or a "
          "host directory (read-only unless writable=True; a pack is always read-only)");
    m.def(
        "mem",
        [] {
            return make_tree(Source{packfs::make_mem_backend(), nullptr, nullptr, "mem"},
                             py::str("mem"));
        },
        "A new, empty, writable in-memory tree");
    m.def("build", &build, "src_dir"_a, "out_pack"_a, "compression"_a = "none", "level"_a = 0,
          "jobs"_a = 0, "exclude"_a = std::vector<std::string>{},
          "Packs the host directory src_dir into out_pack, less what the exclude patterns name "
          "(gitignore syntax, from src_dir's root); returns its statistics");
}
