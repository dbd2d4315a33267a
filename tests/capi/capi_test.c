/* The C API (include/packfs/packfs.h), compiled as C11: every call, its results and its errors.
 * capi_test DIR: works in the empty scratch directory DIR. */
#define _POSIX_C_SOURCE 200809L /* mkdir, O_DIRECTORY, S_ISLNK under -std=c11 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "packfs/packfs.h"

static int failures = 0;
static char scratch_dir[4096];

#define CHECK(cond)                                                                         \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "FAIL %s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
                    packfs_errmsg());                                                       \
            ++failures;                                                                     \
        }                                                                                   \
    } while (0)
#define CHECK_OK(call) CHECK((call) == 0)
#define CHECK_ERRNO(call, code) CHECK((call) == -(code))

static const char* in_scratch(const char* name, char* buf, size_t size) {
    snprintf(buf, size, "%s/%s", scratch_dir, name);
    return buf;
}

static void write_all(packfs_fs* fs, const char* path, const char* text) {
    packfs_file* f = NULL;
    CHECK_OK(packfs_file_open(fs, path, O_WRONLY | O_CREAT | O_TRUNC, 0644, &f));
    if (!f) return;
    CHECK(packfs_pwrite(f, text, strlen(text), 0) == (int64_t)strlen(text));
    packfs_file_close(f);
}

static int read_equals(packfs_fs* fs, const char* path, const char* want) {
    packfs_file* f = NULL;
    char buf[256] = {0};
    if (packfs_file_open(fs, path, O_RDONLY, 0, &f) != 0) return 0;
    int64_t n = packfs_pread(f, buf, sizeof buf - 1, 0);
    packfs_file_close(f);
    return n == (int64_t)strlen(want) && memcmp(buf, want, (size_t)n) == 0;
}

/* A mem tree: every change by path, attributes, listings, xattrs, errors, a snapshot. */
static void mem_tree_by_path(void) {
    packfs_fs* fs = NULL;
    CHECK_OK(packfs_open_mem(&fs));
    CHECK(packfs_read_only(fs) == 0);
    CHECK_OK(packfs_mkdir(fs, "/docs", 0755));
    CHECK_ERRNO(packfs_mkdir(fs, "/docs", 0755), EEXIST);
    CHECK(strstr(packfs_errmsg(), "/docs") != NULL);
    write_all(fs, "/docs/a.txt", "alpha\n");
    CHECK(read_equals(fs, "/docs/a.txt", "alpha\n"));

    packfs_attr st;
    CHECK_OK(packfs_stat(fs, "/docs/a.txt", &st));
    CHECK(S_ISREG(st.mode) && (st.mode & 07777) == 0644 && st.size == 6 && st.nlink == 1);
    CHECK_ERRNO(packfs_stat(fs, "/docs/missing", &st), ENOENT);
    CHECK(strstr(packfs_errmsg(), "/docs/missing") != NULL);
    CHECK_ERRNO(packfs_stat(fs, "/docs/a.txt/x", &st), ENOTDIR);

    CHECK_OK(packfs_symlink(fs, "a.txt", "/docs/link"));
    CHECK_OK(packfs_lstat(fs, "/docs/link", &st));
    CHECK(S_ISLNK(st.mode) && st.size == 5);
    CHECK_OK(packfs_stat(fs, "/docs/link", &st));
    CHECK(S_ISREG(st.mode));
    char target[16];
    CHECK(packfs_readlink(fs, "/docs/link", target, sizeof target) == 5);
    CHECK(strcmp(target, "a.txt") == 0);
    char tiny[3];
    CHECK(packfs_readlink(fs, "/docs/link", tiny, sizeof tiny) == 5); /* the full length */
    CHECK(strcmp(tiny, "a.") == 0);                                   /* cut, terminated */
    CHECK_ERRNO(packfs_readlink(fs, "/docs/a.txt", target, sizeof target), EINVAL);

    CHECK_OK(packfs_link(fs, "/docs/a.txt", "/docs/hard"));
    CHECK_OK(packfs_stat(fs, "/docs/hard", &st));
    CHECK(st.nlink == 2);
    CHECK_OK(packfs_chmod(fs, "/docs/a.txt", 0600));
    CHECK_OK(packfs_stat(fs, "/docs/a.txt", &st));
    CHECK((st.mode & 07777) == 0600);
    CHECK_OK(packfs_truncate(fs, "/docs/a.txt", 2));
    CHECK(read_equals(fs, "/docs/a.txt", "al"));

    CHECK_OK(packfs_setxattr(fs, "/docs/a.txt", "user.color", "blue", 4, 0));
    CHECK_ERRNO(packfs_setxattr(fs, "/docs/a.txt", "user.color", "red", 3, 1), EEXIST);
    CHECK_ERRNO(packfs_setxattr(fs, "/docs/a.txt", "user.size", "1", 1, 2), ENODATA);
    CHECK(packfs_getxattr(fs, "/docs/a.txt", "user.color", NULL, 0) == 4);
    char value[8] = {0};
    CHECK(packfs_getxattr(fs, "/docs/a.txt", "user.color", value, sizeof value) == 4);
    CHECK(memcmp(value, "blue", 4) == 0);
    char names[64];
    CHECK(packfs_listxattr(fs, "/docs/a.txt", names, sizeof names) == 11);
    CHECK(strcmp(names, "user.color") == 0);
    CHECK_OK(packfs_removexattr(fs, "/docs/a.txt", "user.color"));
    CHECK_ERRNO(packfs_getxattr(fs, "/docs/a.txt", "user.color", value, sizeof value), ENODATA);
    CHECK(packfs_listxattr(fs, "/docs/a.txt", NULL, 0) == 0);

    /* A snapshot keeps what was there. */
    packfs_fs* before = NULL;
    CHECK_OK(packfs_snapshot(fs, &before));
    CHECK(packfs_read_only(before) == 1);

    CHECK_OK(packfs_rename(fs, "/docs/a.txt", "/docs/b.txt", 0));
    CHECK_ERRNO(packfs_stat(fs, "/docs/a.txt", &st), ENOENT);
    write_all(fs, "/docs/c.txt", "gamma\n");
    CHECK_ERRNO(packfs_rename(fs, "/docs/b.txt", "/docs/c.txt", PACKFS_RENAME_NOREPLACE), EEXIST);
    CHECK_OK(packfs_rename(fs, "/docs/b.txt", "/docs/c.txt", PACKFS_RENAME_EXCHANGE));
    CHECK(read_equals(fs, "/docs/b.txt", "gamma\n"));
    CHECK_ERRNO(packfs_rename(fs, "/docs/b.txt", "/docs/c.txt", 7), EINVAL);

    /* The listing: every name once, with its type. */
    packfs_dir* dir = NULL;
    CHECK_OK(packfs_opendir(fs, "/docs", &dir));
    CHECK(packfs_dir_count(dir) == 4); /* b.txt c.txt hard link */
    packfs_dirent e;
    int seen = 0, links = 0;
    while (packfs_readdir(dir, &e) == 1) {
        ++seen;
        if (S_ISLNK(e.mode)) ++links;
        CHECK(e.ino != 0 && e.name[0] != '\0');
    }
    CHECK(seen == 4 && links == 1);
    CHECK(packfs_readdir(dir, &e) == 0);
    packfs_closedir(dir);
    CHECK_ERRNO(packfs_opendir(fs, "/docs/b.txt", &dir), ENOTDIR);

    CHECK_ERRNO(packfs_rmdir(fs, "/docs"), ENOTEMPTY);
    CHECK_OK(packfs_unlink(fs, "/docs/b.txt"));
    CHECK_OK(packfs_unlink(fs, "/docs/c.txt"));
    CHECK_OK(packfs_unlink(fs, "/docs/hard"));
    CHECK_OK(packfs_unlink(fs, "/docs/link"));
    CHECK_OK(packfs_rmdir(fs, "/docs"));
    CHECK_ERRNO(packfs_unlink(fs, "/docs/b.txt"), ENOENT);

    CHECK(read_equals(before, "/docs/a.txt", "al"));
    CHECK_ERRNO(packfs_mkdir(before, "/x", 0755), EROFS);
    CHECK_OK(packfs_sync(fs)); /* nothing to do for a mem tree */
    packfs_close(before);
    packfs_close(fs);
    packfs_close(NULL);
}

/* Files: reads, writes, append, truncate, fstat, fsync, errors. */
static void files(void) {
    packfs_fs* fs = NULL;
    CHECK_OK(packfs_open_mem(&fs));
    packfs_file* f = NULL;
    CHECK_OK(packfs_file_open(fs, "/f", O_RDWR | O_CREAT | O_EXCL, 0640, &f));
    CHECK(packfs_pwrite(f, "0123456789", 10, 0) == 10);
    CHECK(packfs_pwrite(f, "xy", 2, 20) == 2); /* a hole of zeros between */
    char buf[32];
    CHECK(packfs_pread(f, buf, sizeof buf, 8) == 14);
    CHECK(memcmp(buf, "89", 2) == 0 && buf[2] == 0 && buf[11] == 0 &&
          memcmp(buf + 12, "xy", 2) == 0);
    CHECK(packfs_pread(f, buf, sizeof buf, 100) == 0);
    packfs_attr st;
    CHECK_OK(packfs_fstat(f, &st));
    CHECK(st.size == 22 && (st.mode & 07777) == 0640);
    CHECK_OK(packfs_ftruncate(f, 4));
    CHECK_OK(packfs_fstat(f, &st));
    CHECK(st.size == 4);
    CHECK_OK(packfs_fsync(f, 0));
    CHECK_OK(packfs_fsync(f, 1));
    packfs_file_close(f);
    packfs_file_close(NULL);

    CHECK_ERRNO(packfs_file_open(fs, "/f", O_RDWR | O_CREAT | O_EXCL, 0640, &f), EEXIST);
    CHECK_OK(packfs_file_open(fs, "/f", O_WRONLY | O_APPEND, 0, &f));
    CHECK(packfs_pwrite(f, "ab", 2, 0) == 2); /* at the end, whatever the offset */
    CHECK_ERRNO(packfs_pread(f, buf, 1, 0), EBADF);
    packfs_file_close(f);
    CHECK(read_equals(fs, "/f", "0123ab"));

    CHECK_OK(packfs_file_open(fs, "/f", O_RDONLY, 0, &f));
    CHECK_ERRNO(packfs_pwrite(f, "z", 1, 0), EBADF);
    packfs_file_close(f);
    CHECK_OK(packfs_mkdir(fs, "/d", 0755));
    CHECK_ERRNO(packfs_file_open(fs, "/d", O_WRONLY, 0, &f), EISDIR);
    CHECK_ERRNO(packfs_file_open(fs, "/nope", O_RDONLY, 0, &f), ENOENT);
    CHECK_ERRNO(packfs_file_open(fs, "/f", O_RDONLY | O_DIRECTORY, 0, &f), ENOTDIR);
    packfs_close(fs);
}

/* Nodes: lookups with references, calls by node, changes by directory node and name. */
static void nodes(void) {
    packfs_fs* fs = NULL;
    CHECK_OK(packfs_open_mem(&fs));
    packfs_node dir = 0, file_node = 0, link_node = 0, found = 0;
    CHECK_OK(packfs_mkdir_at(fs, PACKFS_ROOT_NODE, "d", 0750, &dir));
    CHECK(dir != 0 && dir != PACKFS_ROOT_NODE);
    packfs_file* f = NULL;
    CHECK_OK(packfs_create_at(fs, dir, "f", O_RDWR | O_CREAT, 0600, &file_node, &f));
    CHECK(packfs_pwrite(f, "node", 4, 0) == 4);
    packfs_file_close(f);
    CHECK_OK(packfs_symlink_at(fs, dir, "l", "f", &link_node));

    packfs_attr st;
    CHECK_OK(packfs_lookup(fs, dir, "f", &found, &st));
    CHECK(found == file_node && st.size == 4 && S_ISREG(st.mode));
    packfs_forget(fs, found, 1);
    CHECK_ERRNO(packfs_lookup(fs, dir, "missing", &found, NULL), ENOENT);
    CHECK_ERRNO(packfs_lookup(fs, dir, "a/b", &found, NULL), EINVAL);
    CHECK_OK(packfs_lookup(fs, dir, "f", NULL, &st)); /* the reference given back at once */
    CHECK_OK(packfs_lookup_path(fs, "/d/l", 1, &found, &st));
    CHECK(found == file_node && S_ISREG(st.mode));
    packfs_forget(fs, found, 1);
    CHECK_OK(packfs_lookup_path(fs, "/d/l", 0, &found, &st));
    CHECK(found == link_node && S_ISLNK(st.mode));
    packfs_forget(fs, found, 1);

    CHECK_OK(packfs_getattr(fs, dir, &st));
    CHECK(S_ISDIR(st.mode) && (st.mode & 07777) == 0750);
    char target[8];
    CHECK(packfs_readlink_node(fs, link_node, target, sizeof target) == 1);
    CHECK(strcmp(target, "f") == 0);
    CHECK_ERRNO(packfs_readlink_node(fs, dir, target, sizeof target), EINVAL);

    packfs_dir* listing = NULL;
    CHECK_OK(packfs_opendir_node(fs, dir, &listing));
    CHECK(packfs_dir_count(listing) == 2);
    packfs_closedir(listing);

    CHECK_OK(packfs_open_node(fs, file_node, O_RDONLY, &f));
    char buf[8] = {0};
    CHECK(packfs_pread(f, buf, sizeof buf, 0) == 4 && memcmp(buf, "node", 4) == 0);
    packfs_file_close(f);
    CHECK_ERRNO(packfs_open_node(fs, dir, O_WRONLY, &f), EISDIR);

    CHECK_OK(packfs_rename_at(fs, dir, "f", PACKFS_ROOT_NODE, "g", 0));
    CHECK_OK(packfs_stat(fs, "/g", &st));
    CHECK_ERRNO(packfs_rename_at(fs, dir, "f", PACKFS_ROOT_NODE, "g", 0), ENOENT);
    CHECK_ERRNO(packfs_rmdir_at(fs, PACKFS_ROOT_NODE, "d"), ENOTEMPTY);
    CHECK_OK(packfs_unlink_at(fs, dir, "l"));
    CHECK_OK(packfs_rmdir_at(fs, PACKFS_ROOT_NODE, "d"));
    /* A node held after its last name went: still there until forgotten. */
    CHECK_OK(packfs_unlink_at(fs, PACKFS_ROOT_NODE, "g"));
    CHECK_OK(packfs_getattr(fs, file_node, &st));
    CHECK(st.nlink == 0 && st.size == 4);
    packfs_forget(fs, file_node, 1);
    packfs_forget(fs, link_node, 1);
    packfs_forget(fs, dir, 1);
    packfs_close(fs);
}

/* Views of one file: every one keeps its bytes until the file is closed, after the tree is. */
static void views_of(const char* pack, int expect_zero_copy) {
    packfs_fs* fs = NULL;
    CHECK_OK(packfs_open_pack(pack, &fs));
    packfs_file* f = NULL;
    CHECK_OK(packfs_file_open(fs, "/big", O_RDONLY, 0, &f));
    packfs_close(fs); /* the file keeps the tree */
    enum { kViews = 64 };
    const void* data[kViews];
    size_t length[kViews];
    for (int i = 0; i < kViews; ++i) {
        CHECK_OK(packfs_read_view(f, (uint64_t)i * 4099, 5000, &data[i], &length[i]));
    }
    for (int i = 0; i < kViews; ++i) {
        const unsigned char* bytes = data[i];
        CHECK(length[i] == 5000);
        int ok = 1;
        for (size_t k = 0; k < length[i] && ok; ++k) {
            uint64_t at = (uint64_t)i * 4099 + k;
            ok = bytes[k] == (unsigned char)(at * 7 + at / 251);
        }
        CHECK(ok);
    }
    /* Two views of one raw range are the mapping itself: the same address. */
    const void* again = NULL;
    size_t n = 0;
    CHECK_OK(packfs_read_view(f, 0, 5000, &again, &n));
    CHECK((again == data[0]) == expect_zero_copy);
    CHECK_OK(packfs_read_view(f, 1u << 30, 10, &again, &n)); /* past the end: empty */
    CHECK(n == 0 && again == NULL);
    packfs_file_close(f);
}

/* Packs and volumes: written from a tree, read back, refused changes, views. */
static void packs_and_volumes(void) {
    char raw[4200], zstd[4200], vol[4200], missing[4200];
    in_scratch("raw.pack", raw, sizeof raw);
    in_scratch("zstd.pack", zstd, sizeof zstd);
    in_scratch("vol", vol, sizeof vol);
    in_scratch("missing.pack", missing, sizeof missing);

    packfs_fs* tree = NULL;
    CHECK_OK(packfs_open_mem(&tree));
    write_all(tree, "/hello", "hello, pack\n");
    enum { kBig = 300000 };
    unsigned char* big = malloc(kBig);
    for (uint64_t i = 0; i < kBig; ++i) big[i] = (unsigned char)(i * 7 + i / 251);
    packfs_file* f = NULL;
    CHECK_OK(packfs_file_open(tree, "/big", O_WRONLY | O_CREAT, 0644, &f));
    CHECK(packfs_pwrite(f, big, kBig, 0) == kBig);
    packfs_file_close(f);
    free(big);
    CHECK_OK(packfs_write_pack(tree, raw, NULL));
    CHECK_OK(packfs_write_pack(tree, zstd, "zstd"));
    CHECK_ERRNO(packfs_write_pack(tree, zstd, "brotli"), EINVAL);
    packfs_close(tree);

    packfs_fs* fs = NULL;
    CHECK_OK(packfs_open(raw, 0, &fs));
    CHECK(packfs_read_only(fs) == 1);
    CHECK(read_equals(fs, "/hello", "hello, pack\n"));
    CHECK_ERRNO(packfs_mkdir(fs, "/x", 0755), EROFS);
    CHECK_ERRNO(packfs_file_open(fs, "/hello", O_WRONLY, 0, &f), EROFS);
    packfs_fs* same = NULL;
    CHECK_OK(packfs_snapshot(fs, &same)); /* a pack is its own snapshot */
    CHECK(read_equals(same, "/hello", "hello, pack\n"));
    packfs_close(same);
    packfs_close(fs);
    CHECK_ERRNO(packfs_open(raw, PACKFS_WRITABLE, &fs), EROFS);
    CHECK_ERRNO(packfs_open_pack(missing, &fs), ENOENT);
    CHECK(strstr(packfs_errmsg(), "missing.pack") != NULL);
    CHECK_ERRNO(packfs_open(missing, 0, &fs), ENOENT);
    CHECK(packfs_open_pack("/etc/hostname", &fs) == -EUCLEAN); /* not a pack */

    views_of(raw, 1);
    views_of(zstd, 0);

    /* A volume from the pack: changes, sync, reopen. */
    CHECK_OK(packfs_create_volume(vol, raw));
    CHECK_OK(packfs_open_volume(vol, &fs));
    CHECK(packfs_read_only(fs) == 0);
    write_all(fs, "/new", "journaled\n");
    CHECK_OK(packfs_sync(fs));
    packfs_close(fs);
    CHECK_OK(packfs_open(vol, 0, &fs)); /* read-only view of the volume */
    CHECK(packfs_read_only(fs) == 1);
    CHECK(read_equals(fs, "/new", "journaled\n") && read_equals(fs, "/hello", "hello, pack\n"));
    packfs_close(fs);
    CHECK_OK(packfs_open(vol, PACKFS_WRITABLE, &fs));
    CHECK_OK(packfs_unlink(fs, "/new"));
    packfs_close(fs);
    CHECK_ERRNO(packfs_create_volume(vol, NULL), ENOTEMPTY);
}

/* A host directory: read-only unless asked, nothing escapes it. */
static void host_directory(void) {
    char dir[4200];
    in_scratch("host", dir, sizeof dir);
    mkdir(dir, 0755);
    packfs_fs* fs = NULL;
    CHECK_OK(packfs_open_dir(dir, PACKFS_WRITABLE, &fs));
    write_all(fs, "/x", "on the host\n");
    CHECK_OK(packfs_symlink(fs, "/etc/passwd", "/out")); /* made, as a link */
    packfs_attr st;
    CHECK_ERRNO(packfs_stat(fs, "/out", &st), EXDEV); /* but it leads outside */
    packfs_fs* snap = NULL;
    CHECK_ERRNO(packfs_snapshot(fs, &snap), ENOTSUP);
    packfs_close(fs);
    CHECK_OK(packfs_open(dir, 0, &fs));
    CHECK(packfs_read_only(fs) == 1);
    CHECK(read_equals(fs, "/x", "on the host\n"));
    CHECK_ERRNO(packfs_unlink(fs, "/x"), EROFS);
    packfs_close(fs);
    CHECK_OK(packfs_open_dir(dir, 0, &fs));
    CHECK(packfs_read_only(fs) == 1);
    packfs_close(fs);
}

/* packfs_open_remote against a real server (run_capi_test.sh starts nginx serving
 * SCRATCH/www; its /private/ wants "Authorization: Bearer s3cret"). */
static void remote(const char* base_url) {
    char path[4200], url[600], private_url[600], cache[4200];
    snprintf(path, sizeof path, "%s/www/r.pack", scratch_dir);
    snprintf(url, sizeof url, "%s/r.pack", base_url);
    snprintf(private_url, sizeof private_url, "%s/private/r.pack", base_url);
    snprintf(cache, sizeof cache, "%s/cache", scratch_dir);
    packfs_fs* tree = NULL;
    CHECK_OK(packfs_open_mem(&tree));
    write_all(tree, "/hello", "hello, remote\n");
    CHECK_OK(packfs_write_pack(tree, path, "zstd"));
    packfs_close(tree);

    packfs_fs* fs = NULL;
    CHECK_OK(packfs_open_remote(url, NULL, &fs)); /* the defaults, as packfs_open */
    CHECK(read_equals(fs, "/hello", "hello, remote\n"));
    packfs_close(fs);

    const char* token[] = {"Authorization: Bearer s3cret", NULL};
    packfs_remote_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.cache_dir = cache;
    o.timeout_ms = 5000;
    o.connections = 2;
    o.headers = token;
    CHECK_OK(packfs_open_remote(private_url, &o, &fs));
    CHECK(read_equals(fs, "/hello", "hello, remote\n"));
    CHECK(packfs_read_only(fs) == 1);
    packfs_close(fs);
    struct stat st;
    CHECK(stat(cache, &st) == 0 && S_ISDIR(st.st_mode)); /* the cache where it was told */

    /* Refused without the token, naming the server's answer. */
    o.headers = NULL;
    o.cache_dir = "none";
    CHECK_ERRNO(packfs_open_remote(private_url, &o, &fs), EACCES);
    CHECK(strstr(packfs_errmsg(), "401") != NULL);
    /* A pin the pack does not match. */
    o.headers = token;
    o.digest = "0000000000000000000000000000000000000000000000000000000000000000";
    CHECK_ERRNO(packfs_open_remote(private_url, &o, &fs), EUCLEAN);
    o.digest = NULL;
    /* Bad options, and what is not a URL. */
    const char* no_colon[] = {"Bearer s3cret", NULL};
    o.headers = no_colon;
    CHECK_ERRNO(packfs_open_remote(private_url, &o, &fs), EINVAL);
    o.headers = token;
    o.connections = 65;
    CHECK_ERRNO(packfs_open_remote(private_url, &o, &fs), EINVAL);
    o.connections = 0;
    o.size = sizeof(size_t);
    CHECK_ERRNO(packfs_open_remote(private_url, &o, &fs), EINVAL);
    CHECK_ERRNO(packfs_open_remote(path, NULL, &fs), EINVAL);
    CHECK_ERRNO(packfs_open_remote(NULL, NULL, &fs), EINVAL);
}

int main(int argc, char** argv) {
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: capi_test SCRATCH_DIR [BASE_URL]\n");
        return 2;
    }
    snprintf(scratch_dir, sizeof scratch_dir, "%s", argv[1]);
    CHECK(strcmp(packfs_errmsg(), "") == 0);
    CHECK(packfs_version() != NULL && strchr(packfs_version(), '.') != NULL);
    mem_tree_by_path();
    files();
    nodes();
    packs_and_volumes();
    host_directory();
    if (argc == 3) {
        remote(argv[2]);
    } else {
        fprintf(stderr, "capi_test: no server given: packfs_open_remote not tested\n");
        ++failures;
    }
    /* A URL nobody serves: a clear error naming it, at once. */
    packfs_fs* fs = NULL;
    CHECK(packfs_open("http://127.0.0.1:9/none.pack", 0, &fs) < 0);
    CHECK(strstr(packfs_errmsg(), "127.0.0.1:9") != NULL);
    printf("%d failure(s)\n", failures);
    return failures == 0 ? 0 : 1;
}
