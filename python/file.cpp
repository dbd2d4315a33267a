// packfs.File: a binary file object over one open handle, shaped like io.FileIO (read, readinto,
// write, seek, tell, truncate, the context manager) with no fileno(): there is no descriptor.
// The handle has no position of its own (pread/pwrite), so the object keeps one. Each call
// copies the handle's shared_ptr under the GIL and then works without it, so close() from
// another thread never frees a handle a read is using.
#include <fcntl.h>

#include <cerrno>
#include <cstdio>
#include <limits>

#include "binding.hpp"

namespace packfs::python {

namespace {

// Reads up to `size` bytes at `offset` into `out`: pread until full or end of file.
Result<std::size_t> read_fully(File& f, std::byte* out, std::size_t size, uint64_t offset) {
    std::size_t got = 0;
    while (got < size) {
        auto n = f.pread(std::span(out + got, size - got), offset + got);
        if (!n) return std::unexpected(n.error());
        if (*n == 0) break;
        got += *n;
    }
    return got;
}

// A buffer-protocol export, released on scope exit.
class BufferArg {
public:
    BufferArg(py::handle object, bool writable) {
        if (PyObject_GetBuffer(object.ptr(), &view_, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) != 0)
            throw py::error_already_set();
    }
    ~BufferArg() { PyBuffer_Release(&view_); }
    BufferArg(const BufferArg&) = delete;
    BufferArg& operator=(const BufferArg&) = delete;
    std::span<std::byte> bytes() const noexcept {
        return {static_cast<std::byte*>(view_.buf), static_cast<std::size_t>(view_.len)};
    }

private:
    Py_buffer view_{};
};

[[noreturn]] void unsupported(const char* what) {
    PyErr_SetString(py::module_::import("io").attr("UnsupportedOperation").ptr(), what);
    throw py::error_already_set();
}

}  // namespace

class PyFile {
public:
    PyFile(std::shared_ptr<Backend> fs, FileHandle handle, std::string path, py::object name,
           std::string mode, int flags)
        : fs_(std::move(fs)),
          file_(std::move(handle)),
          path_(std::move(path)),
          name_(std::move(name)),
          mode_(std::move(mode)),
          readable_((flags & O_ACCMODE) != O_WRONLY),
          writable_((flags & O_ACCMODE) != O_RDONLY),
          append_((flags & O_APPEND) != 0) {}

    py::bytes read(Py_ssize_t n) {
        auto f = handle();
        if (!readable_) unsupported("File not open for reading");
        uint64_t offset = pos_;
        // All of it, or a large request (read(1 << 30) of a small file): ask the size first, so
        // the bytes object is made to fit instead of shrunk.
        constexpr Py_ssize_t kAskSize = 64 * 1024;
        if (n < 0 || n > kAskSize) {
            auto st = nogil([&] { return f->fstat(); });
            uint64_t size = take(std::move(st), name_).size;
            const uint64_t left = size > offset ? size - offset : 0;
            if (n < 0 || static_cast<uint64_t>(n) > left) n = static_cast<Py_ssize_t>(left);
        }
        // Into the bytes object itself, as io.FileIO does: one copy, from the pack to Python.
        PyObject* out = PyBytes_FromStringAndSize(nullptr, n);
        if (!out) throw py::error_already_set();
        py::object owner = py::reinterpret_steal<py::object>(out);
        auto* data = reinterpret_cast<std::byte*>(PyBytes_AS_STRING(out));
        auto got = nogil([&] { return read_fully(*f, data, static_cast<std::size_t>(n), offset); });
        std::size_t count = take(std::move(got), name_);
        if (count != static_cast<std::size_t>(n)) {
            PyObject* p = owner.release().ptr();
            if (_PyBytes_Resize(&p, static_cast<Py_ssize_t>(count)) != 0)
                throw py::error_already_set();
            owner = py::reinterpret_steal<py::object>(p);
        }
        pos_ = offset + count;
        return py::reinterpret_steal<py::bytes>(owner.release());
    }

    std::size_t readinto(py::handle buffer) {
        auto f = handle();
        if (!readable_) unsupported("File not open for reading");
        BufferArg arg(buffer, /*writable=*/true);
        auto span = arg.bytes();
        uint64_t offset = pos_;
        auto got = nogil([&] { return read_fully(*f, span.data(), span.size(), offset); });
        std::size_t count = take(std::move(got), name_);
        pos_ = offset + count;
        return count;
    }

    std::size_t write(py::handle data) {
        auto f = handle();
        if (!writable_) unsupported("File not open for writing");
        BufferArg arg(data, /*writable=*/false);
        auto span = arg.bytes();
        uint64_t offset = pos_;
        bool append = append_;
        auto done = nogil([&]() -> Result<std::pair<std::size_t, uint64_t>> {
            auto n = f->pwrite(span, offset);
            if (!n) return std::unexpected(n.error());
            if (!append) return std::pair{*n, offset + *n};
            auto st = f->fstat();  // O_APPEND wrote at the end, wherever that was
            if (!st) return std::unexpected(st.error());
            return std::pair{*n, st->size};
        });
        auto [count, end] = take(std::move(done), name_);
        pos_ = end;
        return count;
    }

    uint64_t seek(int64_t offset, int whence) {
        auto f = handle();
        int64_t base = 0;
        if (whence == SEEK_CUR) {
            base = static_cast<int64_t>(pos_);
        } else if (whence == SEEK_END) {
            auto st = nogil([&] { return f->fstat(); });
            base = static_cast<int64_t>(take(std::move(st), name_).size);
        } else if (whence != SEEK_SET) {
            throw py::value_error("invalid whence (" + std::to_string(whence) +
                                  ", should be 0, 1 or 2)");
        }
        if (offset < 0 && base + offset < 0) raise_errno(EINVAL, name_);
        pos_ = static_cast<uint64_t>(base + offset);
        return pos_;
    }

    uint64_t truncate(std::optional<uint64_t> size) {
        auto f = handle();
        if (!writable_) unsupported("File not open for writing");
        uint64_t to = size.value_or(pos_);
        take(nogil([&] { return f->truncate(to); }), name_);
        return to;
    }

    void sync() {
        auto f = handle();
        take(nogil([&] { return f->fsync(false); }), name_);
    }

    py::object stat() {
        auto f = handle();
        return to_stat_result(take(nogil([&] { return f->fstat(); }), name_));
    }

    // Bytes [offset, offset + length) as a read-only memoryview: into the pack's mapping when
    // they are stored raw there, else a copy (ViewBuffer::zero_copy says which).
    py::object view(uint64_t offset, int64_t length) {
        auto f = handle();
        if (!readable_) unsupported("File not open for reading");
        auto buffer = std::make_unique<ViewBuffer>();
        const std::size_t want =
            length < 0 ? std::numeric_limits<std::size_t>::max() : static_cast<std::size_t>(length);
        // The file's own read_view: into the mapping for a pack's raw bytes (valid while the
        // File lives, which the buffer sees to), else a copy into the buffer's scratch.
        auto bytes = nogil([&] { return f->read_view(offset, want, buffer->scratch); });
        buffer->bytes = take(std::move(bytes), name_);
        buffer->owner = f;
        return make_view(std::move(buffer));
    }

    ~PyFile() { release_without_gil(file_); }
    PyFile(const PyFile&) = delete;
    PyFile& operator=(const PyFile&) = delete;

    void close() {
        std::shared_ptr<File> f = std::move(file_);
        closed_ = true;
        release_without_gil(f);
    }
    bool closed() const noexcept { return closed_; }
    uint64_t tell() const {
        if (closed_) throw py::value_error("I/O operation on closed file");
        return pos_;
    }
    bool readable() const { return (void)tell(), readable_; }
    bool writable() const { return (void)tell(), writable_; }
    py::object name() const { return name_; }
    const std::string& mode() const noexcept { return mode_; }

private:
    std::shared_ptr<File> handle() const {
        if (closed_ || !file_) throw py::value_error("I/O operation on closed file");
        return file_;
    }

    std::shared_ptr<Backend> fs_;  // a handle need not keep its backend alive: this does
    std::shared_ptr<File> file_;
    std::string path_;
    py::object name_;
    std::string mode_;
    bool readable_, writable_, append_;
    bool closed_ = false;
    uint64_t pos_ = 0;
};

py::object make_file(std::shared_ptr<Backend> fs, FileHandle handle, std::string path,
                     py::object name, std::string mode, int flags) {
    return py::cast(std::make_unique<PyFile>(std::move(fs), std::move(handle), std::move(path),
                                             std::move(name), std::move(mode), flags));
}

void bind_file(py::module_& m) {
    using namespace py::literals;
    py::class_<PyFile>(m, "File", "A binary file of a Tree (Tree.open), like io.FileIO")
        .def("read", &PyFile::read, "size"_a = -1, "Up to size bytes (all to the end if < 0)")
        .def("readall", [](PyFile& f) { return f.read(-1); })
        .def("readinto", &PyFile::readinto, "buffer"_a,
             "Reads into a writable buffer (bytearray, memoryview, array) without another copy")
        .def("write", &PyFile::write, "data"_a)
        .def("seek", &PyFile::seek, "offset"_a, "whence"_a = SEEK_SET)
        .def("tell", &PyFile::tell)
        .def("truncate", &PyFile::truncate, "size"_a = py::none())
        .def("flush", [](PyFile& f) { (void)f.tell(); })
        .def("sync", &PyFile::sync, "Makes what was written durable (fsync)")
        .def("stat", &PyFile::stat, "The file's os.stat_result (fstat)")
        .def("view", &PyFile::view, "offset"_a = 0, "length"_a = -1,
             "A read-only memoryview of the bytes, zero-copy from a pack's mapping when stored "
             "raw; valid as long as the memoryview lives")
        .def("readable", &PyFile::readable)
        .def("writable", &PyFile::writable)
        .def("seekable", [](PyFile& f) { return (void)f.tell(), true; })
        .def("isatty", [](PyFile& f) { return (void)f.tell(), false; })
        .def("close", &PyFile::close)
        .def_property_readonly("closed", &PyFile::closed)
        .def_property_readonly("name", &PyFile::name)
        .def_property_readonly("mode", &PyFile::mode)
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](PyFile& f, py::args) { f.close(); })
        .def("__repr__", [](const PyFile& f) {
            return "<packfs.File name=" + py::repr(f.name()).cast<std::string>() + " mode='" +
                   f.mode() + "'" + (f.closed() ? " closed>" : ">");
        });
}

}  // namespace packfs::python
