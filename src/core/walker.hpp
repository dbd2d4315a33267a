// The one path walker (DESIGN §4): turns a normal path into node steps over any tree that can
// answer "the entry `name` of directory d" and "the target of symlink s". Every backend's path
// API is derived from its nodes through this walk (path_api.hpp), so symlink following, "..",
// trailing slashes and the errno order the conformance suite pins are written once.
//
// Rules (Linux's, on a virtual tree):
// - The API's paths are normal (path.hpp): "." and ".." appear only inside symlink targets.
//   ".." there pops the directories walked (the walk's own record, so a tree without parent
//   pointers walks it too); at the root it stays at the root, or is EXDEV under Links::beneath.
// - A symlink met before the last component, or as the last when it is to be followed, is
//   replaced by its target: at most 40 follows in one walk (ELOOP). An absolute target starts
//   again at the root (in_root: the tree is its own "/"), or is EXDEV (beneath); under
//   Links::none following any symlink is ELOOP.
// - A component that is not a directory before the last is ENOTDIR; a missing one ENOENT; a
//   component of a target over 255 bytes ENAMETOOLONG.
//
// The tree is reached through `Ops`, a small value the caller makes:
//     using NodeT = ...;      cheap to copy; valid for the walk (a backend's node, a pointer
//                             inside an RCU read section, a pack record)
//     Result<NodeT> root();
//     Result<std::optional<Step<NodeT>>> lookup(const NodeT& dir, std::string_view name);
//     Result<std::string> readlink(const NodeT& link);   (or anything a string_view binds to)
//     void release(const NodeT&);   a node the walk no longer needs (forget one reference)
// and, optionally, for the common case that needs none of the rules above:
//     bool fast_lookup(const NodeT& dir, std::string_view name, Step<NodeT>& out);
//   true with an entry that exists (in `out`, answered cheaply), false for anything else
//   (missing, an error, a case the tree would rather answer slowly). `name` is always a plain
//   name (1 to 255 bytes, no '/' or NUL, not "." or ".."): the tree need not check it. A walk first
//   tries the path with it, and only when a component is not simply there (or is a symlink to
//   follow, or not a directory before the last) walks it again by the rules: the fast try never
//   decides an error or a symlink.
// and, for a tree that never changes, a cache of the directories plain prefixes name:
//     bool cached_dir(std::string_view prefix, NodeT& out);   (a reference for the walk)
//     void remember_dir(std::string_view prefix, const NodeT& dir);
//   The fast try starts a path "/a/b/name" at cached_dir("/a/b") when it has it, and offers
//   each prefix it walked to remember_dir: only prefixes of plain directories (no symlink, "."
//   or ".."), so a hit answers what the walk would have.
// Static dispatch: mem and pack instantiate it over their own structures (no virtual call per
// component); the Backend defaults over the node calls (path_api.cpp).
#pragma once

#include <string.h>  // memrchr

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "packfs/error.hpp"
#include "packfs/path.hpp"
#include "packfs/types.hpp"

namespace packfs::walk {

inline constexpr int kMaxSymlinkFollows = 40;  // Linux's MAXSYMLINKS

// How a walk follows the symlinks it meets (the dir backend's Containment, dir.hpp).
enum class Links : uint8_t { in_root, beneath, none };

template <class N>
struct Step {
    N node;
    FileType type;
};

// The directories a walk stands in, from the root down: ".." pops one; rename checks against it
// that a directory does not move into its own subtree. The first few live inside the object
// (a walk must not allocate), deeper ones spill to the heap.
template <class N>
class DirStack {
public:
    DirStack() = default;
    DirStack(const DirStack& o) { *this = o; }
    DirStack& operator=(const DirStack& o) {
        if (this == &o) return *this;
        clear();
        for (std::size_t i = 0; i < o.size_; ++i) push(o.at(i));
        return *this;
    }

    void push(const Step<N>& s) {
        if (size_ < kInline) {
            new (&inline_[size_].step) Step<N>(s);
        } else {
            spill_.push_back(s);
        }
        ++size_;
    }
    void pop() noexcept {
        if (size_ > kInline) spill_.pop_back();
        --size_;
    }
    void clear() noexcept {
        size_ = 0;
        spill_.clear();
    }
    const Step<N>& back() const noexcept { return at(size_ - 1); }
    const Step<N>& at(std::size_t i) const noexcept {
        return i < kInline ? inline_[i].step : spill_[i - kInline];
    }
    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    template <class Pred>
    bool any(Pred&& pred) const {
        for (std::size_t i = 0; i < size_; ++i)
            if (pred(at(i).node)) return true;
        return false;
    }

private:
    static_assert(std::is_trivially_copyable_v<Step<N>> &&
                      std::is_trivially_destructible_v<Step<N>>,
                  "walk nodes are plain values");
    static constexpr std::size_t kInline = 10;
    union Slot {
        Slot() {}  // left uninitialised: a walk must not pay for zeroing slots it never uses
        Step<N> step;
    };
    Slot inline_[kInline];
    std::size_t size_ = 0;
    std::vector<Step<N>> spill_;
};

// Where a new entry would go: a directory and a final name (with the walk that got there).
template <class N>
struct Parent {
    DirStack<N> stack;          // root ... dir; back() is the directory
    std::string_view borrowed;  // the name inside the caller's path, or
    std::string owned;          // a copy, when it came from a symlink's target
    const Step<N>& dir() const noexcept { return stack.back(); }
    std::string_view name() const noexcept { return owned.empty() ? borrowed : owned; }
};

template <class Ops>
class Walker {
public:
    using N = typename Ops::NodeT;

    Walker(Ops& ops, std::string_view op, std::string_view user_path,
           Links links = Links::in_root) noexcept
        : ops_(ops), op_(op), user_path_(user_path), links_(links) {}

    // The node a normal path names, following symlinks in every component but the last, and
    // in the last when `follow_last`. The caller gets the reference to the returned node.
    Result<Step<N>> resolve(std::string_view path, bool follow_last) {
        DirStack<N> stack;
        auto root = ops_.root();
        if (!root) return std::unexpected(root.error().with_path(user_path_));
        stack.push(Step<N>{*root, FileType::directory});
        auto r = walk(stack, path, follow_last, nullptr);
        release_all(stack);
        return r;
    }
    // A caller's raw path walked by the fast try alone (see fast() below): nullopt when the
    // path needs normalising or the rules; then NormalPath and resolve() answer it.
    std::optional<Step<N>> try_fast(std::string_view raw_path, bool follow_last) {
        if constexpr (kHasFast) {
            return fast(raw_path, follow_last);
        } else {
            return std::nullopt;
        }
    }

    // The same for an API path: a trailing '/' follows the last link and demands a directory.
    Result<Step<N>> resolve(const NormalPath& path, bool follow_last) {
        if constexpr (kHasFast) {
            if (auto r = fast(path.view(), follow_last || path.wants_dir())) {
                if (!path.wants_dir() || r->type == FileType::directory) return *r;
                ops_.release(r->node);  // the rules decide the error
            }
        }
        auto r = resolve(path.view(), follow_last || path.wants_dir());
        if (r && path.wants_dir() && r->type != FileType::directory) {
            ops_.release(r->node);
            return fail(ENOTDIR, op_, user_path_);
        }
        return r;
    }

    // The directory and final name of a path that is not the root. The final name "." or ".."
    // (from a symlink's target) is EEXIST: it exists and is no name to make or remove. The
    // caller releases the stack (release()).
    Result<Parent<N>> resolve_parent(const NormalPath& path) {
        if (path.is_root()) return fail(EBUSY, op_, user_path_);
        Parent<N> out;
        auto root = ops_.root();
        if (!root) return std::unexpected(root.error().with_path(user_path_));
        out.stack.push(Step<N>{*root, FileType::directory});
        auto r = walk(out.stack, path.view(), false, &out);
        if (!r) {
            release_all(out.stack);
            return std::unexpected(r.error());
        }
        return out;
    }

    // The same for a symlink's target met as the final component of `link_at` (open with
    // O_CREAT through a dangling link makes the file where it points): relative targets start
    // in the link's directory, absolute ones at the root. Takes over link_at's references.
    Result<Parent<N>> resolve_target_parent(std::string_view target, Parent<N>&& link_at) {
        Parent<N> out;
        out.stack = link_at.stack;
        link_at.stack.clear();
        if (!target.empty() && target.front() == '/') {
            if (links_ == Links::beneath) {
                release_all(out.stack);
                return fail(EXDEV, op_, user_path_);
            }
            pop_to_root(out.stack);
        }
        auto r = walk(out.stack, target, false, &out);
        if (!r) {
            release_all(out.stack);
            return std::unexpected(r.error());
        }
        if (out.owned.empty()) out.owned = std::string(out.borrowed);  // `target` may not live on
        return out;
    }

    void release(Parent<N>& p) { release_all(p.stack); }

private:
    static constexpr bool kHasFast = requires(Ops & o, N n, Step<N>& out) {
        { o.fast_lookup(n, std::string_view{}, out) } -> std::same_as<bool>;
    };
    static constexpr bool kCachesDirs = requires(Ops & o, N n, std::string_view v) {
        { o.cached_dir(v, n) } -> std::same_as<bool>;
        o.remember_dir(v, n);
    };

    // The walk of a path whose every component simply exists: nullopt as soon as one does
    // not, or is a symlink to follow, or is not a directory before the last; and for any path
    // that is not plainly normal (relative, "." or "..", an empty or over-long component, a
    // trailing '/', too long, a NUL), which the rules answer. So it takes the caller's raw
    // path: the common case pays no normalisation. One pass over the bytes: each component is
    // scanned, checked and looked up as it is met.
    std::optional<Step<N>> fast(std::string_view path, bool follow_last) {
        if (path.empty() || path.front() != '/' || path.size() > kMaxPathLength)
            return std::nullopt;
        const char* p = path.data() + 1;
        const char* const end = path.data() + path.size();
        // Two steps, written in turn: each lookup fills the other one (a node is a few cache
        // lines for some trees; the hot path copies none).
        Step<N> steps[2];
        unsigned at = 0;
        bool started = false;
        std::size_t parent_length = 0;  // the prefix to offer remember_dir; 0: none
        if constexpr (kCachesDirs) {
            // "/a/b/name": start in "/a/b" when cached. A trailing '/' or the root's own
            // children ("/name") go the plain way.
            // (memrchr: SIMD; rfind walks back a byte at a time over a long prefix)
            const auto* last_slash =
                static_cast<const char*>(::memrchr(path.data(), '/', path.size()));
            const std::size_t slash = static_cast<std::size_t>(last_slash - path.data());
            if (slash != 0 && slash + 1 != path.size()) {
                if (ops_.cached_dir(path.substr(0, slash), steps[0].node)) {
                    steps[0].type = FileType::directory;
                    p = path.data() + slash + 1;
                    started = true;
                } else {
                    parent_length = slash;
                }
            }
        }
        if (!started) {
            auto root = ops_.root();
            if (!root) return std::nullopt;
            steps[0] = Step<N>{*root, FileType::directory};
        }
        while (p != end) {
            const char* name_end = p;
            while (name_end != end && *name_end != '/' && *name_end != '\0') ++name_end;
            const std::size_t length = static_cast<std::size_t>(name_end - p);
            const bool last = name_end == end;
            if ((!last && *name_end == '\0') || length == 0 || length > kMaxNameLength ||
                (p[0] == '.' && (length == 1 || (length == 2 && p[1] == '.'))) ||
                (!last && name_end + 1 == end)) {
                ops_.release(steps[at].node);
                return std::nullopt;
            }
            if constexpr (kCachesDirs) {
                // steps[at] is the last component's directory, reached through plain ones.
                if (last && parent_length != 0)
                    ops_.remember_dir(path.substr(0, parent_length), steps[at].node);
            }
            const bool found =
                ops_.fast_lookup(steps[at].node, std::string_view(p, length), steps[at ^ 1]);
            ops_.release(steps[at].node);
            if (!found) return std::nullopt;
            at ^= 1;
            const Step<N>& step = steps[at];
            if ((step.type == FileType::symlink && (!last || follow_last)) ||
                (!last && step.type != FileType::directory)) {
                ops_.release(step.node);
                return std::nullopt;
            }
            p = last ? end : name_end + 1;
        }
        return steps[at];
    }

    // Walks `path` from the top of `stack`. With `parent`, stops before the final component
    // (left in *parent, the stack being its directory's); else returns the final node.
    Result<Step<N>> walk(DirStack<N>& stack, std::string_view path, bool follow_last,
                         Parent<N>* parent) {
        std::string_view rest = path;
        std::string spliced;  // the path after a symlink was substituted, when one was
        int follows = 0;
        for (;;) {
            while (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
            if (rest.empty()) {
                // The path ended on a directory already walked: the root, or "." / ".." last.
                if (parent) return fail(EEXIST, op_, user_path_);
                Step<N> top = stack.back();
                stack.pop();  // its reference goes to the caller
                return top;
            }
            std::size_t end = rest.find('/');
            const std::string_view name = rest.substr(0, end);
            rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
            const bool last = rest.find_first_not_of('/') == std::string_view::npos;
            if (name == ".") {
                if (last && parent) return fail(EEXIST, op_, user_path_);
                continue;
            }
            if (name == "..") {  // only symlink targets hold "..": the API's paths are normal
                if (last && parent) return fail(EEXIST, op_, user_path_);
                if (stack.size() > 1) {
                    ops_.release(stack.back().node);
                    stack.pop();
                } else if (links_ == Links::beneath) {
                    return fail(EXDEV, op_, user_path_);
                }
                continue;
            }
            if (name.size() > kMaxNameLength) return fail(ENAMETOOLONG, op_, user_path_);
            if (last && parent) {
                if (spliced.empty()) {
                    parent->borrowed = name;
                } else {
                    parent->owned = std::string(name);
                }
                return stack.back();
            }
            auto found = ops_.lookup(stack.back().node, name);
            if (!found) return std::unexpected(found.error().with_path(user_path_));
            if (!*found) return fail(ENOENT, op_, user_path_);
            const Step<N> child = **found;
            if (child.type == FileType::symlink && (!last || follow_last)) {
                if (links_ == Links::none) {
                    ops_.release(child.node);
                    return fail(ELOOP, op_, user_path_);
                }
                if (++follows > kMaxSymlinkFollows) {
                    ops_.release(child.node);
                    return fail(ELOOP, op_, user_path_);
                }
                auto target = ops_.readlink(child.node);
                ops_.release(child.node);
                if (!target) return std::unexpected(target.error().with_path(user_path_));
                const std::string_view t = *target;
                if (!t.empty() && t.front() == '/') {
                    if (links_ == Links::beneath) return fail(EXDEV, op_, user_path_);
                    pop_to_root(stack);
                }
                std::string next;
                next.reserve(t.size() + 1 + rest.size());
                next += t;
                next += '/';
                next += rest;
                spliced = std::move(next);
                rest = spliced;
                continue;
            }
            if (!last) {
                if (child.type != FileType::directory) {
                    ops_.release(child.node);
                    return fail(ENOTDIR, op_, user_path_);
                }
                stack.push(child);
                continue;
            }
            return child;
        }
    }

    void pop_to_root(DirStack<N>& stack) {
        while (stack.size() > 1) {
            ops_.release(stack.back().node);
            stack.pop();
        }
    }
    void release_all(DirStack<N>& stack) {
        for (std::size_t i = 0; i < stack.size(); ++i) ops_.release(stack.at(i).node);
        stack.clear();
    }

    Ops& ops_;
    std::string_view op_;
    std::string_view user_path_;
    Links links_;
};

}  // namespace packfs::walk
