// Stat -> os.stat_result. Built from the full 19-field tuple CPython uses on Linux (the ten
// sequence fields, then float times, *_ns, st_blksize, st_blocks, st_rdev), so every attribute
// os.stat has is there and the stat module's S_IS* work on st_mode (type bits included).
#include <sys/stat.h>

#include "binding.hpp"

namespace packfs::python {

uint32_t mode_with_type(const Stat& st) noexcept {
    return file_type_to_mode_bits(st.type) | (st.mode & 07777);
}

namespace {

PyObject* stat_result_type() {
    // Leaked on purpose: a static py::object would be released after the interpreter is gone.
    static PyObject* type =
        py::object(py::module_::import("os").attr("stat_result")).release().ptr();
    return type;
}

PyObject* integer(uint64_t v) {
    return PyLong_FromUnsignedLongLong(v);
}
PyObject* seconds(const Time& t) {
    return PyFloat_FromDouble(static_cast<double>(t.sec) + static_cast<double>(t.nsec) * 1e-9);
}
PyObject* nanoseconds(const Time& t) {
    // sec * 1e9 + nsec can pass 2^63 only for times after the year 2262: go through Python ints.
    py::int_ ns = py::int_(t.sec) * py::int_(1'000'000'000) + py::int_(t.nsec);
    return ns.release().ptr();
}

}  // namespace

py::object to_stat_result(const Stat& st) {
    PyObject* type = stat_result_type();
    const Py_ssize_t fields = 19;
    py::tuple t(fields);
    PyObject* values[fields] = {
        integer(mode_with_type(st)),
        integer(st.ino),
        integer(0),  // st_dev: a tree is one device
        integer(st.nlink),
        integer(st.uid),
        integer(st.gid),
        integer(st.size),
        PyLong_FromLongLong(st.atime.sec),
        PyLong_FromLongLong(st.mtime.sec),
        PyLong_FromLongLong(st.ctime.sec),
        seconds(st.atime),
        seconds(st.mtime),
        seconds(st.ctime),
        nanoseconds(st.atime),
        nanoseconds(st.mtime),
        nanoseconds(st.ctime),
        integer(4096),  // st_blksize
        integer(st.blocks),
        integer(st.rdev),
    };
    for (Py_ssize_t i = 0; i < fields; ++i) {
        if (!values[i]) throw py::error_already_set();
        PyTuple_SET_ITEM(t.ptr(), i, values[i]);  // steals
    }
    PyObject* r = PyObject_CallOneArg(type, t.ptr());
    if (!r) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(r);
}

}  // namespace packfs::python
