// Path arguments and names, the os module's way: str, bytes or os.PathLike in; str out (or
// bytes when bytes came in), undecodable bytes carried as surrogate escapes.
#include <string>

#include "binding.hpp"

namespace packfs::python {

PathArg::PathArg(py::handle object) : original_(object) {
    PyObject* p = object.ptr();
    if (!PyUnicode_Check(p) && !PyBytes_Check(p)) {
        owner_ = py::reinterpret_steal<py::object>(PyOS_FSPath(p));  // TypeError for others
        if (!owner_) throw py::error_already_set();
        p = owner_.ptr();
    }
    if (PyBytes_Check(p)) {
        bytes_ = true;
        view_ = {PyBytes_AS_STRING(p), static_cast<std::size_t>(PyBytes_GET_SIZE(p))};
    } else {
        Py_ssize_t size = 0;
        // The UTF-8 form is cached in the str: borrowing it costs nothing after the first time.
        if (const char* s = PyUnicode_AsUTF8AndSize(p, &size)) {
            view_ = {s, static_cast<std::size_t>(size)};
        } else {  // surrogate escapes of non-UTF-8 bytes: encode them back as os does
            PyErr_Clear();
            owner_ = py::reinterpret_steal<py::object>(PyUnicode_EncodeFSDefault(p));
            if (!owner_) throw py::error_already_set();
            view_ = {PyBytes_AS_STRING(owner_.ptr()),
                     static_cast<std::size_t>(PyBytes_GET_SIZE(owner_.ptr()))};
        }
    }
    if (view_.find('\0') != std::string_view::npos) throw py::value_error("embedded null byte");
}

py::object to_name(std::string_view name, bool as_bytes) {
    PyObject* o =
        as_bytes
            ? PyBytes_FromStringAndSize(name.data(), static_cast<Py_ssize_t>(name.size()))
            : PyUnicode_DecodeFSDefaultAndSize(name.data(), static_cast<Py_ssize_t>(name.size()));
    if (!o) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(o);
}

std::string join_path(std::string_view dir, std::string_view name) {
    std::string out;
    out.reserve(dir.size() + 1 + name.size());
    out.append(dir);
    if (out.empty() || out.back() != '/') out.push_back('/');
    out.append(name);
    return out;
}

}  // namespace packfs::python
