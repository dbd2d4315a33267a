// packfs_errmsg and packfs_version, and the helpers of handles.hpp.
#include <cstring>
#include <optional>

#include "capi/handles.hpp"
#include "packfs/version.hpp"

namespace packfs::capi {

namespace {
// The thread's last error, kept as it came (moving it costs little) and turned into text only
// when packfs_errmsg() asks: a caller that just checks the errno pays no formatting.
thread_local std::optional<Error> t_error;
thread_local std::string t_message;  // t_error's text, once asked for
thread_local bool t_message_current = true;
}  // namespace

int failed(Error&& error) noexcept {
    const int code = error.code();
    t_error = std::move(error);  // moves a std::string: no allocation, no throw
    t_message_current = false;
    return -code;
}

int failed(int code, std::string_view op, std::string_view path) noexcept {
    try {
        return failed(Error(code, op, path));
    } catch (...) {  // no memory for the path: the errno still says what
        t_error.reset();
        t_message_current = false;
        return -code;
    }
}

packfs_attr to_c(const Stat& st) noexcept {
    packfs_attr out{};
    out.ino = st.ino;
    out.mode = file_type_to_mode_bits(st.type) | st.mode;
    out.uid = st.uid;
    out.gid = st.gid;
    out.nlink = st.nlink;
    out.size = st.size;
    out.rdev = st.rdev;
    out.blocks = st.blocks;
    out.atime_sec = st.atime.sec;
    out.atime_nsec = st.atime.nsec;
    out.mtime_sec = st.mtime.sec;
    out.mtime_nsec = st.mtime.nsec;
    out.ctime_sec = st.ctime.sec;
    out.ctime_nsec = st.ctime.nsec;
    return out;
}

int64_t copy_out(std::string_view bytes, void* buf, std::size_t size, bool terminate) noexcept {
    if (buf != nullptr && size > 0) {
        const std::size_t n = std::min(bytes.size(), terminate ? size - 1 : size);
        std::memcpy(buf, bytes.data(), n);
        if (terminate) static_cast<char*>(buf)[n] = '\0';
    }
    return static_cast<int64_t>(bytes.size());
}

}  // namespace packfs::capi

extern "C" {

const char* packfs_errmsg(void) {
    using namespace packfs::capi;
    if (!t_message_current) {
        try {
            t_message = t_error ? t_error->message() : std::string("out of memory");
        } catch (...) {
            t_message.clear();
        }
        t_message_current = true;
    }
    return t_message.c_str();
}

const char* packfs_version(void) {
    return packfs::version();
}
}
