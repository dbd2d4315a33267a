// What the pieces of the Python module share: the GIL rule, turning packfs::Error into OSError,
// path arguments, stat results and the zero-copy view buffer.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "packfs/backend.hpp"
#include "packfs/pack.hpp"
#include "packfs/volume.hpp"

namespace packfs::python {

namespace py = pybind11;

// Runs `body` with the GIL released: every call into the library that looks up, reads, writes
// or walks goes through here, so other Python threads run meanwhile. `body` must not touch a
// Python object.
template <class Body>
decltype(auto) nogil(Body&& body) {
    py::gil_scoped_release release;
    return std::forward<Body>(body)();
}

// Drops `owned` (a backend or a handle whose destructor may do I/O: a volume flushes its
// journal) without the GIL, unless the interpreter is shutting down.
template <class T>
void release_without_gil(T& owned) {
    if (!owned) return;
    if (_Py_IsFinalizing()) {
        owned = {};
        return;
    }
    nogil([&] { owned = {}; });
}

// --- errors.cpp ------------------------------------------------------------------------------
// Raises the OSError the os module would: OSError(errno, strerror, filename[, filename2]), which
// Python itself turns into FileNotFoundError, NotADirectoryError, ... by the errno.
[[noreturn]] void raise_errno(int code, py::handle filename, py::handle filename2 = {},
                              std::string_view detail = {});
[[noreturn]] void raise_error(const Error& error, py::handle filename, py::handle filename2 = {});

template <class T>
T take(Result<T>&& result, py::handle filename, py::handle filename2 = {}) {
    if (!result) raise_error(result.error(), filename, filename2);
    return std::move(*result);
}
inline void take(Result<void>&& result, py::handle filename, py::handle filename2 = {}) {
    if (!result) raise_error(result.error(), filename, filename2);
}

// --- paths.cpp -------------------------------------------------------------------------------
// A path argument as os takes one: str, bytes or os.PathLike. The bytes are borrowed from the
// Python object (no copy); `object()` is what the caller passed, for OSError.filename.
class PathArg {
public:
    explicit PathArg(py::handle object);
    std::string_view view() const noexcept { return view_; }
    py::handle object() const noexcept { return original_; }
    bool is_bytes() const noexcept { return bytes_; }

private:
    py::handle original_;
    py::object owner_;  // __fspath__'s result or an fs-encoded copy, when one was needed
    std::string_view view_;
    bool bytes_ = false;
};

// A name or path from the tree as Python sees it: str (surrogateescape for bytes that are not
// UTF-8, as os does) or, when the caller passed bytes, bytes.
py::object to_name(std::string_view name, bool as_bytes);
// dir + "/" + name, without doubling the slash.
std::string join_path(std::string_view dir, std::string_view name);

// --- stat_result.cpp -------------------------------------------------------------------------
// A real os.stat_result, so stat.S_ISDIR(r.st_mode), r.st_mtime_ns, ... work as with os.stat.
py::object to_stat_result(const Stat& st);
uint32_t mode_with_type(const Stat& st) noexcept;

// --- view.cpp --------------------------------------------------------------------------------
// The object behind a memoryview: bytes that stay valid while it lives, because it holds what
// owns them (the pack's mapping through its backend, or a File), or a copy in `scratch`.
struct ViewBuffer {
    std::shared_ptr<const void> owner;
    std::string scratch;
    std::span<const std::byte> bytes;
    bool zero_copy() const noexcept;
};
// memoryview(ViewBuffer): read-only; its .obj is the ViewBuffer.
py::object make_view(std::unique_ptr<ViewBuffer> buffer);
void bind_view(py::module_& m);

// --- listing.cpp -----------------------------------------------------------------------------
// os.scandir's iterator of DirEntry objects, and os.walk's generator, over a backend.
py::object scandir(std::shared_ptr<Backend> fs, py::object path);
py::object walk(std::shared_ptr<Backend> fs, py::object top, bool topdown, py::object onerror,
                bool followlinks);
void bind_listing(py::module_& m);

// --- file.cpp / tree.cpp ---------------------------------------------------------------------
void bind_file(py::module_& m);
void bind_tree(py::module_& m);

// What a Tree serves. `pack` is set when the backend is a pack (zero-copy reads), `volume` when
// it is a volume (sync).
struct Source {
    std::shared_ptr<Backend> fs;
    std::shared_ptr<PackBackend> pack;
    std::shared_ptr<Volume> volume;
    std::string kind;  // "pack", "remote", "volume", "directory", "mem", "snapshot"
};
py::object make_tree(Source source, py::object name);

// A File object over an open handle (file.cpp).
py::object make_file(std::shared_ptr<Backend> fs, FileHandle handle, std::string path,
                     py::object name, std::string mode, int flags);

}  // namespace packfs::python
