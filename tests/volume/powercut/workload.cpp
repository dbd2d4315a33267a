#include "volume/powercut/workload.hpp"

#include <fcntl.h>

#include <functional>
#include <optional>

#include <fmt/format.h>

#include "core/io.hpp"
#include "packfs/mem.hpp"
#include "volume/powercut/tree_dump.hpp"

namespace packfs::powercut {

std::size_t RecordedRun::acked_by(std::size_t cut) const {
    std::size_t n = 0;
    while (n < mutations.size() && mutations[n].acked <= cut) ++n;
    return n;
}

std::size_t RecordedRun::started_before(std::size_t cut) const {
    std::size_t n = 0;
    while (n < mutations.size() && mutations[n].started < cut) ++n;
    return n;
}

namespace {

using Call = std::function<Result<void>(Backend&)>;

// Bytes that differ from one seed to the next, none of them a run of zeros.
std::string bytes_of(std::size_t size, uint64_t seed) {
    std::string s(size, '\0');
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (std::size_t i = 0; i < size; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s[i] = static_cast<char>('a' + x % 26);
    }
    return s;
}

Call create_file(std::string path, uint32_t mode) {
    return [=](Backend& fs) -> Result<void> {
        auto f = fs.open(path, O_CREAT | O_EXCL | O_WRONLY, mode);
        if (!f) return std::unexpected(f.error());
        return {};
    };
}

// One pwrite through a handle opened without O_CREAT or O_TRUNC (which journals nothing).
Call write_at(std::string path, uint64_t offset, std::size_t size, uint64_t seed) {
    return [=](Backend& fs) -> Result<void> {
        auto f = fs.open(path, O_WRONLY);
        if (!f) return std::unexpected(f.error());
        const std::string data = bytes_of(size, seed);
        auto n = (*f)->pwrite(std::as_bytes(std::span(data.data(), data.size())), offset);
        if (!n) return std::unexpected(n.error());
        if (*n != size) return fail(EIO, "short write", path);
        return {};
    };
}

class Driver {
public:
    Driver(std::string dir, Backend& model, DiskRecorder& recorder, RecordedRun& run)
        : dir_(std::move(dir)), model_(model), recorder_(recorder), run_(run) {}

    // Opens the volume (a read-write open, recovery and all; the commit interval off).
    void open() {
        if (failure_) return;
        VolumeOptions options;
        options.commit_interval = std::chrono::milliseconds(0);
        auto volume = Volume::open(dir_, options);
        if (!volume) return fail_with("open", volume.error());
        volume_ = std::move(*volume);
        mark("volume opened");
    }
    // Closes the volume (its destructor syncs: a clean close leaves nothing only in memory).
    void close() {
        volume_.reset();
        mark("volume closed");
    }

    // One mutation: the same call on the volume, then on the model.
    void mutate(std::string what, const Call& call) {
        if (failure_) return;
        Mutation m{std::move(what), recorder_.count()};
        mark(fmt::format("mutation {}: {}", run_.mutations.size() + 1, m.what));
        if (auto ok = call(*volume_); !ok) return fail_with(m.what + " on the volume", ok.error());
        if (run_.mode != Durability::explicit_sync) m.acked = recorder_.count();
        if (auto ok = call(model_); !ok) return fail_with(m.what + " on the model", ok.error());
        auto dump = dump_tree(model_);
        if (!dump) return fail_with("dump of the model", dump.error());
        run_.mutations.push_back(std::move(m));
        run_.model_dumps.push_back(std::move(*dump));
    }

    void mkdir(const std::string& path) {
        mutate("mkdir " + path, [=](Backend& fs) { return fs.mkdir(path, 0755); });
    }
    void create(const std::string& path, uint32_t mode = 0644) {
        mutate(fmt::format("create {} {:o}", path, mode), create_file(path, mode));
    }
    void write(const std::string& path, uint64_t offset, std::size_t size) {
        mutate(fmt::format("write {} @{} +{}", path, offset, size), write_at(path, offset, size, ++seed_));
    }
    void truncate(const std::string& path, uint64_t size) {
        mutate(fmt::format("truncate {} {}", path, size),
               [=](Backend& fs) { return fs.truncate(path, size); });
    }
    void rename(const std::string& from, const std::string& to) {
        mutate(fmt::format("rename {} {}", from, to), [=](Backend& fs) { return fs.rename(from, to); });
    }
    void unlink(const std::string& path) {
        mutate("unlink " + path, [=](Backend& fs) { return fs.unlink(path); });
    }
    void rmdir(const std::string& path) {
        mutate("rmdir " + path, [=](Backend& fs) { return fs.rmdir(path); });
    }
    void setxattr(const std::string& path, const std::string& name, std::size_t size) {
        const std::string value = bytes_of(size, ++seed_);
        mutate(fmt::format("setxattr {} {} ({} bytes)", path, name, size),
               [=](Backend& fs) { return fs.setxattr(path, name, value); });
    }
    void link(const std::string& existing, const std::string& path) {
        mutate(fmt::format("link {} {}", existing, path),
               [=](Backend& fs) { return fs.link(existing, path); });
    }
    void symlink(const std::string& target, const std::string& path) {
        mutate(fmt::format("symlink {} {}", target, path),
               [=](Backend& fs) { return fs.symlink(target, path); });
    }
    void chmod(const std::string& path, uint32_t mode) {
        mutate(fmt::format("chmod {} {:o}", path, mode),
               [=](Backend& fs) { return fs.chmod(path, mode); });
    }

    // explicit: everything so far acknowledged. Other modes: nothing to do.
    void sync() {
        if (failure_ || run_.mode != Durability::explicit_sync) return;
        if (auto ok = volume_->sync(); !ok) return fail_with("sync", ok.error());
        for (Mutation& m : run_.mutations)
            if (m.acked == kNever) m.acked = recorder_.count();
        mark("sync returned");
    }

    // Volume::compact(), with `after_pack` and `caught_up` made at those named steps.
    void compact(const std::function<void()>& after_pack, const std::function<void()>& caught_up) {
        if (failure_) return;
        bool inside = false;
        io::set_fault_hook([&](io::IoOp op, std::string_view what) -> int {
            if (op != io::IoOp::step || inside) return 0;
            mark(std::string(what));
            inside = true;
            if (what == "compact.after_pack") after_pack();
            if (what == "compact.caught_up") caught_up();
            inside = false;
            return 0;
        });
        mark("compaction starts");
        auto done = volume_->compact();
        io::set_fault_hook({});
        if (!done) return fail_with("compact", done.error());
        mark("compaction returned");
    }

    void mark(std::string what) { run_.marks.emplace_back(recorder_.count(), std::move(what)); }

    const std::optional<Error>& failure() const { return failure_; }

private:
    void fail_with(const std::string& what, const Error& error) {
        if (!failure_) failure_ = Error(error.code(), "powercut workload", what + ": " + error.message());
    }

    std::string dir_;
    std::shared_ptr<Volume> volume_;
    Backend& model_;
    DiskRecorder& recorder_;
    RecordedRun& run_;
    uint64_t seed_ = 0;
    std::optional<Error> failure_;
};

// The workload: every kind of mutation the volume journals that the test checks, writes of
// 1 B to 1.1 MiB (within a sector, across a boundary, over 64 KiB, past the explicit mode's
// 1 MiB write-out without a sync), sparse and overlapping, renames within and across
// directories and over a file, a close and reopen, and two compactions with mutations made
// while they run. In explicit mode the syncs mark what is acknowledged; the last mutations
// stay unsynced.
void drive(Driver& d) {
    d.open();
    d.mkdir("/docs");
    d.mkdir("/docs/old");
    d.create("/docs/a.txt");
    d.write("/docs/a.txt", 0, 1);
    d.write("/docs/a.txt", 1, 510);
    d.write("/docs/a.txt", 511, 2);  // across the first sector boundary
    d.setxattr("/docs/a.txt", "user.kind", 4);
    d.create("/big", 0600);
    d.write("/big", 0, 70 * 1024);  // over 64 KiB
    d.sync();
    d.write("/big", 4096, 4096 + 7);  // over what is there
    d.truncate("/big", 50'000);
    d.symlink("docs/a.txt", "/link");
    d.link("/docs/a.txt", "/docs/old/a-hard");
    d.rename("/docs/a.txt", "/docs/b.txt");
    d.sync();
    d.create("/tmp1", 0640);
    d.write("/tmp1", 0, 513);
    d.rename("/tmp1", "/docs/b.txt");  // over a file
    d.unlink("/docs/old/a-hard");
    d.chmod("/big", 0640);
    d.setxattr("/docs", "user.tag", 300);
    d.compact(
        [&] {
            d.write("/big", 100'000, 3000);  // past the end: a hole before it
            d.create("/during");
            d.write("/during", 0, 5000);
        },
        [&] {
            d.rename("/during", "/docs/during");
            d.setxattr("/docs/during", "user.when", 10);
        });
    d.sync();
    d.write("/big", 0, 200 * 1024);
    d.truncate("/docs/b.txt", 0);
    d.write("/docs/b.txt", 0, 1000);
    d.mkdir("/x");
    d.rename("/x", "/docs/x");
    d.rmdir("/docs/x");
    d.unlink("/link");
    d.sync();
    d.close();
    d.open();
    for (int i = 0; i < 5; ++i) {
        const std::string path = fmt::format("/docs/old/n{}", i);
        d.create(path);
        d.write(path, 0, 100 + 700 * static_cast<std::size_t>(i));
    }
    d.sync();
    // Past 1 MiB pending, explicit mode writes its buffer out without a sync: on the disk, not
    // durable, while the mutations after it wait in memory.
    d.create("/huge");
    d.write("/huge", 0, 1100 * 1024);
    d.setxattr("/huge", "user.size", 8);
    d.write("/huge", 0, 1100 * 1024);
    d.symlink("/huge", "/docs/huge-link");
    d.compact([&] { d.unlink("/docs/old/n1"); },
              [&] { d.write("/docs/old/n2", 1000, 600); });
    d.sync();
    d.write("/big", 204'800, 9000);  // left unsynced in explicit mode
    d.unlink("/docs/old/n0");
    d.close();
}

}  // namespace

Result<RecordedRun> record_workload(const std::string& dir, Durability mode) {
    RecordedRun run;
    run.scenario = durability_name(mode);
    run.mode = mode;
    DiskRecorder recorder(dir);
    VolumeInit init;
    init.durability = mode;
    if (auto ok = Volume::create(dir, init); !ok) return std::unexpected(ok.error());
    run.created = recorder.count();
    run.marks.emplace_back(run.created, "volume created");
    auto model = make_mem_backend();
    run.model_dumps.push_back(*dump_tree(*model));
    Driver driver(dir, *model, recorder, run);
    drive(driver);
    if (driver.failure()) return std::unexpected(*driver.failure());
    for (const auto& problem : recorder.problems())
        return fail(EINVAL, "powercut recording", problem);
    run.ops = recorder.stop();
    return run;
}

}  // namespace packfs::powercut
