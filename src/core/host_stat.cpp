#include "core/host_stat.hpp"

#include <dirent.h>
#include <sys/sysmacros.h>

namespace packfs {

Stat stat_from_host(const struct stat& st) noexcept {
    Stat out;
    out.ino = st.st_ino;
    file_type_from_mode_bits(st.st_mode, out.type);
    out.mode = st.st_mode & 07777;
    out.uid = st.st_uid;
    out.gid = st.st_gid;
    out.nlink = st.st_nlink;
    out.size = static_cast<uint64_t>(st.st_size);
    out.rdev = st.st_rdev;
    out.blocks = static_cast<uint64_t>(st.st_blocks);
    out.atime = {st.st_atim.tv_sec, st.st_atim.tv_nsec};
    out.mtime = {st.st_mtim.tv_sec, st.st_mtim.tv_nsec};
    out.ctime = {st.st_ctim.tv_sec, st.st_ctim.tv_nsec};
    return out;
}

Stat stat_from_statx(const struct statx& st) noexcept {
    Stat out;
    out.ino = st.stx_ino;
    file_type_from_mode_bits(st.stx_mode, out.type);
    out.mode = st.stx_mode & 07777;
    out.uid = st.stx_uid;
    out.gid = st.stx_gid;
    out.nlink = st.stx_nlink;
    out.size = st.stx_size;
    out.rdev = makedev(st.stx_rdev_major, st.stx_rdev_minor);
    out.blocks = st.stx_blocks;
    out.atime = {st.stx_atime.tv_sec, st.stx_atime.tv_nsec};
    out.mtime = {st.stx_mtime.tv_sec, st.stx_mtime.tv_nsec};
    out.ctime = {st.stx_ctime.tv_sec, st.stx_ctime.tv_nsec};
    return out;
}

StatFs statfs_from_host(const struct statvfs& sv) noexcept {
    StatFs out;
    out.block_size = sv.f_frsize;
    out.blocks = sv.f_blocks;
    out.blocks_free = sv.f_bavail;
    out.files = sv.f_files;
    out.files_free = sv.f_favail;
    out.name_max = static_cast<uint32_t>(sv.f_namemax);
    return out;
}

bool file_type_from_dirent(unsigned char d_type, FileType& out) noexcept {
    switch (d_type) {
        case DT_REG: out = FileType::regular; return true;
        case DT_DIR: out = FileType::directory; return true;
        case DT_LNK: out = FileType::symlink; return true;
        case DT_FIFO: out = FileType::fifo; return true;
        case DT_CHR: out = FileType::char_device; return true;
        case DT_BLK: out = FileType::block_device; return true;
        case DT_SOCK: out = FileType::socket; return true;
        default: return false;
    }
}

}  // namespace packfs
