// N writers, each making files one after another in a directory of its own: create, one write
// of SIZE bytes, fsync, close, the way a mail spool, a package manager or a build cache with
// durable outputs writes. Every writer waits for its own fsync, so the figure is how well the
// filesystem under DIR shares its flushes between writers (group commit): ext4's jbd2 does,
// and so does a volume (docs/VOLUME.md). Prints one line: files a second, and the seconds.
//     packfs_fsync_writers DIR WRITERS FILES_PER_WRITER [SIZE]
// (bench/mounted_writes.sh runs it on the host, a volume mount and the other mounts.)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

bool write_files(const std::string& dir, int count, const std::string& data) {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return false;
    for (int i = 0; i < count; ++i) {
        const std::string path = dir + "/f" + std::to_string(i);
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) return false;
        const bool ok = ::write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size()) &&
                        ::fsync(fd) == 0;
        if (::close(fd) != 0 || !ok) return false;
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s DIR WRITERS FILES_PER_WRITER [SIZE]\n", argv[0]);
        return 2;
    }
    const std::string root = argv[1];
    const int writers = std::atoi(argv[2]);
    const int per_writer = std::atoi(argv[3]);
    const long size = argc > 4 ? std::atol(argv[4]) : 4096;
    if (writers <= 0 || per_writer <= 0 || size < 0) {
        std::fprintf(stderr, "%s: WRITERS and FILES_PER_WRITER must be positive\n", argv[0]);
        return 2;
    }
    const std::string data(static_cast<std::size_t>(size), 'x');
    std::atomic<int> failed{0};
    std::vector<std::thread> threads;
    const auto start = std::chrono::steady_clock::now();
    for (int w = 0; w < writers; ++w)
        threads.emplace_back([&, w] {
            if (!write_files(root + "/w" + std::to_string(w), per_writer, data)) {
                std::fprintf(stderr, "writer %d: %s\n", w, std::strerror(errno));
                ++failed;
            }
        });
    for (auto& t : threads) t.join();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (failed) return 1;
    std::printf("%d writers x %d files of %ld bytes, each fsynced: %.0f files/s, %.3f s\n", writers,
                per_writer, size, writers * per_writer / seconds, seconds);
    return 0;
}
