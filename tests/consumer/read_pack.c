/* read_pack_c PACK PATH: prints the file at PATH in PACK through the C API (C11). */
#include <packfs/packfs.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
    if (argc != 3) return 2;
    packfs_fs* fs = NULL;
    packfs_file* file = NULL;
    if (packfs_open(argv[1], 0, &fs) != 0 || packfs_file_open(fs, argv[2], 0, 0, &file) != 0) {
        fprintf(stderr, "%s\n", packfs_errmsg());
        packfs_close(fs);
        return 1;
    }
    const void* data = NULL;
    size_t length = 0;
    int rc = packfs_read_view(file, 0, 1 << 20, &data, &length);
    if (rc == 0)
        fwrite(data, 1, length, stdout);
    else
        fprintf(stderr, "%s\n", packfs_errmsg());
    packfs_file_close(file);
    packfs_close(fs);
    return rc == 0 && strlen(packfs_version()) > 0 ? 0 : 1;
}
