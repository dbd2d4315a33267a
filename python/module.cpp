// The `packfs` Python module: packfs.open(source) and packfs.mem() give a Tree; packfs.build()
// packs a host directory. A SOURCE is told apart by the CLI's rules (tools/cli/source.cpp): an
// http(s):// or oci:// URL is a remote pack, a directory holding a volume's manifest a volume,
// any other directory a host directory, a regular file a pack.

#include <cerrno>

#include "binding.hpp"
#include "packfs/mem.hpp"
#include "packfs/remote.hpp"
#include "packfs/source.hpp"
#include "packfs/version.hpp"
#include "packfs/volume.hpp"

namespace packfs::python {
namespace {

// packfs.open()'s keyword arguments for a remote source (RemoteOptions), None when not given.
struct RemoteArgs {
    py::object digest, cache, cache_size, timeout, headers, connections;
    bool any() const {
        for (const py::object* o : {&digest, &cache, &cache_size, &timeout, &headers, &connections})
            if (!o->is_none()) return true;
        return false;
    }
};

// The RemoteOptions the arguments say, checked (ValueError naming the one that is wrong).
RemoteOptions remote_options(const RemoteArgs& a) {
    RemoteOptions o;
    if (!a.digest.is_none()) o.digest = a.digest.cast<std::string>();
    if (!a.cache.is_none())
        o.cache_dir = py::str(py::module_::import("os").attr("fspath")(a.cache));
    if (!a.cache_size.is_none()) {
        const auto bytes = a.cache_size.cast<long long>();
        if (bytes < 0) throw py::value_error("cache_size is a number of bytes, not negative");
        o.cache_bytes = static_cast<uint64_t>(bytes);
    }
    if (!a.timeout.is_none()) {
        const double seconds = a.timeout.cast<double>();
        if (!(seconds > 0)) throw py::value_error("timeout is a number of seconds above 0");
        o.timeout = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
    }
    if (!a.connections.is_none()) {
        const auto n = a.connections.cast<long long>();
        if (n < 1 || n > 64) throw py::value_error("connections is from 1 to 64");
        o.connections = static_cast<unsigned>(n);
    }
    if (!a.headers.is_none()) {
        // {"Name": "value"}, or "Name: value" strings.
        if (py::isinstance<py::dict>(a.headers)) {
            for (auto [name, value] : a.headers.cast<py::dict>())
                o.headers.push_back(name.cast<std::string>() + ": " + value.cast<std::string>());
        } else {
            for (py::handle h : a.headers) o.headers.push_back(h.cast<std::string>());
        }
    }
    if (auto why = remote_option_problem(o); !why.empty()) throw py::value_error(why);
    return o;
}

// Tree.kind of an opened SOURCE.
const char* kind_name(SourceKind kind) {
    switch (kind) {
        case SourceKind::pack: return "pack";
        case SourceKind::remote: return "remote";
        case SourceKind::volume: return "volume";
        case SourceKind::directory: return "directory";
    }
    return "pack";
}

// packfs::open_source, as the module's Source.
Result<Source> open_source(const std::string& spec, bool writable, const RemoteOptions& remote) {
    auto opened = packfs::open_source(spec, {.writable = writable, .remote = remote});
    if (!opened) return std::unexpected(opened.error());
    return Source{std::move(opened->backend), std::move(opened->pack), std::move(opened->volume),
                  kind_name(opened->kind)};
}

py::object open_tree(py::object source, bool writable, const RemoteArgs& args) {
    PathArg p(source);
    std::string spec(p.view());
    if (args.any() && !is_remote_url(spec))
        throw py::value_error(
            "digest, cache, cache_size, timeout, headers and connections are for a remote "
            "source (an http(s):// or oci:// URL)");
    const RemoteOptions remote = remote_options(args);
    auto opened = nogil([&] { return open_source(spec, writable, remote); });
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
    m.def(
        "open",
        [](py::object source, bool writable, py::object digest, py::object cache,
           py::object cache_size, py::object timeout, py::object headers, py::object connections) {
            return open_tree(
                std::move(source), writable,
                RemoteArgs{std::move(digest), std::move(cache), std::move(cache_size),
                           std::move(timeout), std::move(headers), std::move(connections)});
        },
        "source"_a, "writable"_a = false, py::kw_only(), "digest"_a = py::none(),
        "cache"_a = py::none(), "cache_size"_a = py::none(), "timeout"_a = py::none(),
        "headers"_a = py::none(), "connections"_a = py::none(),
        "A Tree over a pack file, an http(s):// or oci:// pack URL, a volume directory or a "
        "host directory (read-only unless writable=True; a pack is always read-only). For a "
        "URL: digest pins the pack, cache is the block cache's directory ('none': private), "
        "cache_size its bound in bytes, timeout the seconds a read waits for the server, "
        "headers a dict or 'Name: value' strings sent with every request, connections how "
        "many requests are in flight at once");
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
