// Directory listings the os module's way: scandir() yields DirEntry objects (name, path, inode,
// is_dir/is_file/is_symlink, stat, cached as os caches them), walk() yields (dirpath, dirnames,
// filenames) as os.walk does: top-down with dirnames prunable in place, or bottom-up; symlinks
// to directories listed among dirnames but not descended into unless followlinks; errors
// skipped or handed to onerror. Each directory is listed, and its symlinks classified, in one
// call without the GIL; only building the lists holds it.
#include <sys/stat.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "binding.hpp"

namespace packfs::python {

namespace {

class PyDirEntry {
public:
    PyDirEntry(std::shared_ptr<Backend> fs, py::object name, py::object path, std::string cpath,
               const DirEntry& entry)
        : fs_(std::move(fs)),
          name_(std::move(name)),
          path_(std::move(path)),
          cpath_(std::move(cpath)),
          ino_(entry.ino),
          type_(entry.type) {}

    py::object name() const { return name_; }
    py::object path() const { return path_; }
    uint64_t inode() const noexcept { return ino_; }
    bool is_symlink() const noexcept { return type_ == FileType::symlink; }
    bool is_dir(bool follow) { return is_type(FileType::directory, follow); }
    bool is_file(bool follow) { return is_type(FileType::regular, follow); }
    py::object stat(bool follow) { return to_stat_result(attributes(follow)); }

private:
    bool is_type(FileType type, bool follow) {
        if (!follow || type_ != FileType::symlink) return type_ == type;
        // The link's target: a dangling link is neither (False, as os says); other errors
        // (a loop: ELOOP) are raised, as os raises them.
        if (!stat_) {
            auto st = nogil([&] { return fs_->stat(cpath_); });
            if (!st && st.error().code() == ENOENT) return false;
            stat_ = take(std::move(st), path_);
        }
        return stat_->type == type;
    }
    const Stat& attributes(bool follow) {
        std::optional<Stat>& slot = follow && type_ == FileType::symlink ? stat_ : lstat_;
        if (!slot) {
            auto st = nogil([&] {
                return follow && type_ == FileType::symlink ? fs_->stat(cpath_)
                                                            : fs_->lstat(cpath_);
            });
            slot = take(std::move(st), path_);
        }
        return *slot;
    }

    std::shared_ptr<Backend> fs_;
    py::object name_, path_;
    std::string cpath_;
    uint64_t ino_;
    FileType type_;
    std::optional<Stat> stat_, lstat_;
};

class ScandirIterator {
public:
    ScandirIterator(std::shared_ptr<Backend> fs, py::object dir, std::string cdir, bool as_bytes,
                    std::vector<DirEntry> entries)
        : fs_(std::move(fs)),
          dir_(std::move(dir)),
          cdir_(std::move(cdir)),
          as_bytes_(as_bytes),
          entries_(std::move(entries)) {}

    PyDirEntry next() {
        if (next_ >= entries_.size()) throw py::stop_iteration();
        const DirEntry& e = entries_[next_++];
        std::string cpath = join_path(cdir_, e.name);
        // os.scandir's entry.path is os.path.join(dir, name), in the dir argument's spelling.
        py::object path = to_name(cpath, as_bytes_);
        return PyDirEntry(fs_, to_name(e.name, as_bytes_), std::move(path), std::move(cpath), e);
    }
    void close() { next_ = entries_.size(); }

private:
    std::shared_ptr<Backend> fs_;
    py::object dir_;  // the directory listed, as the caller named it
    std::string cdir_;
    bool as_bytes_;
    std::vector<DirEntry> entries_;
    std::size_t next_ = 0;
};

// One directory as walk sees it: subdirectories (symlinks to directories included, as os.walk
// counts them) and the rest.
struct Listing {
    std::vector<std::string> dirs, files, linked_dirs;
};

Result<Listing> list_for_walk(Backend& fs, const std::string& dir) {
    auto entries = fs.readdir(dir);
    if (!entries) return std::unexpected(entries.error());
    Listing out;
    for (DirEntry& e : *entries) {
        bool is_dir = e.type == FileType::directory;
        if (e.type == FileType::symlink) {
            auto st = fs.stat(join_path(dir, e.name));
            is_dir = st && st->type == FileType::directory;
            if (is_dir) out.linked_dirs.push_back(e.name);
        }
        (is_dir ? out.dirs : out.files).push_back(std::move(e.name));
    }
    return out;
}

py::list to_list(const std::vector<std::string>& names, bool as_bytes) {
    py::list out(names.size());
    for (std::size_t i = 0; i < names.size(); ++i)
        PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i),
                        to_name(names[i], as_bytes).release().ptr());
    return out;
}

class WalkIterator {
public:
    WalkIterator(std::shared_ptr<Backend> fs, py::object top, bool topdown, py::object onerror,
                 bool followlinks)
        : fs_(std::move(fs)),
          top_(std::move(top)),
          topdown_(topdown),
          followlinks_(followlinks),
          onerror_(std::move(onerror)) {}

    py::tuple next() {
        if (!started_) {
            started_ = true;
            PathArg top(top_);
            as_bytes_ = top.is_bytes();
            if (enter(top_, std::string(top.view())) && topdown_) return yielded(frames_.back());
        }
        while (!frames_.empty()) {
            Frame& f = frames_.back();
            // Top-down, the caller may have changed dirnames since it was yielded: read it now.
            if (f.next < static_cast<Py_ssize_t>(py::len(f.dirs))) {
                py::object name = f.dirs[py::int_(f.next++)];
                PathArg child(name);
                if (!followlinks_ &&
                    std::ranges::find(f.linked_dirs, child.view()) != f.linked_dirs.end())
                    continue;
                std::string cpath = join_path(f.cpath, child.view());
                py::object path = to_name(cpath, as_bytes_);
                if (enter(std::move(path), std::move(cpath)) && topdown_)
                    return yielded(frames_.back());
                continue;
            }
            Frame done = std::move(frames_.back());
            frames_.pop_back();
            if (!topdown_) return yielded(done);
        }
        throw py::stop_iteration();
    }

private:
    struct Frame {
        py::object path;
        std::string cpath;
        py::list dirs, files;
        std::vector<std::string> linked_dirs;
        Py_ssize_t next = 0;
    };

    static py::tuple yielded(const Frame& f) { return py::make_tuple(f.path, f.dirs, f.files); }

    // Lists `cpath` and pushes its frame; false (after onerror) when it cannot be listed.
    bool enter(py::object path, std::string cpath) {
        auto listing = nogil([&] { return list_for_walk(*fs_, cpath); });
        if (!listing) {
            if (!onerror_.is_none()) {
                try {
                    raise_error(listing.error(), path);
                } catch (py::error_already_set& e) {
                    onerror_(e.value());
                }
            }
            return false;
        }
        frames_.push_back(
            Frame{std::move(path), std::move(cpath), to_list(listing->dirs, as_bytes_),
                  to_list(listing->files, as_bytes_), std::move(listing->linked_dirs)});
        return true;
    }

    std::shared_ptr<Backend> fs_;
    py::object top_;
    bool topdown_, followlinks_;
    py::object onerror_;
    bool started_ = false, as_bytes_ = false;
    std::vector<Frame> frames_;
};

}  // namespace

py::object scandir(std::shared_ptr<Backend> fs, py::object path) {
    PathArg dir(path);
    std::string cdir(dir.view());
    auto entries = nogil([&] { return fs->readdir(cdir); });
    return py::cast(
        ScandirIterator(fs, path, cdir, dir.is_bytes(), take(std::move(entries), path)));
}

py::object walk(std::shared_ptr<Backend> fs, py::object top, bool topdown, py::object onerror,
                bool followlinks) {
    return py::cast(
        WalkIterator(std::move(fs), std::move(top), topdown, std::move(onerror), followlinks));
}

void bind_listing(py::module_& m) {
    using namespace py::literals;
    py::class_<PyDirEntry>(m, "DirEntry", "An entry of Tree.scandir(), like os.DirEntry")
        .def_property_readonly("name", &PyDirEntry::name)
        .def_property_readonly("path", &PyDirEntry::path)
        .def("inode", &PyDirEntry::inode)
        .def("is_dir", &PyDirEntry::is_dir, py::kw_only(), "follow_symlinks"_a = true)
        .def("is_file", &PyDirEntry::is_file, py::kw_only(), "follow_symlinks"_a = true)
        .def("is_symlink", &PyDirEntry::is_symlink)
        .def("stat", &PyDirEntry::stat, py::kw_only(), "follow_symlinks"_a = true)
        .def("__fspath__", &PyDirEntry::path)
        .def("__repr__", [](const PyDirEntry& e) {
            return "<DirEntry " + py::repr(e.name()).cast<std::string>() + ">";
        });
    py::class_<ScandirIterator>(m, "ScandirIterator")
        .def("__iter__", [](py::object self) { return self; })
        .def("__next__", &ScandirIterator::next)
        .def("close", &ScandirIterator::close)
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](ScandirIterator& it, py::args) { it.close(); });
    py::class_<WalkIterator>(m, "WalkIterator")
        .def("__iter__", [](py::object self) { return self; })
        .def("__next__", &WalkIterator::next);
}

}  // namespace packfs::python
