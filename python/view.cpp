// Zero-copy memoryviews. A pack stores raw file bytes contiguously in its mapping; a view
// points there, and the ViewBuffer behind it holds the backend (hence the mapping) alive, so the
// memoryview stays valid after the Tree and the File are closed, for as long as it lives.
// Where the bytes are not in memory as stored (a compressed pack, a mem tree, a directory) they
// are copied once into the buffer's scratch string, and `zero_copy` says so.
#include <algorithm>

#include "binding.hpp"

namespace packfs::python {

bool ViewBuffer::zero_copy() const noexcept {
    if (bytes.empty()) return true;
    const auto* p = reinterpret_cast<const char*>(bytes.data());
    return !(p >= scratch.data() && p < scratch.data() + scratch.size());
}

py::object make_view(std::unique_ptr<ViewBuffer> buffer) {
    py::object owner = py::cast(std::move(buffer));
    PyObject* view = PyMemoryView_FromObject(owner.ptr());
    if (!view) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(view);
}

void bind_view(py::module_& m) {
    py::class_<ViewBuffer>(m, "ViewBuffer", py::buffer_protocol(),
                           "What a memoryview from view() refers to (its .obj): keeps the bytes "
                           "valid while it lives")
        .def_buffer([](ViewBuffer& b) {
            static const std::byte empty{};
            const void* p = b.bytes.empty() ? &empty : b.bytes.data();
            return py::buffer_info(const_cast<void*>(p), 1, "B", 1,
                                   {static_cast<py::ssize_t>(b.bytes.size())}, {1},
                                   /*readonly=*/true);
        })
        .def_property_readonly("zero_copy", &ViewBuffer::zero_copy,
                               "True when the view points into the pack's mapping (no copy)")
        .def("__len__", [](const ViewBuffer& b) { return b.bytes.size(); });

    // For tests and diagnostics: the address a buffer's bytes start at.
    m.def("_view_address", [](py::handle object) {
        Py_buffer view;
        if (PyObject_GetBuffer(object.ptr(), &view, PyBUF_SIMPLE) != 0)
            throw py::error_already_set();
        auto address = reinterpret_cast<uintptr_t>(view.buf);
        PyBuffer_Release(&view);
        return address;
    });
}

}  // namespace packfs::python
