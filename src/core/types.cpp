#include "packfs/types.hpp"

#include <sys/stat.h>

#include <ctime>

namespace packfs {

uint32_t file_type_to_mode_bits(FileType type) noexcept {
    switch (type) {
        case FileType::regular: return S_IFREG;
        case FileType::directory: return S_IFDIR;
        case FileType::symlink: return S_IFLNK;
        case FileType::fifo: return S_IFIFO;
        case FileType::char_device: return S_IFCHR;
        case FileType::block_device: return S_IFBLK;
        case FileType::socket: return S_IFSOCK;
    }
    return 0;
}

bool file_type_from_mode_bits(uint32_t mode, FileType& out) noexcept {
    switch (mode & S_IFMT) {
        case S_IFREG: out = FileType::regular; return true;
        case S_IFDIR: out = FileType::directory; return true;
        case S_IFLNK: out = FileType::symlink; return true;
        case S_IFIFO: out = FileType::fifo; return true;
        case S_IFCHR: out = FileType::char_device; return true;
        case S_IFBLK: out = FileType::block_device; return true;
        case S_IFSOCK: out = FileType::socket; return true;
        default: return false;
    }
}

const char* file_type_name(FileType type) noexcept {
    switch (type) {
        case FileType::regular: return "file";
        case FileType::directory: return "dir";
        case FileType::symlink: return "symlink";
        case FileType::fifo: return "fifo";
        case FileType::char_device: return "chardev";
        case FileType::block_device: return "blockdev";
        case FileType::socket: return "socket";
    }
    return "?";
}

Time Time::now() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return Time{ts.tv_sec, ts.tv_nsec};
}

}  // namespace packfs
