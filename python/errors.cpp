// packfs::Error -> OSError. The exception is built as OSError(errno, strerror, filename, None,
// filename2): OSError's constructor picks the subclass from the errno (ENOENT ->
// FileNotFoundError, ENOTDIR -> NotADirectoryError, EEXIST -> FileExistsError, ...), exactly as
// for the os module's own errors, so `except FileNotFoundError` works on a pack as on a disk.
#include <string.h>

#include <string>

#include "binding.hpp"

namespace packfs::python {

void raise_errno(int code, py::handle filename, py::handle filename2, std::string_view detail) {
    const char* description = ::strerrordesc_np(code);  // thread-safe, unlike strerror
    std::string text = description ? description : "Unknown error " + std::to_string(code);
    if (!detail.empty()) text += " (" + std::string(detail) + ")";
    py::object none = py::none();
    py::object exc = py::reinterpret_steal<py::object>(PyObject_CallFunction(
        PyExc_OSError, "isOOO", code, text.c_str(), filename ? filename.ptr() : none.ptr(),
        none.ptr(), filename2 ? filename2.ptr() : none.ptr()));
    if (!exc) throw py::error_already_set();
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
    throw py::error_already_set();
}

void raise_error(const Error& error, py::handle filename, py::handle filename2) {
    // Corruption (EUCLEAN) is still an OSError; what was found goes into strerror.
    std::string detail;
    if (const auto& c = error.corruption()) detail = c->what;
    // What the library said past the name the caller gave ("URL (HTTP 401)", "URL (connection
    // refused)"): the filename stays the caller's, the rest goes into strerror.
    if (detail.empty() && filename && PyUnicode_Check(filename.ptr())) {
        const std::string name = py::reinterpret_borrow<py::str>(filename);
        const std::string& path = error.path();
        if (path.size() > name.size() + 3 && path.starts_with(name + " (") && path.ends_with(')'))
            detail = path.substr(name.size() + 2, path.size() - name.size() - 3);
    }
    raise_errno(error.code(), filename, filename2, detail);
}

}  // namespace packfs::python
