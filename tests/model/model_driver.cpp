// TEST ONLY. See model_driver.hpp.
#include "model/model_driver.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <set>

#include "packfs/path.hpp"
#include "support/host_backend.hpp"

namespace packfs::model {

namespace {

std::string outcome_text(bool ok, int code) {
    return ok ? std::string("ok") : std::string(errno_name(code));
}

template <class T>
std::string outcome_text(const Result<T>& r) {
    return outcome_text(r.has_value(), r ? 0 : r.error().code());
}

std::span<const std::byte> as_bytes_of(std::string_view s) {
    return std::as_bytes(std::span(s.data(), s.size()));
}

// Reads `length` bytes at `offset` (fewer at end of file), tolerating short reads.
Result<std::string> read_range(File& file, uint64_t offset, uint64_t length) {
    std::string out(length, '\0');
    std::size_t done = 0;
    do {  // at least one call: a zero-length read still reports EBADF/EISDIR
        std::span<std::byte> buf(reinterpret_cast<std::byte*>(out.data()) + done, length - done);
        auto n = file.pread(buf, offset + done);
        if (!n) return std::unexpected(n.error());
        if (*n == 0) break;
        done += *n;
    } while (done < length);
    out.resize(done);
    return out;
}

std::string hex_prefix(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size() && i < 16; ++i) {
        out += fmt::format("{:02x}", static_cast<unsigned char>(s[i]));
    }
    return out;
}

// Where two byte strings first differ, for a readable report.
std::string first_difference(std::string_view want, std::string_view got) {
    std::size_t i = 0;
    while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
    return fmt::format("sizes {} vs {}, first difference at byte {} (want {} got {})",
                       want.size(), got.size(), i, hex_prefix(want.substr(std::min(i, want.size()))),
                       hex_prefix(got.substr(std::min(i, got.size()))));
}

std::vector<std::string> user_xattrs(std::vector<std::string> names) {
    std::erase_if(names, [](const std::string& n) { return !n.starts_with("user."); });
    std::sort(names.begin(), names.end());
    return names;
}

bool mutates(const Op& op) {
    if (op_is_mutation(op.kind)) return true;
    if (op.kind == OpKind::open) {
        return (op.flags & O_ACCMODE) != O_RDONLY || (op.flags & (O_CREAT | O_TRUNC));
    }
    return false;
}

uint64_t env_u64(const char* name, uint64_t fallback) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return fallback;
    return std::strtoull(v, nullptr, 0);
}

}  // namespace

ModelDriver::ModelDriver(std::shared_ptr<Backend> backend, uint64_t seed, DriverConfig config)
    : backend_(std::move(backend)),
      seed_(seed),
      config_(std::move(config)),
      model_(config_.model),
      generator_(seed, config_.generator) {
    // A longer history in a failure report, to replay a mismatch by hand.
    if (const char* h = std::getenv("PACKFS_MODEL_HISTORY"); h && *h)
        config_.compare.history = std::strtoull(h, nullptr, 10);
}

bool ModelDriver::mismatch(std::string detail) {
    if (!result_.ok) return false;
    result_.ok = false;
    std::string r = fmt::format(
        "MODEL MISMATCH seed={} step={}\n  {}\n  replay: PACKFS_MODEL_SEED={} PACKFS_MODEL_OPS={}\n"
        "  last {} ops (oldest first):\n",
        seed_, step_, detail, seed_, step_ + 1, history_.size());
    uint64_t first = step_ + 1 - history_.size();
    for (std::size_t i = 0; i < history_.size(); ++i) {
        r += fmt::format("    #{} {}\n", first + i, history_[i]);
    }
    // The model's tree as it stands (after the op), small enough to read.
    auto entries = model_.entries();
    if (entries.size() <= 200) {
        r += "  model tree now:\n";
        for (const auto& e : entries) {
            auto v = model_.view(e.ino);
            r += fmt::format("    {} {} ino={} nlink={}{}\n", e.path, file_type_name(e.type),
                             e.ino, v.stat.nlink,
                             e.type == FileType::symlink ? fmt::format(" -> {:?}", v.content)
                                                         : std::string());
        }
    }
    result_.report = std::move(r);
    return false;
}

template <class A, class B>
bool ModelDriver::compare_outcome(const Result<A>& want, const Result<B>& got, int alt,
                                  std::string_view what) {
    if (want.has_value() && got.has_value()) return true;
    if (!want.has_value() && !got.has_value()) {
        const int g = got.error().code();
        if (g == want.error().code() || (alt != 0 && g == alt)) return true;
        if (config_.compare.tolerate && current_op_ != nullptr &&
            config_.compare.tolerate(*current_op_, want.error().code(), g)) {
            ++result_.tolerated;
            return true;
        }
    }
    std::string expected = outcome_text(want);
    if (!want && alt != 0) expected += fmt::format(" (or {})", errno_name(alt));
    return mismatch(fmt::format("{}: expected {}, got {}{}", what, expected, outcome_text(got),
                                got ? std::string() : " (" + got.error().message() + ")"));
}

bool ModelDriver::compare_stat(const ModelStat& want, const Stat& got, const ReferenceModel& m,
                               InoMap& inos, std::string_view what, bool check_times) {
    const auto& c = config_.compare;
    std::vector<std::string> diffs;
    if (want.type != got.type) {
        diffs.push_back(fmt::format("type {} vs {}", file_type_name(want.type),
                                    file_type_name(got.type)));
    }
    bool mode_defined = c.modes && (want.type != FileType::symlink || c.symlink_mode);
    if (mode_defined && want.mode != got.mode) {
        diffs.push_back(fmt::format("mode {:o} vs {:o}", want.mode, got.mode));
    }
    if (c.owners && (want.uid != got.uid || want.gid != got.gid)) {
        diffs.push_back(fmt::format("owner {}:{} vs {}:{}", want.uid, want.gid, got.uid, got.gid));
    }
    if ((want.type != FileType::directory || c.dir_nlink) && want.nlink != got.nlink) {
        diffs.push_back(fmt::format("nlink {} vs {}", want.nlink, got.nlink));
    }
    if (want.has_size && want.size != got.size) {
        diffs.push_back(fmt::format("size {} vs {}", want.size, got.size));
    }
    if ((want.type == FileType::char_device || want.type == FileType::block_device) &&
        want.rdev != got.rdev) {
        diffs.push_back(fmt::format("rdev {} vs {}", want.rdev, got.rdev));
    }
    if (check_times) {
        if (c.mtime && want.mtime && *want.mtime != got.mtime) {
            diffs.push_back(fmt::format("mtime {}.{:09} vs {}.{:09}", want.mtime->sec,
                                        want.mtime->nsec, got.mtime.sec, got.mtime.nsec));
        }
        if (c.atime && want.atime && *want.atime != got.atime) {
            diffs.push_back(fmt::format("atime {}.{:09} vs {}.{:09}", want.atime->sec,
                                        want.atime->nsec, got.atime.sec, got.atime.nsec));
        }
    }
    if (!diffs.empty()) {
        std::string all;
        for (const auto& d : diffs) all += (all.empty() ? "" : ", ") + d;
        return mismatch(fmt::format("{}: stat differs (expected vs got): {}", what, all));
    }
    // Inode relations: one backend inode per live model inode, and back.
    auto it = inos.model_to_backend.find(want.ino);
    if (it != inos.model_to_backend.end() && it->second != got.ino) {
        return mismatch(fmt::format("{}: inode number changed from {} to {} for one file", what,
                                    it->second, got.ino));
    }
    auto jt = inos.backend_to_model.find(got.ino);
    if (jt != inos.backend_to_model.end() && jt->second != want.ino &&
        m.inode_alive(jt->second)) {
        return mismatch(fmt::format(
            "{}: backend inode {} names two distinct files (model inodes {} and {})", what,
            got.ino, jt->second, want.ino));
    }
    inos.model_to_backend[want.ino] = got.ino;
    inos.backend_to_model[got.ino] = want.ino;
    return true;
}

// What `op` fails with on a writable copy of `frozen` (0 if it would succeed): a read-only
// backend may report that error instead of EROFS.
int ModelDriver::writable_errno(const Op& op, const ReferenceModel& frozen) {
    ReferenceModel m = frozen;
    m.set_read_only(false);
    auto code = [](const auto& r) { return r ? 0 : r.error().code(); };
    switch (op.kind) {
        case OpKind::open: return code(m.open(op.path, op.flags, op.mode));
        case OpKind::truncate: return code(m.truncate(op.path, op.length));
        case OpKind::mkdir: return code(m.mkdir(op.path, op.mode));
        case OpKind::rmdir: return code(m.rmdir(op.path));
        case OpKind::unlink: return code(m.unlink(op.path));
        case OpKind::rename: return code(m.rename(op.path, op.path2, op.rename_flags));
        case OpKind::symlink: return code(m.symlink(op.path2, op.path));
        case OpKind::link: return code(m.link(op.path, op.path2));
        case OpKind::mknod: return code(m.mknod(op.path, op.type, op.mode, op.rdev));
        case OpKind::chmod: return code(m.chmod(op.path, op.mode));
        case OpKind::chown: return code(m.chown(op.path, op.uid, op.gid, op.follow));
        case OpKind::utimens:
            return code(m.utimens(op.path, op.atime, op.mtime, op.follow));
        case OpKind::setxattr:
            return code(m.setxattr(op.path, op.name, op.data, op.xattr_mode));
        case OpKind::removexattr: return code(m.removexattr(op.path, op.name));
        default: return 0;
    }
}

bool ModelDriver::apply(const Op& op, Backend& fs, ReferenceModel& m, InoMap& inos) {
    const int ro_alt = (m.read_only() && mutates(op)) ? writable_errno(op, m) : 0;
    auto alt = [&] { return ro_alt != 0 ? ro_alt : m.alternative_errno(); };
    auto count = [&](bool ok) { ok ? ++result_.successes : ++result_.failures; };
    auto simple = [&](const Result<void>& want, const Result<void>& got) {
        count(want.has_value());
        return compare_outcome(want, got, alt(), "result");
    };

    switch (op.kind) {
        case OpKind::stat:
        case OpKind::lstat: {
            auto want = op.kind == OpKind::stat ? m.stat(op.path) : m.lstat(op.path);
            int a = alt();
            auto got = op.kind == OpKind::stat ? fs.stat(op.path) : fs.lstat(op.path);
            count(want.has_value());
            if (!compare_outcome(want, got, a, "result")) return false;
            return !want || !got || compare_stat(*want, *got, m, inos, "result");
        }
        case OpKind::readdir: {
            auto want = m.readdir(op.path);
            int a = alt();
            auto got = fs.readdir(op.path);
            count(want.has_value());
            if (!compare_outcome(want, got, a, "result")) return false;
            if (!want || !got) return true;
            std::vector<std::pair<std::string, FileType>> g;
            for (const auto& e : *got) g.emplace_back(e.name, e.type);
            std::sort(g.begin(), g.end());
            if (g != *want) {
                std::string ws, gs;
                for (const auto& [n, t] : *want) ws += fmt::format(" {}:{}", n, file_type_name(t));
                for (const auto& [n, t] : g) gs += fmt::format(" {}:{}", n, file_type_name(t));
                return mismatch(fmt::format("readdir entries differ: expected [{} ] got [{} ]", ws,
                                            gs));
            }
            return true;
        }
        case OpKind::readlink: {
            auto want = m.readlink(op.path);
            int a = alt();
            auto got = fs.readlink(op.path);
            count(want.has_value());
            if (!compare_outcome(want, got, a, "result")) return false;
            if (want && got && *want != *got) {
                return mismatch(fmt::format("readlink: expected {:?} got {:?}", *want, *got));
            }
            return true;
        }
        case OpKind::read_whole: {
            Result<std::string> want = [&]() -> Result<std::string> {
                auto h = m.open(op.path, O_RDONLY, 0);
                if (!h) return std::unexpected(h.error());
                auto data = m.pread(*h, 0, UINT64_MAX);
                (void)m.close(*h);
                return data;
            }();
            int a = alt();
            auto got = read_file(fs, op.path);
            count(want.has_value());
            if (!compare_outcome(want, got, a, "result")) return false;
            if (want && got && *want != *got) {
                return mismatch("read: content differs: " + first_difference(*want, *got));
            }
            return true;
        }
        case OpKind::getxattr: {
            auto want = m.getxattr(op.path, op.name);
            int a = alt();
            auto got = fs.getxattr(op.path, op.name);
            count(want.has_value());
            if (!compare_outcome(want, got, a, "result")) return false;
            if (want && got && *want != *got) {
                return mismatch(fmt::format("getxattr: expected {:?} got {:?}", *want, *got));
            }
            return true;
        }
        case OpKind::listxattr: {
            auto want = m.listxattr(op.path);
            int a = alt();
            auto got = fs.listxattr(op.path);
            count(want.has_value());
            if (!compare_outcome(want, got, a, "result")) return false;
            if (want && got && *want != user_xattrs(*got)) {
                return mismatch(fmt::format("listxattr: expected [{}] got [{}]",
                                            fmt::join(*want, ","), fmt::join(*got, ",")));
            }
            return true;
        }
        case OpKind::open: {
            auto want = m.open(op.path, op.flags, op.mode);
            int a = alt();
            auto got = fs.open(op.path, op.flags, op.mode);
            count(want.has_value());
            if (!compare_outcome(want, got, a, "result")) return false;
            if (want && got) {
                if (!history_.empty()) history_.back() += fmt::format(" -> h{}", *want);
                if (m.read_only()) {
                    (void)m.close(*want);  // snapshot opens are not kept
                } else {
                    handles_[*want] = std::move(*got);
                    // Its node too, for copy_range (held while the handle is open), where
                    // the backend has node calls.
                    auto entry = lookup_path(fs, op.path);
                    if (entry) {
                        handle_nodes_.insert_or_assign(*want, HeldNode(fs, entry->node));
                    } else if (entry.error().code() != ENOTSUP) {
                        return mismatch("no node for the file just opened: " +
                                        entry.error().message());
                    }
                }
            }
            return true;
        }
        case OpKind::close: {
            count(true);
            (void)m.close(op.handle);
            handle_nodes_.erase(op.handle);
            handles_.erase(op.handle);
            return true;
        }
        case OpKind::pread: {
            auto want = m.pread(op.handle, op.offset, op.length);
            int a = alt();
            auto got = read_range(*handles_.at(op.handle), op.offset, op.length);
            count(want.has_value());
            if (!compare_outcome(want, got, a, "result")) return false;
            if (want && got && *want != *got) {
                return mismatch("pread: data differs: " + first_difference(*want, *got));
            }
            return true;
        }
        case OpKind::pwrite: {
            auto want = m.pwrite(op.handle, op.offset, op.data);
            int a = alt();
            auto got = handles_.at(op.handle)->pwrite(as_bytes_of(op.data), op.offset);
            count(want.has_value());
            if (!compare_outcome(want, got, a, "result")) return false;
            if (want && got && *want != *got) {
                return mismatch(fmt::format("pwrite: returned {} for {} bytes", *got, *want));
            }
            return true;
        }
        case OpKind::ftruncate:
            return simple(m.ftruncate(op.handle, op.length),
                          handles_.at(op.handle)->truncate(op.length));
        case OpKind::copy_range: {
            // As the kernel does: the descriptors' modes checked first (a node has none), then
            // the call by node.
            bool modes_ok = true;
            for (const auto& h : m.handles()) {
                if (h.id == op.handle && !h.readable) modes_ok = false;
                if (h.id == op.handle2 && (!h.writable || h.append)) modes_ok = false;
            }
            auto want = m.copy_range(op.handle, op.offset, op.handle2, op.offset2, op.length);
            int a = alt();
            // (Without node calls: the handles' bytes.)
            auto from = handle_nodes_.find(op.handle), to = handle_nodes_.find(op.handle2);
            Result<uint64_t> got = !modes_ok ? fail(EBADF, "copy_file_range")
                                   : from != handle_nodes_.end() && to != handle_nodes_.end()
                                       ? fs.copy_range(from->second.get(), op.offset,
                                                       to->second.get(), op.offset2, op.length)
                                       : (config_.copy_handles ? config_.copy_handles : copy_bytes)(
                                             *handles_.at(op.handle), op.offset,
                                             *handles_.at(op.handle2), op.offset2, op.length);
            count(want.has_value());
            if (!compare_outcome(want, got, a, "result")) return false;
            if (want && got && *want != *got)
                return mismatch(fmt::format("copy_range: copied {} bytes, not {}", *got, *want));
            return true;
        }
        case OpKind::fstat: {
            auto want = m.fstat(op.handle);
            auto got = handles_.at(op.handle)->fstat();
            count(want.has_value());
            if (!compare_outcome(want, got, 0, "result")) return false;
            return !want || !got || compare_stat(*want, *got, m, inos, "fstat");
        }
        case OpKind::truncate:
            return simple(m.truncate(op.path, op.length), fs.truncate(op.path, op.length));
        case OpKind::mkdir: return simple(m.mkdir(op.path, op.mode), fs.mkdir(op.path, op.mode));
        case OpKind::rmdir: return simple(m.rmdir(op.path), fs.rmdir(op.path));
        case OpKind::unlink: return simple(m.unlink(op.path), fs.unlink(op.path));
        case OpKind::rename:
            return simple(m.rename(op.path, op.path2, op.rename_flags),
                          fs.rename(op.path, op.path2, op.rename_flags));
        case OpKind::symlink:
            return simple(m.symlink(op.path2, op.path), fs.symlink(op.path2, op.path));
        case OpKind::link: return simple(m.link(op.path, op.path2), fs.link(op.path, op.path2));
        case OpKind::mknod:
            return simple(m.mknod(op.path, op.type, op.mode, op.rdev),
                          fs.mknod(op.path, op.type, op.mode, op.rdev));
        case OpKind::chmod: return simple(m.chmod(op.path, op.mode), fs.chmod(op.path, op.mode));
        case OpKind::chown:
            return simple(m.chown(op.path, op.uid, op.gid, op.follow),
                          fs.chown(op.path, op.uid, op.gid, op.follow));
        case OpKind::utimens:
            return simple(m.utimens(op.path, op.atime, op.mtime, op.follow),
                          fs.utimens(op.path, op.atime, op.mtime, op.follow));
        case OpKind::setxattr:
            return simple(m.setxattr(op.path, op.name, op.data, op.xattr_mode),
                          fs.setxattr(op.path, op.name, op.data, op.xattr_mode));
        case OpKind::removexattr:
            return simple(m.removexattr(op.path, op.name), fs.removexattr(op.path, op.name));
        case OpKind::snapshot:
        case OpKind::drop_snapshot: break;
    }
    return true;
}

// After a live op: the paths it named look the same on both sides, and so does the handle.
bool ModelDriver::post_check(const Op& op) {
    std::vector<std::string> paths;
    switch (op.kind) {
        case OpKind::rename:
        case OpKind::link: paths = {op.path, op.path2}; break;
        case OpKind::pread:
        case OpKind::pwrite:
        case OpKind::ftruncate: {
            auto want = model_.fstat(op.handle);
            auto got = handles_.at(op.handle)->fstat();
            if (!compare_outcome(want, got, 0, "fstat after the op")) return false;
            return compare_stat(*want, *got, model_, inos_, "fstat after the op");
        }
        case OpKind::copy_range: {  // the destination, and its bytes
            auto want = model_.fstat(op.handle2);
            auto got = handles_.at(op.handle2)->fstat();
            if (!compare_outcome(want, got, 0, "fstat after the op")) return false;
            if (!compare_stat(*want, *got, model_, inos_, "fstat after the op")) return false;
            auto bytes = model_.pread(op.handle2, 0, want->size + 1);
            if (!bytes) return true;  // a write-only handle: checked at the next read
            auto read = read_range(*handles_.at(op.handle2), 0, want->size + 1);
            if (!read) return mismatch("read after copy_range: " + read.error().message());
            if (*read != *bytes)
                return mismatch("copy_range: destination differs: " +
                                first_difference(*bytes, *read));
            return true;
        }
        case OpKind::close:
        case OpKind::fstat:
        case OpKind::snapshot:
        case OpKind::drop_snapshot: return true;
        default: paths = {op.path};
    }
    for (const auto& p : paths) {
        auto want = model_.lstat(p);
        auto got = backend_->lstat(p);
        std::string what = fmt::format("lstat {:?} after the op", p);
        if (!compare_outcome(want, got, 0, what)) return false;
        if (want && got && !compare_stat(*want, *got, model_, inos_, what)) return false;
    }
    return true;
}

bool ModelDriver::check_tree(Backend& fs, ReferenceModel& m, InoMap& inos, std::string_view what,
                             bool times) {
    // Both sides' metadata first, before any read can move an access time.
    struct Seen {
        std::string path;
        Stat st;
    };
    auto model_entries = m.entries();
    std::vector<ReferenceModel::NodeView> views;
    for (const auto& e : model_entries) views.push_back(m.view(e.ino));

    std::vector<Seen> seen;
    auto root = fs.lstat("/");
    if (!root) return mismatch(fmt::format("{}: lstat / failed: {}", what, root.error().message()));
    std::vector<Seen> stack{{"/", *root}};
    while (!stack.empty()) {
        Seen s = std::move(stack.back());
        stack.pop_back();
        seen.push_back(s);
        if (s.st.type != FileType::directory) continue;
        auto list = fs.readdir(s.path);
        if (!list) {
            return mismatch(fmt::format("{}: readdir {:?} failed: {}", what, s.path,
                                        list.error().message()));
        }
        std::sort(list->begin(), list->end(),
                  [](const DirEntry& a, const DirEntry& b) { return a.name > b.name; });
        for (const auto& e : *list) {
            std::string child = path_join(s.path, e.name);
            auto st = fs.lstat(child);
            if (!st) {
                return mismatch(fmt::format("{}: lstat {:?} of a listed entry failed: {}", what,
                                            child, st.error().message()));
            }
            if (st->ino != e.ino || st->type != e.type) {
                return mismatch(fmt::format(
                    "{}: readdir of {:?} says ino {} type {}, lstat says ino {} type {}", what,
                    child, e.ino, file_type_name(e.type), st->ino, file_type_name(st->type)));
            }
            stack.push_back({child, *st});
        }
    }
    for (std::size_t i = 0; i < std::max(seen.size(), model_entries.size()); ++i) {
        if (i >= seen.size() || i >= model_entries.size() ||
            seen[i].path != model_entries[i].path) {
            return mismatch(fmt::format(
                "{}: trees differ at entry {}: expected {:?}, got {:?}", what, i,
                i < model_entries.size() ? model_entries[i].path : "<end>",
                i < seen.size() ? seen[i].path : "<end>"));
        }
    }
    // Every inode relation of this tree on its own (hard links share an ino, nothing else).
    InoMap local;
    for (std::size_t i = 0; i < seen.size(); ++i) {
        std::string where = fmt::format("{} {:?}", what, seen[i].path);
        if (!compare_stat(views[i].stat, seen[i].st, m, local, where, times)) return false;
        if (!compare_stat(views[i].stat, seen[i].st, m, inos, where, times)) return false;
    }
    // Contents, link targets, xattrs.
    for (std::size_t i = 0; i < seen.size(); ++i) {
        const std::string& p = seen[i].path;
        const auto& v = views[i];
        if (v.stat.type == FileType::directory) (void)m.readdir(p);
        if (v.stat.type == FileType::regular) {
            if (auto h = m.open(p, O_RDONLY, 0)) {
                (void)m.pread(*h, 0, 0);
                (void)m.close(*h);
            }
            auto got = read_file(fs, p);
            if (!got) {
                return mismatch(fmt::format("{}: reading {:?} failed: {}", what, p,
                                            got.error().message()));
            }
            if (*got != v.content) {
                return mismatch(fmt::format("{}: content of {:?} differs: {}", what, p,
                                            first_difference(v.content, *got)));
            }
        }
        if (v.stat.type == FileType::symlink) {
            (void)m.readlink(p);
            auto got = fs.readlink(p);
            if (!got || *got != v.content) {
                return mismatch(fmt::format("{}: readlink {:?}: expected {:?} got {}", what, p,
                                            v.content, got ? fmt::format("{:?}", *got)
                                                           : got.error().message()));
            }
        }
        auto names = fs.listxattr(p);
        if (!names) {
            return mismatch(fmt::format("{}: listxattr {:?} failed: {}", what, p,
                                        names.error().message()));
        }
        std::map<std::string, std::string> got_xattrs;
        for (const auto& n : user_xattrs(*names)) {
            auto value = fs.getxattr(p, n);
            if (!value) {
                return mismatch(fmt::format("{}: getxattr {:?} {} failed: {}", what, p, n,
                                            value.error().message()));
            }
            got_xattrs[n] = *value;
        }
        if (got_xattrs != v.xattrs) {
            std::string ws, gs;
            for (const auto& [k, val] : v.xattrs) ws += fmt::format(" {}={:?}", k, val);
            for (const auto& [k, val] : got_xattrs) gs += fmt::format(" {}={:?}", k, val);
            return mismatch(fmt::format("{}: xattrs of {:?} differ: expected [{} ] got [{} ]",
                                        what, p, ws, gs));
        }
    }
    return true;
}

bool ModelDriver::step(const Op& op) {
    current_op_ = &op;
    result_.per_op[op_kind_name(op.kind)]++;
    if (op.kind == OpKind::snapshot) {
        auto snap = backend_->snapshot();
        if (!snap) return mismatch("snapshot failed: " + snap.error().message());
        if (!(*snap)->read_only()) return mismatch("a snapshot says it is not read-only");
        ReferenceModel frozen = model_.frozen_copy();
        snapshots_.push_back(Snapshot{std::move(*snap), frozen, frozen, step_, {}});
        ++result_.snapshots_taken;
        return true;
    }
    if (op.kind == OpKind::drop_snapshot) {
        snapshots_.erase(snapshots_.begin() + op.target);
        return true;
    }
    if (op.target >= 0) {
        Snapshot& s = snapshots_.at(static_cast<std::size_t>(op.target));
        return apply(op, *s.fs, s.model, s.inos);
    }
    return apply(op, *backend_, model_, inos_) && post_check(op);
}

bool ModelDriver::rebase() {
    for (const auto& h : model_.handles()) (void)model_.close(h.id);
    handle_nodes_.clear();
    handles_.clear();
    snapshots_.clear();
    std::shared_ptr<Backend> next = config_.rebase.make(std::move(backend_));
    if (!next) return mismatch("rebase: could not make the new backend");
    backend_ = std::move(next);
    inos_ = {};
    ++result_.rebases;
    history_.push_back("(rebase, then full tree check)");
    if (history_.size() > config_.compare.history) history_.pop_front();
    return check_tree(*backend_, model_, inos_, "tree after rebase", true);
}

RunResult ModelDriver::run(uint64_t ops) {
    for (step_ = 0; step_ < ops && result_.ok; ++step_) {
        std::vector<const ReferenceModel*> snaps;
        for (const auto& s : snapshots_) snaps.push_back(&s.model);
        Op op = generator_.next(model_, snaps);
        history_.push_back(op.describe());
        if (history_.size() > config_.compare.history) history_.pop_front();
        if (!step(op)) break;
        if (config_.rebase.every && (step_ + 1) % config_.rebase.every == 0 && !rebase()) break;
        if ((step_ + 1) % config_.compare.tree_check_interval == 0) {
            history_.push_back("(full tree check)");
            if (history_.size() > config_.compare.history) history_.pop_front();
            if (!check_tree(*backend_, model_, inos_, "tree", true)) break;
        }
    }
    result_.steps = step_;
    if (result_.ok) {
        history_.push_back("(final tree check)");
        (void)check_tree(*backend_, model_, inos_, "final tree", true);
    }
    for (std::size_t i = 0; result_.ok && i < snapshots_.size(); ++i) {
        history_.push_back(fmt::format("(final check of snapshot {})", i));
        if (history_.size() > config_.compare.history) history_.pop_front();
        Snapshot& s = snapshots_[i];
        ReferenceModel expected = s.pristine;
        (void)check_tree(*s.fs, expected, s.inos,
                         fmt::format("snapshot {} (taken at step {})", i, s.step), true);
    }
    handle_nodes_.clear();
    handles_.clear();
    return result_;
}

DriverConfig kernel_driver_config() {
    DriverConfig config;
    // Copies by the kernel's copy_file_range (through a FUSE mount: its COPY_FILE_RANGE).
    config.copy_handles = testing::host_copy_file_range;
    config.generator.snapshots = false;
    config.generator.special_files = false;
    config.model.linux_user_xattrs = true;
    config.generator.suid_bits = false;
    // utimensat(2) with both times UTIME_OMIT returns 0 without looking the path up.
    config.generator.utimens_both_omit = false;
    // The host backend's trailing-slash handling differs from the kernel's for readlink and
    // the xattr calls (e.g. readlink "loop/" gives ENOENT where Linux says ELOOP).
    config.generator.trailing_slashes = false;
    // The host backend opens both parents before linkat(2), so when both paths are bad it
    // reports the new path's error where Linux reports the existing path's first.
    config.compare.tolerate = [](const Op& op, int expected, int got) {
        auto lookup_error = [](int e) { return e == ENOENT || e == ENOTDIR || e == ELOOP; };
        return op.kind == OpKind::link && lookup_error(expected) && lookup_error(got);
    };
    // The host backend looks at paths before acting (which reads symlinks, moving their
    // access time), and relatime moves it on reads: only mtime is compared.
    config.compare.atime = false;
    return config;
}

std::vector<RunPlanItem> run_plan_from_env(uint64_t default_ops,
                                           const std::vector<uint64_t>& fixed_seeds) {
    uint64_t total = env_u64("PACKFS_MODEL_OPS", 0);
    if (total == 0) {
        total = default_ops;
        const char* san = std::getenv("PACKFS_SANITIZER_RUN");
        if (san != nullptr && std::string_view(san) == "1") total /= 5;
    }
    if (const char* s = std::getenv("PACKFS_MODEL_SEED"); s != nullptr && *s != '\0') {
        return {{std::strtoull(s, nullptr, 0), total}};
    }
    std::vector<uint64_t> seeds = fixed_seeds;
    std::random_device rd;
    seeds.push_back((static_cast<uint64_t>(rd()) << 32) | rd());
    std::vector<RunPlanItem> plan;
    for (uint64_t seed : seeds) plan.push_back({seed, std::max<uint64_t>(1, total / seeds.size())});
    return plan;
}

}  // namespace packfs::model
