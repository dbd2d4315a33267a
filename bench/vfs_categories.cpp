#include "bench/vfs_categories.hpp"

#include <fcntl.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "packfs/mem.hpp"
#include "packfs/vfs.hpp"

namespace packfs::bench {
namespace {

constexpr uint64_t kMountSeed = 21;
constexpr uint64_t kResolveSeed = 22;
constexpr uint64_t kUnmountSeed = 23;

double since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<std::size_t> shuffled(std::size_t n, uint64_t seed) {
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::mt19937_64 rng(seed);
    std::shuffle(order.begin(), order.end(), rng);
    return order;
}

// `count` fresh mem backends, each holding one empty file "/f", and the paths they are
// mounted at ("/m/<i>") and their files are reached by ("/m/<i>/f").
struct Mounts {
    std::vector<std::shared_ptr<Backend>> backends;
    std::vector<std::string> points;
    std::vector<std::string> files;
};

Result<Mounts> make_mounts(std::size_t count) {
    Mounts m;
    m.backends.reserve(count);
    m.points.reserve(count);
    m.files.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
        auto fs = make_mem_backend();
        if (!fs) return fail(ENOTSUP, "make_mem_backend");
        auto file = fs->open("/f", O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (!file) return std::unexpected(file.error());
        m.backends.push_back(std::move(fs));
        m.points.push_back(fmt::format("/m/{}", i));
        m.files.push_back(fmt::format("/m/{}/f", i));
    }
    return m;
}

Result<void> mount_all(Vfs& vfs, const Mounts& m, const std::vector<std::size_t>& order) {
    for (std::size_t i : order) {
        if (auto ok = vfs.mount(m.points[i], m.backends[i]); !ok) return ok;
    }
    return {};
}

// A stat of a mounted backend's own file must say it is that file: a regular file.
Result<void> resolve(Vfs& vfs, const std::string& file) {
    auto st = vfs.stat(file);
    if (!st) return std::unexpected(st.error());
    if (st->type != FileType::regular) return fail(EIO, "stat (not the mounted file)", file);
    return {};
}

// One run at `count` mounts: mount, resolve, unmount, each timed.
Result<std::vector<double>> time_mount_table(std::size_t count) {
    auto m = make_mounts(count);
    if (!m) return std::unexpected(m.error());
    auto vfs = Vfs::create();
    if (!vfs) return fail(ENOTSUP, "Vfs::create");
    std::vector<double> out;
    const auto mount_order = shuffled(count, kMountSeed);
    const auto resolve_order = shuffled(count, kResolveSeed);
    const auto unmount_order = shuffled(count, kUnmountSeed);

    auto start = std::chrono::steady_clock::now();
    if (auto ok = mount_all(*vfs, *m, mount_order); !ok) return std::unexpected(ok.error());
    out.push_back(since(start));

    start = std::chrono::steady_clock::now();
    for (std::size_t i : resolve_order) {
        if (auto ok = resolve(*vfs, m->files[i]); !ok) return std::unexpected(ok.error());
    }
    out.push_back(since(start));

    start = std::chrono::steady_clock::now();
    for (std::size_t i : unmount_order) {
        if (auto ok = vfs->unmount(m->points[i]); !ok) return std::unexpected(ok.error());
    }
    out.push_back(since(start));
    if (!vfs->mounts().empty()) return fail(EIO, "unmount (mounts left)");
    return out;  // the Vfs and the backends are dropped here, untimed
}

Group mount_scaling_group(const Sizes& s) {
    Group group;
    const std::size_t base = s.mounts.front();
    for (std::size_t count : s.mounts) {
        const std::string c = short_count(count);
        Arm arm;
        arm.category = fmt::format("mount table {}", c);
        arm.backend = "vfs";
        const uint64_t scale = count % base == 0 ? count / base : 0;
        arm.measures = {
            Measure{fmt::format("mount {} backends", c), count, 0, {}, "mount backends", scale},
            Measure{fmt::format("resolve, {} mounts", c), count, 0, {}, "resolve, N mounts", scale},
            Measure{fmt::format("unmount {} backends", c), count, 0, {}, "unmount backends", scale},
        };
        arm.run_measures = [count] { return time_mount_table(count); };
        group.arms.push_back(std::move(arm));
    }
    group.warmup_runs = 1;
    return group;
}

// `resolves` stats through a table of `small` mounts and through one of `large` mounts; in
// the large table once more, but only ever reaching the files of `small` of its mounts (the
// same count of backends as the small table, so their memory stays as warm: what remains
// is the table's size). Each table is built once, before the runs.
Group many_mounts_group(const Sizes& s) {
    struct Table {
        Mounts mounts;
        std::shared_ptr<Vfs> vfs;
    };
    struct Tables {
        Table small, large;
        // `resolves` mount indices each, in whole shuffled passes over their targets.
        std::vector<std::size_t> small_all, large_few, large_all;
    };
    auto tables = std::make_shared<Tables>();
    const std::size_t small = s.mounts.front();
    const std::size_t large = std::max(s.mounts_many, small);
    const std::size_t resolves = s.resolves;
    auto passes = [resolves](std::size_t targets) {
        std::vector<std::size_t> order;
        order.reserve(resolves);
        for (uint64_t pass = 0; order.size() < resolves; ++pass) {
            for (std::size_t i : shuffled(targets, kResolveSeed + pass)) {
                if (order.size() == resolves) break;
                order.push_back(i);
            }
        }
        return order;
    };
    Group group;
    group.prepare = [tables, small, large, passes]() -> Result<void> {
        for (auto [table, count] : {std::pair{&tables->small, small}, std::pair{&tables->large, large}}) {
            auto m = make_mounts(count);
            if (!m) return std::unexpected(m.error());
            table->mounts = std::move(*m);
            table->vfs = Vfs::create();
            if (!table->vfs) return fail(ENOTSUP, "Vfs::create");
            if (auto ok = mount_all(*table->vfs, table->mounts, shuffled(count, kMountSeed)); !ok) return ok;
        }
        tables->small_all = passes(small);
        tables->large_few = passes(small);  // mounts 0 .. small-1, mounted all over the table
        tables->large_all = passes(large);
        return {};
    };
    group.finish = [tables] { *tables = {}; };
    const std::string sc = short_count(small), lc = short_count(large);
    const std::array<std::pair<int, std::string>, 3> arms{
        std::pair{0, fmt::format("resolve {} mounts, table of {}", sc, sc)},
        std::pair{1, fmt::format("resolve {} mounts, table of {}", sc, lc)},
        std::pair{2, fmt::format("resolve {} mounts, table of {}", lc, lc)},
    };
    for (const auto& [which, name] : arms) {
        Arm arm;
        arm.category = name;
        arm.backend = "vfs";
        arm.n = resolves;
        arm.run_once = [tables, which = which]() -> Result<double> {
            Table& t = which == 0 ? tables->small : tables->large;
            const std::vector<std::size_t>& order =
                which == 0 ? tables->small_all : which == 1 ? tables->large_few : tables->large_all;
            const auto start = std::chrono::steady_clock::now();
            for (std::size_t i : order) {
                if (auto ok = resolve(*t.vfs, t.mounts.files[i]); !ok) return std::unexpected(ok.error());
            }
            return since(start);
        };
        group.arms.push_back(std::move(arm));
    }
    group.warmup_runs = 1;
    group.baseline = 0;
    group.baseline_label = fmt::format("table of {}", sc);
    group.per_op_ratio = true;
    return group;
}

}  // namespace

std::vector<Group> mount_table_groups(const Sizes& sizes) {
    std::vector<Group> groups;
    if (sizes.mounts.empty()) return groups;
    groups.push_back(mount_scaling_group(sizes));
    if (sizes.mounts_many > 0) groups.push_back(many_mounts_group(sizes));
    return groups;
}

}  // namespace packfs::bench
