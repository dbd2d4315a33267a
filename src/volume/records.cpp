#include "volume/records.hpp"

#include <fcntl.h>

#include <cstring>
#include <optional>
#include <type_traits>

#include <fmt/format.h>

#include "core/op_clock.hpp"

namespace packfs::volume {
namespace {

class Encoder {
public:
    bool u8(uint8_t v) { return raw(&v, 1); }
    bool u32(uint32_t v) { return raw(&v, 4); }
    bool u64(uint64_t v) { return raw(&v, 8); }
    bool i64(int64_t v) { return raw(&v, 8); }
    bool bytes(std::span<const std::byte> b) {
        return u32(static_cast<uint32_t>(b.size())) && raw(b.data(), b.size());
    }
    bool str(std::string_view s) { return bytes(std::as_bytes(std::span(s.data(), s.size()))); }
    bool time(const Time& t) { return i64(t.sec) && u32(static_cast<uint32_t>(t.nsec)); }
    bool update(const TimeUpdate& u) { return u8(static_cast<uint8_t>(u.kind)) && time(u.time); }
    std::vector<std::byte> take() { return std::move(out_); }
    bool invalid(const char*) { return false; }  // (an encoder writes only valid values)

private:
    bool raw(const void* p, std::size_t n) {
        const auto* b = static_cast<const std::byte*>(p);
        out_.insert(out_.end(), b, b + n);
        return true;
    }
    std::vector<std::byte> out_;
};

class Decoder {
public:
    Decoder(std::span<const std::byte> in, RecordType type) : in_(in), type_(type) {}
    bool u8(uint8_t& v) { return raw(&v, 1); }
    bool u32(uint32_t& v) { return raw(&v, 4); }
    bool u64(uint64_t& v) { return raw(&v, 8); }
    bool i64(int64_t& v) { return raw(&v, 8); }
    bool bytes(std::span<const std::byte>& out) {
        uint32_t n = 0;
        if (!u32(n) || n > in_.size() - at_) return false;
        out = in_.subspan(at_, n);
        at_ += n;
        return true;
    }
    bool str(std::string& s) {
        std::span<const std::byte> b;
        if (!bytes(b)) return false;
        s.assign(reinterpret_cast<const char*>(b.data()), b.size());
        return true;
    }
    bool time(Time& t) {
        uint32_t nsec = 0;
        if (!i64(t.sec) || !u32(nsec)) return false;
        if (nsec > 999'999'999) return invalid("a time's nanoseconds (over 999999999)");
        t.nsec = nsec;
        return true;
    }
    bool update(TimeUpdate& u) {
        uint8_t kind = 0;
        if (!u8(kind)) return false;
        if (kind > static_cast<uint8_t>(TimeUpdate::Kind::set))
            return invalid("a time update's kind (over 2)");
        u.kind = static_cast<TimeUpdate::Kind>(kind);
        return time(u.time);
    }
    // A field that is there but holds a value no encoder writes: false, naming it.
    bool invalid(const char* what) {
        invalid_ = what;
        return false;
    }
    // Why fields() failed: a value out of range, or the payload ending early.
    const char* why() const { return invalid_ ? invalid_ : "a field runs past the end of the payload"; }
    bool done() const { return at_ == in_.size(); }
    std::unexpected<Error> bad(std::string_view field) const {
        return std::unexpected(Error::corrupt(
            "journal replay", {},
            Corruption{at_, 0, in_.size(),
                       fmt::format("{} record: {}", record_type_name(type_), field)}));
    }

private:
    bool raw(void* p, std::size_t n) {
        if (n > in_.size() - at_) return false;
        std::memcpy(p, in_.data() + at_, n);
        at_ += n;
        return true;
    }
    std::span<const std::byte> in_;
    RecordType type_;
    std::size_t at_ = 0;
    const char* invalid_ = nullptr;
};

bool known(uint16_t type) {
    return type >= 1 && type <= static_cast<uint16_t>(RecordType::clone_range);
}

// The owner of an entry a *_at record made.
template <class Codec, class R>
bool owner(Codec& c, R& r) {
    uint8_t has = r.has_owner ? 1 : 0;
    if (!c.u8(has)) return false;
    if (has > 1) return c.invalid("the owner flag (over 1)");
    if constexpr (!std::is_const_v<R>) r.has_owner = has != 0;
    return c.u32(r.uid) && c.u32(r.gid);
}

// The fields of each record type, in payload order: one list for the encoder and the decoder,
// so the two cannot disagree. `c` is an Encoder or a Decoder; each call returns false when a
// decoder ran out of payload.
template <class Codec, class R>
bool fields(Codec& c, R& r) {
    if (!c.time(r.time) || !c.u64(r.next_ino)) return false;
    switch (r.type) {
        case RecordType::rmdir:
        case RecordType::unlink: return c.str(r.path);
        case RecordType::mkdir:
        case RecordType::chmod: return c.str(r.path) && c.u32(r.mode);
        case RecordType::rename:
        case RecordType::link:
        case RecordType::symlink: return c.str(r.path) && c.str(r.path2) && c.u32(r.flags);
        case RecordType::mknod:
            return c.str(r.path) && c.u32(r.flags) && c.u32(r.mode) && c.u64(r.offset);
        case RecordType::chown:
            return c.str(r.path) && c.u32(r.mode) && c.u32(r.gid) && c.u32(r.flags);
        case RecordType::utimens:
            return c.str(r.path) && c.update(r.atime) && c.update(r.mtime) && c.u32(r.flags);
        case RecordType::truncate: return c.str(r.path) && c.u64(r.offset);
        case RecordType::setxattr:
            return c.str(r.path) && c.str(r.name) && c.str(r.value) && c.u32(r.flags);
        case RecordType::removexattr: return c.str(r.path) && c.str(r.name);
        case RecordType::open: return c.str(r.path) && c.u32(r.flags) && c.u32(r.mode);
        case RecordType::write:
            return c.u64(r.ino) && c.u64(r.offset) && c.u32(r.flags) && c.bytes(r.data);
        case RecordType::ftruncate: return c.u64(r.ino) && c.u64(r.offset);
        case RecordType::create_at:
            return c.u64(r.ino) && c.str(r.name) && c.u32(r.mode) && c.u32(r.flags) && owner(c, r);
        case RecordType::mkdir_at:
            return c.u64(r.ino) && c.str(r.name) && c.u32(r.mode) && owner(c, r);
        case RecordType::mknod_at:
            return c.u64(r.ino) && c.str(r.name) && c.u32(r.flags) && c.u32(r.mode) &&
                   c.u64(r.offset) && owner(c, r);
        case RecordType::symlink_at:
            return c.u64(r.ino) && c.str(r.name) && c.str(r.value) && owner(c, r);
        case RecordType::link_at: return c.u64(r.ino) && c.u64(r.ino2) && c.str(r.name);
        case RecordType::unlink_at:
        case RecordType::rmdir_at: return c.u64(r.ino) && c.str(r.name);
        case RecordType::rename_at:
            return c.u64(r.ino) && c.str(r.name) && c.u64(r.ino2) && c.str(r.name2) &&
                   c.u32(r.flags);
        case RecordType::setattr:
            return c.u64(r.ino) && c.u32(r.mode) && c.u32(r.uid) && c.u32(r.gid) &&
                   c.u32(r.flags) && c.u64(r.offset) && c.update(r.atime) && c.update(r.mtime);
        case RecordType::setxattr_at:
            return c.u64(r.ino) && c.str(r.name) && c.str(r.value) && c.u32(r.flags);
        case RecordType::removexattr_at: return c.u64(r.ino) && c.str(r.name);
        case RecordType::fallocate:
            return c.u64(r.ino) && c.u32(r.flags) && c.u64(r.offset) && c.u64(r.length);
        case RecordType::clone_range:
            return c.u64(r.ino) && c.u64(r.offset) && c.u64(r.ino2) && c.u64(r.offset2) &&
                   c.u64(r.length);
    }
    return false;
}

}  // namespace

const char* record_type_name(RecordType type) noexcept {
    switch (type) {
        case RecordType::mkdir: return "mkdir";
        case RecordType::rmdir: return "rmdir";
        case RecordType::unlink: return "unlink";
        case RecordType::rename: return "rename";
        case RecordType::symlink: return "symlink";
        case RecordType::link: return "link";
        case RecordType::mknod: return "mknod";
        case RecordType::chmod: return "chmod";
        case RecordType::chown: return "chown";
        case RecordType::utimens: return "utimens";
        case RecordType::truncate: return "truncate";
        case RecordType::setxattr: return "setxattr";
        case RecordType::removexattr: return "removexattr";
        case RecordType::open: return "open";
        case RecordType::write: return "write";
        case RecordType::ftruncate: return "ftruncate";
        case RecordType::create_at: return "create";
        case RecordType::mkdir_at: return "mkdir";
        case RecordType::mknod_at: return "mknod";
        case RecordType::symlink_at: return "symlink";
        case RecordType::link_at: return "link";
        case RecordType::unlink_at: return "unlink";
        case RecordType::rmdir_at: return "rmdir";
        case RecordType::rename_at: return "rename";
        case RecordType::setattr: return "setattr";
        case RecordType::setxattr_at: return "setxattr";
        case RecordType::removexattr_at: return "removexattr";
        case RecordType::fallocate:
            return "fallocate";
        case RecordType::clone_range:
            return "clone_range";
    }
    return "unknown";
}

std::vector<std::byte> encode_record(const OpRecord& r) {
    Encoder e;
    fields(e, r);
    return e.take();
}

Result<OpRecord> decode_record(uint16_t raw_type, std::span<const std::byte> payload) {
    if (!known(raw_type))
        return std::unexpected(Error::corrupt(
            "journal replay", {}, Corruption{0, 0, raw_type, "record type (unknown)"}));
    OpRecord r;
    r.type = static_cast<RecordType>(raw_type);
    Decoder d(payload, r.type);
    if (!fields(d, r)) return d.bad(d.why());
    if (!d.done()) return d.bad("bytes after the last field");
    return r;
}

namespace {

Result<void> made(Result<Entry>&& e, Backend& overlay) {
    if (!e) return std::unexpected(e.error());
    overlay.forget(e->node, 1);
    return {};
}

std::optional<Owner> owner_of(const OpRecord& r) {
    if (!r.has_owner) return std::nullopt;
    return Owner{r.uid, r.gid};
}

Result<FileType> mknod_type(const OpRecord& r) {
    if (r.flags > static_cast<uint32_t>(FileType::socket))
        return std::unexpected(Error::corrupt("journal replay", r.path,
                                              Corruption{0, 0, r.flags, "mknod type"}));
    return static_cast<FileType>(r.flags);
}

Result<XattrMode> xattr_mode(const OpRecord& r) {
    if (r.flags > static_cast<uint32_t>(XattrMode::replace))
        return std::unexpected(Error::corrupt("journal replay", r.path,
                                              Corruption{0, 0, r.flags, "xattr mode"}));
    return static_cast<XattrMode>(r.flags);
}

// The path records of journals from before nodes (types 1-14).
Result<void> apply_path_record(Backend& overlay, const OpRecord& r) {
    switch (r.type) {
        case RecordType::mkdir: return overlay.mkdir(r.path, r.mode);
        case RecordType::rmdir: return overlay.rmdir(r.path);
        case RecordType::unlink: return overlay.unlink(r.path);
        case RecordType::rename:
            return overlay.rename(r.path, r.path2, static_cast<RenameFlags>(r.flags));
        case RecordType::symlink: return overlay.symlink(r.path2, r.path);
        case RecordType::link: return overlay.link(r.path, r.path2);
        case RecordType::mknod: {
            auto type = mknod_type(r);
            if (!type) return std::unexpected(type.error());
            return overlay.mknod(r.path, *type, r.mode, r.offset);
        }
        case RecordType::chmod: return overlay.chmod(r.path, r.mode);
        case RecordType::chown:
            return overlay.chown(r.path, r.mode, r.gid, r.flags ? Follow::no : Follow::yes);
        case RecordType::utimens:
            return overlay.utimens(r.path, r.atime, r.mtime, r.flags ? Follow::no : Follow::yes);
        case RecordType::truncate: return overlay.truncate(r.path, r.offset);
        case RecordType::setxattr: {
            auto mode = xattr_mode(r);
            if (!mode) return std::unexpected(mode.error());
            return overlay.setxattr(r.path, r.name, r.value, *mode);
        }
        case RecordType::removexattr: return overlay.removexattr(r.path, r.name);
        case RecordType::open: {
            auto file = overlay.open(r.path, static_cast<int>(r.flags), r.mode);
            if (!file) return std::unexpected(file.error());
            return {};
        }
        default: break;
    }
    return fail(EINVAL, "journal replay");
}

}  // namespace

Result<void> apply_record(Backend& overlay, const OpRecord& r) {
    const uint64_t next_ino = overlay.inode_numbering().limit;
    if (next_ino != r.next_ino)
        return std::unexpected(Error::corrupt(
            "journal replay", r.path,
            Corruption{0, r.next_ino, next_ino,
                       fmt::format("next inode number before {} (the journal does not "
                                   "belong to this tree)",
                                   record_type_name(r.type))}));
    OpTimeScope stamp(r.time);
    switch (r.type) {
        case RecordType::write: {
            const int flags = O_WRONLY | ((r.flags & 1) ? O_APPEND : 0);
            auto file = overlay.open(Node{r.ino}, flags);
            if (!file) return std::unexpected(file.error());
            auto n = (*file)->pwrite(r.data, r.offset);
            if (!n) return std::unexpected(n.error());
            return {};
        }
        case RecordType::ftruncate:
        case RecordType::setattr: {
            SetAttr change = SetAttr::resize(r.offset);
            if (r.type == RecordType::setattr) {
                change.mode = r.mode;
                change.uid = r.uid;
                change.gid = r.gid;
                change.truncate = (r.flags & 1) != 0;
                change.atime = r.atime;
                change.mtime = r.mtime;
            }
            auto st = overlay.setattr(Node{r.ino}, change);
            if (!st) return std::unexpected(st.error());
            return {};
        }
        case RecordType::create_at: {
            auto file = overlay.create(Node{r.ino}, r.name, static_cast<int>(r.flags), r.mode,
                                       owner_of(r));
            if (!file) return std::unexpected(file.error());
            overlay.forget(file->entry.node, 1);
            return {};
        }
        case RecordType::mkdir_at:
            return made(overlay.mkdir(Node{r.ino}, r.name, r.mode, owner_of(r)), overlay);
        case RecordType::mknod_at: {
            auto type = mknod_type(r);
            if (!type) return std::unexpected(type.error());
            return made(overlay.mknod(Node{r.ino}, r.name, *type, r.mode, r.offset, owner_of(r)),
                        overlay);
        }
        case RecordType::symlink_at:
            return made(overlay.symlink(Node{r.ino}, r.name, r.value, owner_of(r)), overlay);
        case RecordType::link_at:
            return made(overlay.link(Node{r.ino}, Node{r.ino2}, r.name), overlay);
        case RecordType::unlink_at: return overlay.unlink(Node{r.ino}, r.name);
        case RecordType::rmdir_at: return overlay.rmdir(Node{r.ino}, r.name);
        case RecordType::rename_at:
            return overlay.rename(Node{r.ino}, r.name, Node{r.ino2}, r.name2,
                                  static_cast<RenameFlags>(r.flags));
        case RecordType::setxattr_at: {
            auto mode = xattr_mode(r);
            if (!mode) return std::unexpected(mode.error());
            return overlay.setxattr(Node{r.ino}, r.name, r.value, *mode);
        }
        case RecordType::removexattr_at: return overlay.removexattr(Node{r.ino}, r.name);
        case RecordType::fallocate: {
            auto file = overlay.open(Node{r.ino}, O_WRONLY);
            if (!file) return std::unexpected(file.error());
            return (*file)->allocate(static_cast<int>(r.flags), r.offset, r.length);
        }
        case RecordType::clone_range: {
            auto n = overlay.copy_range(Node{r.ino}, r.offset, Node{r.ino2}, r.offset2, r.length);
            if (!n) return std::unexpected(n.error());
            if (*n != r.length)  // the source is shorter than when it was cloned
                return fail(EUCLEAN, "replay clone_range");
            return {};
        }
        default: return apply_path_record(overlay, r);
    }
}

std::string describe_record(const OpRecord& r) {
    switch (r.type) {
        case RecordType::rename:
        case RecordType::link: return fmt::format("{} {} -> {}", record_type_name(r.type), r.path, r.path2);
        case RecordType::symlink: return fmt::format("symlink {} -> {}", r.path, r.path2);
        case RecordType::write:
            return fmt::format("write inode {} at {} ({} bytes)", r.ino, r.offset, r.data.size());
        case RecordType::ftruncate: return fmt::format("ftruncate inode {} to {}", r.ino, r.offset);
        case RecordType::fallocate:
            return fmt::format("fallocate inode {} mode {:#x} at {} ({} bytes)", r.ino, r.flags,
                               r.offset, r.length);
        case RecordType::clone_range:
            return fmt::format("clone_range inode {} at {} -> inode {} at {} ({} bytes)", r.ino,
                               r.offset, r.ino2, r.offset2, r.length);
        case RecordType::create_at:
        case RecordType::mkdir_at:
        case RecordType::mknod_at:
        case RecordType::unlink_at:
        case RecordType::rmdir_at:
            return fmt::format("{} {}/{}", record_type_name(r.type), r.ino, r.name);
        case RecordType::symlink_at: return fmt::format("symlink {}/{} -> {}", r.ino, r.name, r.value);
        case RecordType::link_at: return fmt::format("link inode {} as {}/{}", r.ino, r.ino2, r.name);
        case RecordType::rename_at:
            return fmt::format("rename {}/{} -> {}/{}", r.ino, r.name, r.ino2, r.name2);
        case RecordType::setattr:
        case RecordType::setxattr_at:
        case RecordType::removexattr_at:
            return fmt::format("{} inode {}", record_type_name(r.type), r.ino);
        default: return fmt::format("{} {}", record_type_name(r.type), r.path);
    }
}

}  // namespace packfs::volume
