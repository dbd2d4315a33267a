// Shared by the volume's crash, recovery, compaction and fault tests: a seeded generator of
// simple, self-checkable operations (each one exactly one journaled mutation), their
// application to any Backend, and a capture of a tree (paths, types, modes, sizes, contents,
// symlink targets, xattrs) with a readable diff, so a volume can be compared with the same
// operations replayed on a plain mem backend.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "packfs/backend.hpp"
#include "packfs/mem.hpp"
#include "support/files.hpp"

namespace packfs::volume_test {

inline bool sanitizer_run() {
    const char* v = std::getenv("PACKFS_SANITIZER_RUN");
    return v && *v && std::string(v) != "0";
}

// An environment variable as a count, or `fallback`.
inline uint64_t env_count(const char* name, uint64_t fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    return std::strtoull(v, nullptr, 10);
}

// splitmix64: small, fast and the same on every platform.
struct Rng {
    uint64_t state;
    explicit Rng(uint64_t seed) : state(seed) {}
    uint64_t next() {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    uint64_t below(uint64_t n) { return n == 0 ? 0 : next() % n; }
    uint64_t between(uint64_t lo, uint64_t hi) { return lo + below(hi - lo + 1); }
};

// ---- the tree as values ------------------------------------------------------------------

struct Node {
    FileType type = FileType::regular;
    uint32_t mode = 0;
    uint64_t size = 0;
    std::string data;  // a file's contents, a symlink's target
    std::map<std::string, std::string> xattrs;
    friend bool operator==(const Node&, const Node&) = default;
};

// Paths relative to the captured root ("/f1", "/d2/f3"); the root itself is not included.
using Tree = std::map<std::string, Node>;

inline std::string join_path(const std::string& root, const std::string& rel) {
    if (root.empty() || root == "/") return rel;
    return root + rel;
}

inline Result<void> capture_into(Backend& fs, const std::string& root, const std::string& rel,
                                 Tree& out) {
    auto entries = fs.readdir(rel.empty() ? (root.empty() ? "/" : root) : join_path(root, rel));
    if (!entries) return std::unexpected(entries.error());
    for (const auto& e : *entries) {
        const std::string r = rel + "/" + e.name;
        const std::string p = join_path(root, r);
        auto st = fs.lstat(p);
        if (!st) return std::unexpected(st.error());
        Node n;
        n.type = st->type;
        n.mode = st->mode;
        n.size = st->type == FileType::directory ? 0 : st->size;
        if (st->type == FileType::regular) {
            auto data = read_file(fs, p);
            if (!data) return std::unexpected(data.error());
            n.data = std::move(*data);
        } else if (st->type == FileType::symlink) {
            auto target = fs.readlink(p);
            if (!target) return std::unexpected(target.error());
            n.data = std::move(*target);
        }
        auto names = fs.listxattr(p);
        if (!names) return std::unexpected(names.error());
        for (const auto& name : *names) {
            auto value = fs.getxattr(p, name);
            if (!value) return std::unexpected(value.error());
            n.xattrs[name] = std::move(*value);
        }
        const bool dir = n.type == FileType::directory;
        out.emplace(r, std::move(n));
        if (dir) {
            if (auto ok = capture_into(fs, root, r, out); !ok) return ok;
        }
    }
    return {};
}

// Everything under `root` ("" or "/" for the whole tree).
inline Result<Tree> capture(Backend& fs, const std::string& root = "") {
    Tree t;
    if (auto ok = capture_into(fs, root == "/" ? "" : root, "", t); !ok)
        return std::unexpected(ok.error());
    return t;
}

inline std::string describe_node(const Node& n) {
    std::string x;
    for (const auto& [k, v] : n.xattrs) x += fmt::format(" {}={}", k, v.size());
    return fmt::format("{} mode {:o} size {}{}", file_type_name(n.type), n.mode, n.size,
                       x.empty() ? "" : " xattrs:" + x);
}

// "" when equal; else up to `limit` differences, one a line.
inline std::string diff(const Tree& expected, const Tree& actual, int limit = 8) {
    std::string out;
    int shown = 0;
    auto note = [&](const std::string& line) {
        if (shown++ < limit) out += line + "\n";
    };
    for (const auto& [path, node] : expected) {
        auto it = actual.find(path);
        if (it == actual.end()) {
            note(fmt::format("  missing {} ({})", path, describe_node(node)));
        } else if (!(it->second == node)) {
            std::string what = fmt::format("  differs {}: expected {}, got {}", path,
                                           describe_node(node), describe_node(it->second));
            if (node.data != it->second.data && node.size == it->second.size)
                what += " (same size, other bytes)";
            note(what);
        }
    }
    for (const auto& [path, node] : actual)
        if (!expected.contains(path)) note(fmt::format("  extra {} ({})", path, describe_node(node)));
    if (shown > limit) out += fmt::format("  ... {} differences in all\n", shown);
    return out;
}

// Recreates `tree` under `root` of `fs` (the root made first when it is not "/").
inline Result<void> materialize(Backend& fs, const std::string& root, const Tree& tree) {
    if (!root.empty() && root != "/") {
        if (auto ok = fs.mkdir(root, 0755); !ok) return ok;
    }
    for (const auto& [rel, n] : tree) {  // sorted: a directory comes before what it holds
        const std::string p = join_path(root, rel);
        if (n.type == FileType::directory) {
            if (auto ok = fs.mkdir(p, n.mode); !ok) return ok;
        } else if (n.type == FileType::regular) {
            if (auto ok = write_file(fs, p, n.data, n.mode); !ok) return ok;
        } else if (n.type == FileType::symlink) {
            if (auto ok = fs.symlink(n.data, p); !ok) return ok;
        } else {
            return fail(ENOTSUP, "materialize", p);
        }
        if (n.type != FileType::symlink) {
            if (auto ok = fs.chmod(p, n.mode); !ok) return ok;
        }
        for (const auto& [k, v] : n.xattrs) {
            if (auto ok = fs.setxattr(p, k, v); !ok) return ok;
        }
    }
    return {};
}

// ---- operations --------------------------------------------------------------------------

enum class OpKind : uint8_t {
    create, write, append, truncate, mkdir, rmdir, rename_file, rename_dir, unlink, setxattr, chmod
};

struct Op {
    OpKind kind = OpKind::create;
    std::string path, path2;
    uint64_t offset = 0;  // write: offset; truncate: size
    uint64_t size = 0;    // write, append: bytes
    uint64_t data_seed = 0;
    uint32_t mode = 0;
    std::string name, value;  // setxattr
};

inline std::string op_data(const Op& op) {
    std::string s(op.size, '\0');
    Rng r(op.data_seed);
    for (std::size_t i = 0; i < s.size(); i += 8) {
        const uint64_t x = r.next();
        for (std::size_t j = 0; j < 8 && i + j < s.size(); ++j) s[i + j] = char(x >> (8 * j));
    }
    return s;
}

inline std::string describe(const Op& op) {
    switch (op.kind) {
        case OpKind::create: return fmt::format("create {} mode {:o}", op.path, op.mode);
        case OpKind::write: return fmt::format("write {} @{} +{}", op.path, op.offset, op.size);
        case OpKind::append: return fmt::format("append {} +{}", op.path, op.size);
        case OpKind::truncate: return fmt::format("truncate {} to {}", op.path, op.offset);
        case OpKind::mkdir: return fmt::format("mkdir {}", op.path);
        case OpKind::rmdir: return fmt::format("rmdir {}", op.path);
        case OpKind::rename_file:
        case OpKind::rename_dir: return fmt::format("rename {} -> {}", op.path, op.path2);
        case OpKind::unlink: return fmt::format("unlink {}", op.path);
        case OpKind::setxattr: return fmt::format("setxattr {} {}", op.path, op.name);
        case OpKind::chmod: return fmt::format("chmod {} {:o}", op.path, op.mode);
    }
    return "?";
}

// Makes the operation's one mutation on `fs`.
inline Result<void> apply_op(Backend& fs, const Op& op) {
    switch (op.kind) {
        case OpKind::create: {
            auto f = fs.open(op.path, O_CREAT | O_EXCL | O_WRONLY, op.mode);
            if (!f) return std::unexpected(f.error());
            return {};
        }
        case OpKind::write:
        case OpKind::append: {
            const bool append = op.kind == OpKind::append;
            auto f = fs.open(op.path, append ? O_WRONLY | O_APPEND : O_WRONLY);
            if (!f) return std::unexpected(f.error());
            const std::string data = op_data(op);
            auto n = (*f)->pwrite(std::as_bytes(std::span(data.data(), data.size())),
                                  append ? 0 : op.offset);
            if (!n) return std::unexpected(n.error());
            if (*n != data.size()) return fail(EIO, "short write", op.path);
            return {};
        }
        case OpKind::truncate: return fs.truncate(op.path, op.offset);
        case OpKind::mkdir: return fs.mkdir(op.path, 0755);
        case OpKind::rmdir: return fs.rmdir(op.path);
        case OpKind::rename_file:
        case OpKind::rename_dir: return fs.rename(op.path, op.path2);
        case OpKind::unlink: return fs.unlink(op.path);
        case OpKind::setxattr: return fs.setxattr(op.path, op.name, op.value);
        case OpKind::chmod: return fs.chmod(op.path, op.mode);
    }
    return fail(EINVAL, "apply_op");
}

// A seeded sequence of operations under `root` ("" or "/t3"), every one valid in the state
// the ones before it leave (the generator keeps its own small model of names and sizes), so
// the same seed gives the same sequence on any backend. The tree stays small: at most about
// 40 files of at most 24 KiB in at most 6 directories (one level) plus the root.
class OpGen {
public:
    OpGen(uint64_t seed, std::string root) : rng_(seed), root_(std::move(root)) {}

    uint64_t count() const noexcept { return count_; }  // ops generated so far

    Op next() {
        ++count_;
        for (;;) {
            Op op;
            op.data_seed = rng_.next();
            const uint64_t pick = rng_.below(100);
            if (pick < 14) {
                if (files_.size() >= 40) continue;
                op.kind = OpKind::create;
                op.path = location() + fmt::format("/f{}", fresh_++);
                static constexpr uint32_t kModes[] = {0644, 0600, 0755, 0640};
                op.mode = kModes[rng_.below(4)];
                files_[op.path] = 0;
            } else if (pick < 38) {
                if (files_.empty()) continue;
                auto& [path, size] = some_file();
                op.path = path;
                op.size = rng_.below(8) == 0 ? rng_.between(2048, 8192) : rng_.between(1, 1500);
                op.offset = rng_.below(size + 64);
                if (op.offset + op.size > kMaxFile) continue;
                op.kind = OpKind::write;
                size = std::max(size, op.offset + op.size);
            } else if (pick < 50) {
                if (files_.empty()) continue;
                auto& [path, size] = some_file();
                op.size = rng_.between(1, 1024);
                if (size + op.size > kMaxFile) continue;
                op.kind = OpKind::append;
                op.path = path;
                size += op.size;
            } else if (pick < 58) {
                if (files_.empty()) continue;
                auto& [path, size] = some_file();
                op.kind = OpKind::truncate;
                op.path = path;
                op.offset = rng_.below(size + 300);
                size = op.offset;
            } else if (pick < 62) {
                if (dirs_.size() >= 6) continue;
                op.kind = OpKind::mkdir;
                op.path = root_ + fmt::format("/d{}", fresh_++);
                dirs_.push_back(op.path);
            } else if (pick < 64) {
                if (dirs_.empty()) continue;
                const std::size_t i = rng_.below(dirs_.size());
                if (holds_files(dirs_[i])) continue;
                op.kind = OpKind::rmdir;
                op.path = dirs_[i];
                dirs_.erase(dirs_.begin() + long(i));
            } else if (pick < 74) {
                if (files_.empty()) continue;
                const std::string from = some_file().first;
                std::string to;
                if (files_.size() > 1 && rng_.below(3) == 0) {
                    to = some_file().first;  // over an existing file
                    if (to == from) continue;
                } else {
                    to = location() + fmt::format("/f{}", fresh_++);
                }
                op.kind = OpKind::rename_file;
                op.path = from;
                op.path2 = to;
                const uint64_t size = files_[from];
                files_.erase(from);
                files_[to] = size;
            } else if (pick < 77) {
                if (dirs_.empty()) continue;
                const std::size_t i = rng_.below(dirs_.size());
                op.kind = OpKind::rename_dir;
                op.path = dirs_[i];
                op.path2 = root_ + fmt::format("/d{}", fresh_++);
                std::map<std::string, uint64_t> moved;
                for (auto it = files_.begin(); it != files_.end();) {
                    if (it->first.starts_with(op.path + "/")) {
                        moved[op.path2 + it->first.substr(op.path.size())] = it->second;
                        it = files_.erase(it);
                    } else {
                        ++it;
                    }
                }
                files_.merge(moved);
                dirs_[i] = op.path2;
            } else if (pick < 87) {
                if (files_.size() < 6) continue;
                op.kind = OpKind::unlink;
                op.path = some_file().first;
                files_.erase(op.path);
            } else if (pick < 95) {
                if (files_.empty() && dirs_.empty()) continue;
                op.kind = OpKind::setxattr;
                op.path = (dirs_.empty() || rng_.below(4) != 0) && !files_.empty()
                              ? some_file().first
                              : dirs_[rng_.below(dirs_.size())];
                op.name = fmt::format("user.x{}", rng_.below(4));
                op.value = fmt::format("v{}-{}", count_, std::string(rng_.below(40), 'x'));
            } else {
                if (files_.empty()) continue;
                op.kind = OpKind::chmod;
                op.path = some_file().first;
                static constexpr uint32_t kModes[] = {0644, 0600, 0755, 0444, 0700};
                op.mode = kModes[rng_.below(5)];
            }
            return op;
        }
    }

private:
    static constexpr uint64_t kMaxFile = 24 * 1024;

    std::string location() {
        const std::size_t i = rng_.below(dirs_.size() + 1);
        return i == dirs_.size() ? root_ : dirs_[i];
    }
    std::pair<const std::string, uint64_t>& some_file() {
        auto it = files_.begin();
        std::advance(it, long(rng_.below(files_.size())));
        return *it;
    }
    bool holds_files(const std::string& dir) const {
        auto it = files_.lower_bound(dir + "/");
        return it != files_.end() && it->first.starts_with(dir + "/");
    }

    Rng rng_;
    std::string root_;
    uint64_t count_ = 0;
    uint64_t fresh_ = 0;
    std::map<std::string, uint64_t> files_;  // path -> size
    std::vector<std::string> dirs_;
};

// The ops of one generator, kept so that any op can be looked up by its number (1-based).
class OpLog {
public:
    OpLog(uint64_t seed, std::string root) : gen_(seed, std::move(root)) {}
    const Op& at(uint64_t n) {
        while (ops_.size() < n) ops_.push_back(gen_.next());
        return ops_[n - 1];
    }

private:
    OpGen gen_;
    std::vector<Op> ops_;
};

// Every regular file of the volume directory and its bytes (to prove a check changed nothing).
inline std::map<std::string, std::string> dir_bytes(const std::filesystem::path& dir) {
    std::map<std::string, std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.is_regular_file()) out[e.path().filename().string()] = test_support::slurp(e.path());
    return out;
}

// The names in a directory, sorted.
inline std::vector<std::string> dir_names(const std::filesystem::path& dir) {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

// A copy of a volume directory (regular files only, which is all a volume holds).
inline void copy_dir(const std::filesystem::path& from, const std::filesystem::path& to) {
    std::filesystem::create_directories(to);
    for (const auto& e : std::filesystem::directory_iterator(from))
        if (e.is_regular_file())
            std::filesystem::copy_file(e.path(), to / e.path().filename(),
                                       std::filesystem::copy_options::overwrite_existing);
}

}  // namespace packfs::volume_test
