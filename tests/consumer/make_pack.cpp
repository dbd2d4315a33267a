// make_pack OUT: builds a pack of a small tree made in memory, then reads it back through a
// Vfs that mounts it under /p, with the full library.
#include <cstdio>
#include <packfs/mem.hpp>
#include <packfs/pack.hpp>
#include <packfs/vfs.hpp>

int main(int argc, char** argv) {
    if (argc != 2) return 2;
    auto tree = packfs::make_mem_backend();
    if (!tree->mkdir("/docs", 0755) ||
        !packfs::write_file(*tree, "/docs/hello.txt", "hello from a consumer\n")) {
        std::fprintf(stderr, "could not make the tree\n");
        return 1;
    }
    if (auto stats = packfs::write_pack(*tree, argv[1]); !stats) {
        std::fprintf(stderr, "%s\n", stats.error().message().c_str());
        return 1;
    }
    auto pack = packfs::open_pack(argv[1]);
    auto vfs = packfs::Vfs::create();
    if (!pack || !vfs->mount("/p", *pack)) return 1;
    auto text = packfs::read_file(*vfs, "/p/docs/hello.txt");
    if (!text) {
        std::fprintf(stderr, "%s\n", text.error().message().c_str());
        return 1;
    }
    std::fwrite(text->data(), 1, text->size(), stdout);
    return 0;
}
