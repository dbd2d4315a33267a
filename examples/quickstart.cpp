// The README's example, compiled and run as a test (tests/examples) so it cannot rot.
#include <packfs/mem.hpp>

#include <cstdio>

int main() {
    using namespace packfs;
    std::shared_ptr<Backend> fs = make_mem_backend();

    // Errors are values: every call returns Result<T> (std::expected<T, packfs::Error>).
    if (auto ok = fs->mkdir("/assets"); !ok) {
        std::fprintf(stderr, "%s\n", ok.error().message().c_str());
        return 1;
    }
    (void)write_file(*fs, "/assets/hello.txt", "hello, world\n");

    // A snapshot is O(1) and frozen, contents included.
    std::shared_ptr<Backend> before = *fs->snapshot();
    (void)write_file(*fs, "/assets/hello.txt", "changed\n");

    std::printf("live:     %s", read_file(*fs, "/assets/hello.txt")->c_str());
    std::printf("snapshot: %s", read_file(*before, "/assets/hello.txt")->c_str());

    auto missing = fs->stat("/assets/nope");
    std::printf("error:    %s (%s)\n", missing.error().message().c_str(),
                std::string(errno_name(missing.error().code())).c_str());
    return read_file(*before, "/assets/hello.txt") == "hello, world\n" ? 0 : 1;
}
