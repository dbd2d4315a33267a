// read_pack PACK PATH: prints the file at PATH in PACK, through the reader library only.
#include <cstdio>
#include <cstring>
#include <packfs/pack.hpp>
#include <packfs/version.hpp>

int main(int argc, char** argv) {
    if (argc != 3) return 2;
    if (std::strcmp(packfs::version(), PACKFS_VERSION_STRING) != 0) {
        std::fprintf(stderr, "library %s, headers %s\n", packfs::version(), PACKFS_VERSION_STRING);
        return 1;
    }
    auto fs = packfs::open_pack(argv[1]);
    if (!fs) {
        std::fprintf(stderr, "%s\n", fs.error().message().c_str());
        return 1;
    }
    auto text = packfs::read_file(**fs, argv[2]);
    if (!text) {
        std::fprintf(stderr, "%s\n", text.error().message().c_str());
        return 1;
    }
    std::fwrite(text->data(), 1, text->size(), stdout);
    return 0;
}
