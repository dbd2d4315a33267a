// packfs.Tree: one backend (a pack, a remote pack, a volume, a host directory, a mem tree or a
// snapshot) with the os module's calls on it. Every call takes the backend's shared_ptr under
// the GIL, then does its lookups and I/O without it (nogil), and builds Python objects after:
// so threads reading one tree run in parallel, and close() from another thread only drops the
// tree's reference while calls in flight keep theirs.
#include <fcntl.h>

#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "binding.hpp"

namespace packfs::python {

namespace {

// open()'s mode string -> O_* flags, as io.open reads one (binary only).
int parse_mode(const std::string& mode) {
    int kinds = 0, flags = 0;
    bool binary = false, plus = false;
    for (char c : mode) {
        switch (c) {
            case 'r':
                ++kinds;
                break;
            case 'w':
                ++kinds, flags |= O_CREAT | O_TRUNC;
                break;
            case 'a':
                ++kinds, flags |= O_CREAT | O_APPEND;
                break;
            case 'x':
                ++kinds, flags |= O_CREAT | O_EXCL;
                break;
            case 'b':
                binary = !binary;
                break;
            case '+':
                plus = !plus;
                break;
            default:
                throw py::value_error("invalid mode: '" + mode + "'");
        }
    }
    if (kinds != 1 || std::count(mode.begin(), mode.end(), 'b') > 1 ||
        std::count(mode.begin(), mode.end(), '+') > 1)
        throw py::value_error("invalid mode: '" + mode + "'");
    if (!binary) throw py::value_error("packfs files are binary: use '" + mode + "b'");
    if (plus) return flags | O_RDWR;
    return flags | (mode.find('r') != std::string::npos ? O_RDONLY : O_WRONLY);
}

// A whole file's bytes, called without the GIL: from a pack a view (of its mapping, or of the
// blocks inflated into `held`), from another tree the file read into `held`.
Result<std::span<const std::byte>> whole_file(PackBackend* pack, Backend& fs, std::string_view path,
                                              std::string& held) {
    if (pack) return pack->read_view(path, 0, std::numeric_limits<std::size_t>::max(), held);
    auto data = read_file(fs, path);
    if (!data) return std::unexpected(data.error());
    held = std::move(*data);
    return std::as_bytes(std::span(held));
}

// mkdir -p: every missing ancestor, then the directory itself.
Result<void> make_dirs(Backend& fs, std::string_view path, uint32_t mode, bool exist_ok) {
    for (std::size_t slash = path.find('/', 1); slash != std::string_view::npos;
         slash = path.find('/', slash + 1)) {
        auto made = fs.mkdir(path.substr(0, slash), mode);
        if (!made && made.error().code() != EEXIST) return made;
    }
    auto made = fs.mkdir(path, mode);
    if (!made && made.error().code() == EEXIST && exist_ok) {
        auto st = fs.stat(path);
        if (st && st->type == FileType::directory) return {};
    }
    return made;
}

// A bytes object holding `bytes`. Allocating it needs the GIL, copying into it does not: from
// a kilobyte on, the copy (half the time of a 4 KiB read from a pack, the bytes coming from
// memory, not cache) runs without the GIL, for one more release; smaller ones are copied at
// once. The bytes stay valid meanwhile: the caller holds what they live in.
py::bytes copy_out(std::span<const std::byte> bytes) {
    constexpr std::size_t kCopyWithoutGil = 1024;
    const auto* data = reinterpret_cast<const char*>(bytes.data());
    if (bytes.size() < kCopyWithoutGil) return py::bytes(data, bytes.size());
    PyObject* out = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(bytes.size()));
    if (!out) throw py::error_already_set();
    char* to = PyBytes_AS_STRING(out);
    nogil([&] { std::memcpy(to, data, bytes.size()); });
    return py::reinterpret_steal<py::bytes>(out);
}

}  // namespace

class Tree {
public:
    Tree(Source source, py::object name) : source_(std::move(source)), name_(std::move(name)) {}

    // --- metadata ----------------------------------------------------------------------------
    py::object stat(py::handle path, bool follow) {
        PathArg p(path);
        auto fs = backend();
        auto st = nogil([&] { return follow ? fs->stat(p.view()) : fs->lstat(p.view()); });
        return to_stat_result(take(std::move(st), path));
    }
    bool test(py::handle path, bool follow, std::optional<FileType> type) {
        PathArg p(path);
        auto fs = backend();
        auto st = nogil([&] { return follow ? fs->stat(p.view()) : fs->lstat(p.view()); });
        return st && (!type || st->type == *type);
    }
    py::list listdir(py::handle path) {
        PathArg p(path);
        auto fs = backend();
        auto entries = take(nogil([&] { return fs->readdir(p.view()); }), path);
        py::list out(entries.size());
        for (std::size_t i = 0; i < entries.size(); ++i)
            PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i),
                            to_name(entries[i].name, p.is_bytes()).release().ptr());
        return out;
    }
    py::object readlink(py::handle path) {
        PathArg p(path);
        auto fs = backend();
        return to_name(take(nogil([&] { return fs->readlink(p.view()); }), path), p.is_bytes());
    }
    py::bytes getxattr(py::handle path, const std::string& attribute) {
        PathArg p(path);
        auto fs = backend();
        return py::bytes(take(nogil([&] { return fs->getxattr(p.view(), attribute); }), path));
    }
    std::vector<std::string> listxattr(py::handle path) {
        PathArg p(path);
        auto fs = backend();
        return take(nogil([&] { return fs->listxattr(p.view()); }), path);
    }

    // --- contents ----------------------------------------------------------------------------
    // The whole file in one call: the dataset case. The lookup and the read run without the
    // GIL, and so does the copy into the bytes object from 1 KiB on (copy_out).
    py::bytes read(py::handle path) {
        PathArg p(path);
        auto pack = packed();
        auto fs = backend();
        std::string held;
        auto bytes = nogil([&] { return whole_file(pack.get(), *fs, p.view(), held); });
        return copy_out(take(std::move(bytes), path));
    }
    // Many whole files in one call, for threads: a thread that calls read() per small file
    // hands the GIL over twice a file (each a futex wake and a context switch, more than the
    // copy itself), so two such threads run slower than one. Here the GIL is given up once a
    // batch (gather). The files go into one buffer, handed out as a read-only memoryview
    // slice a file: a bytes object a file would be a malloc and a free a file, and glibc gives
    // a freed batch of them back to the kernel (its heap trimmed), to fault it in again on the
    // next call. One large buffer a call is what its allocator keeps for reuse.
    py::list read_many(py::handle paths) {
        Gathered got = gather(paths, false);
        py::object whole = make_view(std::move(got.data));
        py::list out(got.sizes.size());
        Py_ssize_t at = 0;
        for (std::size_t i = 0; i < got.sizes.size(); ++i) {
            const auto size = static_cast<Py_ssize_t>(got.sizes[i]);
            py::slice part(at, at + size, 1);
            PyObject* item = PyObject_GetItem(whole.ptr(), part.ptr());
            if (!item) throw py::error_already_set();
            PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), item);
            at += size;
        }
        return out;
    }
    // The same files as Arrow lays out a column of binaries: one buffer of all the bytes and
    // n + 1 offsets, file i being data[offsets[i]:offsets[i + 1]]. No Python object is made a
    // file (read_many's slices are a third of a 4 KiB file's cost, all of it under the GIL),
    // so threads reading small files scale as the library does: for consumers that take the
    // bytes by offset (numpy.frombuffer, pyarrow.BinaryArray.from_buffers, a decoder in C).
    py::tuple read_concat(py::handle paths) {
        Gathered got = gather(paths, true);
        py::object offsets = py::memoryview(got.offsets).attr("cast")("Q");
        return py::make_tuple(make_view(std::move(got.data)), std::move(offsets));
    }
    py::object view(py::handle path, uint64_t offset, int64_t length) {
        PathArg p(path);
        const std::size_t want =
            length < 0 ? std::numeric_limits<std::size_t>::max() : static_cast<std::size_t>(length);
        auto buffer = std::make_unique<ViewBuffer>();
        if (auto pack = packed()) {
            auto bytes =
                nogil([&] { return pack->read_view(p.view(), offset, want, buffer->scratch); });
            buffer->bytes = take(std::move(bytes), path);
            buffer->owner = pack;  // the mapping lives as long as the backend
            return make_view(std::move(buffer));
        }
        auto fs = backend();
        auto opened = nogil([&]() -> Result<std::shared_ptr<File>> {
            auto file = fs->open(p.view(), O_RDONLY);
            if (!file) return std::unexpected(file.error());
            std::shared_ptr<File> shared = std::move(*file);
            auto bytes = shared->read_view(offset, want, buffer->scratch);
            if (!bytes) return std::unexpected(bytes.error());
            buffer->bytes = *bytes;
            return shared;
        });
        buffer->owner = take(std::move(opened), path);
        return make_view(std::move(buffer));
    }
    py::object open(py::object path, const std::string& mode) {
        int flags = parse_mode(mode);
        PathArg p(path);
        auto fs = backend();
        auto file = take(nogil([&] { return fs->open(p.view(), flags, 0644); }), path);
        py::object f = make_file(fs, std::move(file), std::string(p.view()), path, mode, flags);
        if (flags & O_APPEND) f.attr("seek")(0, SEEK_END);
        return f;
    }

    // --- changes (EROFS on a read-only tree, from the backend itself) -------------------------
    std::size_t write(py::handle path, py::handle data, uint32_t mode) {
        PathArg p(path);
        auto fs = backend();
        Py_buffer view;
        if (PyObject_GetBuffer(data.ptr(), &view, PyBUF_SIMPLE) != 0) throw py::error_already_set();
        std::string_view bytes(static_cast<const char*>(view.buf),
                               static_cast<std::size_t>(view.len));
        auto done = nogil([&] { return write_file(*fs, p.view(), bytes, mode); });
        PyBuffer_Release(&view);
        take(std::move(done), path);
        return bytes.size();
    }
    void mkdir(py::handle path, uint32_t mode) {
        call(path, [&](Backend& fs, auto p) { return fs.mkdir(p, mode); });
    }
    void makedirs(py::handle path, uint32_t mode, bool exist_ok) {
        call(path, [&](Backend& fs, auto p) { return make_dirs(fs, p, mode, exist_ok); });
    }
    void rmdir(py::handle path) {
        call(path, [](Backend& fs, auto p) { return fs.rmdir(p); });
    }
    void unlink(py::handle path) {
        call(path, [](Backend& fs, auto p) { return fs.unlink(p); });
    }
    void chmod(py::handle path, uint32_t mode) {
        call(path, [&](Backend& fs, auto p) { return fs.chmod(p, mode); });
    }
    void chown(py::handle path, uint32_t uid, uint32_t gid, bool follow) {
        call(path, [&](Backend& fs, auto p) {
            return fs.chown(p, uid, gid, follow ? Follow::yes : Follow::no);
        });
    }
    void truncate(py::handle path, uint64_t length) {
        call(path, [&](Backend& fs, auto p) { return fs.truncate(p, length); });
    }
    void setxattr(py::handle path, const std::string& attribute, py::bytes value, int flags) {
        std::string v = value;
        XattrMode mode = flags == 1   ? XattrMode::create
                         : flags == 2 ? XattrMode::replace
                                      : XattrMode::any;
        call(path, [&](Backend& fs, auto p) { return fs.setxattr(p, attribute, v, mode); });
    }
    void removexattr(py::handle path, const std::string& attribute) {
        call(path, [&](Backend& fs, auto p) { return fs.removexattr(p, attribute); });
    }
    // Two-path calls: the error names both, as os.rename's does.
    void rename(py::handle src, py::handle dst) {
        call2(src, dst, [](Backend& fs, auto a, auto b) { return fs.rename(a, b); });
    }
    void symlink(py::handle target, py::handle link_path) {
        call2(target, link_path, [](Backend& fs, auto a, auto b) { return fs.symlink(a, b); });
    }
    void link(py::handle src, py::handle dst) {
        call2(src, dst, [](Backend& fs, auto a, auto b) { return fs.link(a, b); });
    }
    void sync() {
        backend();
        if (auto volume = source_.volume) take(nogil([&] { return volume->sync(); }), name_);
    }

    // --- the tree ----------------------------------------------------------------------------
    py::object snapshot() {
        auto fs = backend();
        auto snap = take(nogil([&] { return fs->snapshot(); }), name_);
        Source s;
        s.pack = source_.pack;  // a pack is its own snapshot; anything else is no pack
        s.fs = std::move(snap);
        s.kind = s.pack ? source_.kind : "snapshot";
        return py::cast(Tree(std::move(s), name_));
    }
    Tree(Tree&&) = default;
    ~Tree() { close(); }

    void close() {
        closed_ = true;
        // Calls in flight hold their own references; the last one out closes the backend.
        std::shared_ptr<Backend> fs = std::move(source_.fs);
        std::shared_ptr<PackBackend> pack = std::move(source_.pack);
        std::shared_ptr<Volume> volume = std::move(source_.volume);
        pack.reset();
        volume.reset();
        release_without_gil(fs);
    }
    bool closed() const noexcept { return closed_; }
    bool read_only() const { return backend()->read_only(); }
    const std::string& kind() const noexcept { return kind_(); }
    py::object name() const { return name_; }
    std::shared_ptr<Backend> backend() const {
        if (closed_) throw py::value_error("operation on a closed packfs tree");
        return source_.fs;
    }

private:
    // What read_many and read_concat return: the files' bytes end to end (a buffer of ours,
    // not a bytes object: it is sized and filled without the GIL), and their sizes or (with
    // offsets) their n + 1 offsets as native uint64s.
    struct Gathered {
        std::unique_ptr<ViewBuffer> data = std::make_unique<ViewBuffer>();
        py::bytes offsets;
        std::vector<std::size_t> sizes;
    };
    // Every path looked up and viewed, the buffer sized and every view copied into it, in one
    // GIL release: the GIL is held only to read the paths and make the result's objects. Each
    // release is a handover to a waiting thread (a futex wake), so two threads calling in turn
    // scale better the fewer there are a call. The first path that fails raises its OSError,
    // naming it.
    Gathered gather(py::handle paths, bool with_offsets) {
        py::object items = py::reinterpret_steal<py::object>(
            PySequence_Fast(paths.ptr(), "paths must be a sequence of paths"));
        if (!items) throw py::error_already_set();
        const std::size_t n = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(items.ptr()));
        PyObject** item = PySequence_Fast_ITEMS(items.ptr());  // borrowed, alive with items
        std::vector<PathArg> args;
        args.reserve(n);
        for (std::size_t i = 0; i < n; ++i) args.emplace_back(item[i]);
        Gathered got;
        uint64_t* offsets = nullptr;
        if (with_offsets) {
            got.offsets = new_bytes((n + 1) * sizeof(uint64_t));
            offsets = reinterpret_cast<uint64_t*>(PyBytes_AS_STRING(got.offsets.ptr()));
        } else {
            got.sizes.resize(n);
        }
        std::optional<std::pair<std::size_t, Error>> failed;
        auto pack = packed();
        auto fs = backend();
        nogil([&] {
            std::vector<std::span<const std::byte>> views(n);
            std::vector<std::string> held(n);  // what is not in a raw pack's mapping
            std::size_t total = 0;
            for (std::size_t i = 0; i < n; ++i) {
                auto bytes = whole_file(pack.get(), *fs, args[i].view(), held[i]);
                if (!bytes) {
                    failed.emplace(i, bytes.error());
                    return;
                }
                views[i] = *bytes;
                total += bytes->size();
            }
            // Sized without zeroing: every byte is written by the copies.
            got.data->scratch.resize_and_overwrite(total, [&](char* to, std::size_t) {
                std::size_t at = 0;
                for (std::size_t i = 0; i < n; ++i) {
                    if (offsets)
                        offsets[i] = at;
                    else
                        got.sizes[i] = views[i].size();
                    std::memcpy(to + at, views[i].data(), views[i].size());
                    at += views[i].size();
                }
                if (offsets) offsets[n] = at;
                return total;
            });
            got.data->bytes = std::as_bytes(std::span(got.data->scratch));
        });
        if (failed)
            take(Result<void>(std::unexpected(failed->second)), args[failed->first].object());
        return got;
    }
    static py::bytes new_bytes(std::size_t size) {
        PyObject* made = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(size));
        if (!made) throw py::error_already_set();
        return py::reinterpret_steal<py::bytes>(made);
    }
    const std::string& kind_() const noexcept { return closed_ ? closed_kind_ : source_.kind; }
    std::shared_ptr<PackBackend> packed() const {
        if (closed_) throw py::value_error("operation on a closed packfs tree");
        return source_.pack;
    }
    template <class Op>
    void call(py::handle path, Op&& op) {
        PathArg p(path);
        auto fs = backend();
        take(nogil([&] { return op(*fs, p.view()); }), path);
    }
    template <class Op>
    void call2(py::handle a, py::handle b, Op&& op) {
        PathArg pa(a), pb(b);
        auto fs = backend();
        take(nogil([&] { return op(*fs, pa.view(), pb.view()); }), a, b);
    }

    Source source_;
    py::object name_;
    bool closed_ = false;
    std::string closed_kind_ = "closed";
};

py::object make_tree(Source source, py::object name) {
    return py::cast(Tree(std::move(source), std::move(name)));
}

void bind_tree(py::module_& m) {
    using namespace py::literals;
    constexpr auto dir = std::optional<FileType>(FileType::directory);
    constexpr auto reg = std::optional<FileType>(FileType::regular);
    constexpr auto lnk = std::optional<FileType>(FileType::symlink);
    py::class_<Tree>(m, "Tree", "A tree of files: packfs.open(source) or packfs.mem()")
        .def("stat", &Tree::stat, "path"_a, py::kw_only(), "follow_symlinks"_a = true,
             "os.stat_result of path (of a final symlink's target unless follow_symlinks=False)")
        .def(
            "lstat", [](Tree& t, py::handle p) { return t.stat(p, false); }, "path"_a)
        .def(
            "exists", [](Tree& t, py::handle p) { return t.test(p, true, std::nullopt); }, "path"_a)
        .def(
            "lexists", [](Tree& t, py::handle p) { return t.test(p, false, std::nullopt); },
            "path"_a)
        .def(
            "isdir", [=](Tree& t, py::handle p) { return t.test(p, true, dir); }, "path"_a)
        .def(
            "isfile", [=](Tree& t, py::handle p) { return t.test(p, true, reg); }, "path"_a)
        .def(
            "islink", [=](Tree& t, py::handle p) { return t.test(p, false, lnk); }, "path"_a)
        .def("listdir", &Tree::listdir, "path"_a = "/")
        .def(
            "scandir", [](Tree& t, py::object p) { return scandir(t.backend(), std::move(p)); },
            "path"_a = "/")
        .def(
            "walk",
            [](Tree& t, py::object top, bool topdown, py::object onerror, bool followlinks) {
                return walk(t.backend(), std::move(top), topdown, std::move(onerror), followlinks);
            },
            "top"_a = "/", "topdown"_a = true, "onerror"_a = py::none(), "followlinks"_a = false)
        .def("readlink", &Tree::readlink, "path"_a)
        .def("getxattr", &Tree::getxattr, "path"_a, "attribute"_a)
        .def("listxattr", &Tree::listxattr, "path"_a)
        .def("read", &Tree::read, "path"_a, "The whole file as bytes")
        .def("read_many", &Tree::read_many, "paths"_a,
             "The whole files, in the order of paths, as read-only memoryviews into one buffer "
             "(alive while any of them is): the GIL is released once for all the lookups and "
             "once for all the copies, so threads reading small files scale")
        .def("read_concat", &Tree::read_concat, "paths"_a,
             "The whole files, in the order of paths, as Arrow lays out binaries: (data, offsets), "
             "both read-only memoryviews, file i being data[offsets[i]:offsets[i+1]] (offsets "
             "has len(paths) + 1 native uint64s); no Python object is made per file")
        .def("view", &Tree::view, "path"_a, "offset"_a = 0, "length"_a = -1,
             "A read-only memoryview of the file's bytes (zero-copy from a pack stored raw)")
        .def("open", &Tree::open, "path"_a, "mode"_a = "rb")
        .def("write", &Tree::write, "path"_a, "data"_a, "mode"_a = 0644,
             "Creates or replaces the file with data; returns its length")
        .def("mkdir", &Tree::mkdir, "path"_a, "mode"_a = 0755)
        .def("makedirs", &Tree::makedirs, "path"_a, "mode"_a = 0755, "exist_ok"_a = false)
        .def("rmdir", &Tree::rmdir, "path"_a)
        .def("remove", &Tree::unlink, "path"_a)
        .def("unlink", &Tree::unlink, "path"_a)
        .def("rename", &Tree::rename, "src"_a, "dst"_a)
        .def("replace", &Tree::rename, "src"_a, "dst"_a)
        .def("symlink", &Tree::symlink, "src"_a, "dst"_a, "A symlink dst pointing to src")
        .def("link", &Tree::link, "src"_a, "dst"_a)
        .def("chmod", &Tree::chmod, "path"_a, "mode"_a)
        .def("chown", &Tree::chown, "path"_a, "uid"_a, "gid"_a, py::kw_only(),
             "follow_symlinks"_a = true)
        .def("truncate", &Tree::truncate, "path"_a, "length"_a)
        .def("setxattr", &Tree::setxattr, "path"_a, "attribute"_a, "value"_a, "flags"_a = 0)
        .def("removexattr", &Tree::removexattr, "path"_a, "attribute"_a)
        .def("sync", &Tree::sync, "A volume: makes every change so far durable")
        .def("snapshot", &Tree::snapshot, "A read-only tree frozen at this instant")
        .def("close", &Tree::close)
        .def_property_readonly("closed", &Tree::closed)
        .def_property_readonly("read_only", &Tree::read_only)
        .def_property_readonly("kind", &Tree::kind)
        .def_property_readonly("source", &Tree::name)
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](Tree& t, py::args) { t.close(); })
        .def("__repr__", [](const Tree& t) {
            return "<packfs.Tree " + t.kind() + " " + py::repr(t.name()).cast<std::string>() + ">";
        });
}

}  // namespace packfs::python
