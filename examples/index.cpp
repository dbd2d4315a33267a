// The example index backend (index_backend.hpp) on a small tree: built in a mem backend,
// indexed through its path calls, then read through the paths the library derives from the
// index's node calls. Built and run as a test (tests/examples).
#include <cstdio>
#include <packfs/mem.hpp>

#include "index_builder.hpp"

int main() {
    using namespace packfs;
    std::shared_ptr<Backend> mem = make_mem_backend();
    (void)mem->mkdir("/docs");
    (void)write_file(*mem, "/docs/hello.txt", "hello, index\n");
    (void)mem->link("/docs/hello.txt", "/docs/again.txt");
    (void)mem->symlink("docs/hello.txt", "/hello");

    auto index = example::build_index(*mem);
    if (!index) {
        std::fprintf(stderr, "%s\n", index.error().message().c_str());
        return 1;
    }
    std::printf("indexed:  %zu entries, %zu hard link, %zu bytes\n", index->entries.size(),
                index->links.size(), index->blob.size());
    std::shared_ptr<Backend> fs = example::make_index_backend(std::move(*index));

    // The walker follows /hello to /docs/hello.txt; the two names of one file share an entry.
    auto st = fs->stat("/hello");
    auto again = fs->lstat("/docs/again.txt");
    std::printf("/hello:   %s", read_file(*fs, "/hello").value_or("?").c_str());
    std::printf("inode:    %llu (again.txt %llu), nlink %llu\n", (unsigned long long)st->ino,
                (unsigned long long)again->ino, (unsigned long long)st->nlink);
    auto refused = fs->open("/hello", O_WRONLY);
    std::printf("write:    %s (%s)\n", refused.error().message().c_str(),
                std::string(errno_name(refused.error().code())).c_str());
    return st->ino == again->ino ? 0 : 1;
}
