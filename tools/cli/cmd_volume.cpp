// `packfs volume init|status|compact|check DIR`: make a volume, say what it holds, fold its
// journal into a fresh pack (through its daemon when it is mounted), and check it without
// changing it (DESIGN §10, §12).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <memory>

#include "build_options.hpp"
#include "command.hpp"
#include "format.hpp"
#include "fuse/control.hpp"
#include "fuse/mountinfo.hpp"
#include "packfs/volume.hpp"
#include "progress.hpp"
#include "report.hpp"

namespace packfs::cli {

namespace {

VolumeOptions read_only() {
    VolumeOptions options;
    options.read_only = true;
    return options;
}

struct VolumeArgs {
    std::string dir;
    std::string from;
    std::string durability = "explicit";
    bool json = false;
};

Json recovery_json(const RecoveryReport& r) {
    return Json{{"records_replayed", r.records_replayed},
                {"dropped_records", r.dropped_records},
                {"dropped_bytes", r.dropped_bytes},
                {"dropped_offset", r.dropped_offset},
                {"reason", r.reason}};
}

void print_recovery(const RecoveryReport& r, std::string_view verb) {
    if (r.clean()) return;
    fmt::print("journal: {} {} record{} ({}) at offset {}: {}\n", verb, r.dropped_records,
               r.dropped_records == 1 ? "" : "s", human_size(r.dropped_bytes), r.dropped_offset,
               r.reason);
}

int run_init(const VolumeArgs& args) {
    const Output out(args.json);
    auto durability = durability_from_name(args.durability);
    if (!durability) return out.usage("--durability must be always, batch or explicit");
    VolumeInit init;
    init.durability = *durability;
    if (!args.from.empty()) {
        struct stat st {};
        if (::stat(args.from.c_str(), &st) != 0) return out.fail(Error(errno, "volume init", args.from));
        (S_ISDIR(st.st_mode) ? init.from_dir : init.from_pack) = args.from;
    }
    if (auto ok = Volume::create(args.dir, init); !ok) return out.fail(ok.error());
    auto volume = Volume::open(args.dir, read_only());
    if (!volume) return out.fail(volume.error());
    const VolumeStatus s = (*volume)->status();
    if (out.json()) {
        Output::emit(Json{{"volume", args.dir},
                          {"durability", durability_name(s.durability)},
                          {"pack_bytes", s.pack_bytes},
                          {"digest", s.pack_digest}});
    } else {
        fmt::print("created volume {} ({} durability), pack {} {}\n", args.dir,
                   durability_name(s.durability), human_size(s.pack_bytes), s.pack_digest);
    }
    return kExitOk;
}

int run_status(const VolumeArgs& args) {
    const Output out(args.json);
    auto volume = Volume::open(args.dir, read_only());
    if (!volume) return out.fail(volume.error());
    const VolumeStatus s = (*volume)->status();
    if (out.json()) {
        Output::emit(Json{{"volume", s.path},
                          {"generation", s.generation},
                          {"durability", durability_name(s.durability)},
                          {"pack_bytes", s.pack_bytes},
                          {"journal_bytes", s.journal_bytes},
                          {"journal_records", s.journal_records},
                          {"next_ino", s.next_ino},
                          {"digest", s.pack_digest},
                          {"created", s.created},
                          {"last_compaction", s.last_compaction},
                          {"last_compaction_seconds", s.last_compaction_seconds},
                          {"recovery", recovery_json(s.recovery)}});
        return kExitOk;
    }
    fmt::print("volume {}\n", s.path);
    fmt::print("  durability   {}\n", durability_name(s.durability));
    fmt::print("  generation   {}\n", s.generation);
    fmt::print("  pack         {} ({})\n", human_size(s.pack_bytes), s.pack_digest);
    fmt::print("  journal      {} in {} record{}\n", human_size(s.journal_bytes), s.journal_records,
               s.journal_records == 1 ? "" : "s");
    fmt::print("  created      {}\n", s.created);
    fmt::print("  compacted    {}\n",
               s.last_compaction.empty()
                   ? std::string("never")
                   : fmt::format("{} ({:.2f} s)", s.last_compaction, s.last_compaction_seconds));
    print_recovery(s.recovery, "recovery would drop");
    return kExitOk;
}

// A mounted volume is locked by its daemon: ask the daemon to compact it (control.hpp).
int compact_mounted(const VolumeArgs& args, const Output& out, const Error& busy) {
    char buf[PATH_MAX];
    if (!::realpath(args.dir.c_str(), buf)) return out.fail(busy);
    auto mount = fuse::mount_of_source(buf);
    if (!mount) return out.fail(busy);
    const int fd = ::open(mount->mountpoint.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return out.fail(Error(errno, "volume compact", mount->mountpoint));
    fuse::CompactReply reply{};
    const int rc = ::ioctl(fd, fuse::kIoctlCompact, &reply);
    const int err = errno;
    ::close(fd);
    if (rc != 0) return out.fail(Error(err, "volume compact", mount->mountpoint));
    const double seconds = static_cast<double>(reply.micros) / 1e6;
    if (out.json()) {
        Output::emit(Json{{"volume", args.dir},
                          {"mounted_on", mount->mountpoint},
                          {"generation", reply.generation},
                          {"records_carried", reply.records_carried},
                          {"seconds", seconds},
                          {"pack_bytes", reply.pack_bytes}});
    } else {
        fmt::print("compacted {} (mounted on {}) into generation {} in {:.2f} s: pack {}\n",
                   args.dir, mount->mountpoint, reply.generation, seconds,
                   human_size(reply.pack_bytes));
    }
    return kExitOk;
}

int run_compact(const VolumeArgs& args) {
    const Output out(args.json);
    ProgressLine progress;
    VolumeOptions options;
    if (progress.enabled()) {
        options.pack.progress = [&progress](const BuildProgress& p) {
            progress.update([&] { return "compact: " + build_progress_text(p); });
        };
    }
    auto volume = Volume::open(args.dir, options);
    if (!volume && volume.error().code() == EBUSY) return compact_mounted(args, out, volume.error());
    if (!volume) return out.fail(volume.error());
    const RecoveryReport recovery = (*volume)->recovery();
    auto stats = (*volume)->compact();
    progress.clear();
    if (!stats) return out.fail(stats.error());
    if (out.json()) {
        Output::emit(Json{{"volume", args.dir},
                          {"generation", stats->generation},
                          {"records_carried", stats->records_carried},
                          {"seconds", stats->seconds},
                          {"pause_seconds", stats->pause_seconds},
                          {"pack_bytes", stats->pack.pack_bytes},
                          {"digest", stats->pack.digest},
                          {"recovery", recovery_json(recovery)}});
        return kExitOk;
    }
    print_recovery(recovery, "dropped");
    fmt::print("compacted {} into generation {} in {:.2f} s: pack {} ({} files), {}\n", args.dir,
               stats->generation, stats->seconds, human_size(stats->pack.pack_bytes),
               stats->pack.regular_files, stats->pack.digest);
    return kExitOk;
}

int run_check(const VolumeArgs& args) {
    const Output out(args.json);
    auto check = check_volume(args.dir);
    if (!check) return out.fail(check.error());
    if (out.json()) {
        Json problems = Json::array();
        for (const VerifyProblem& p : check->pack.problems)
            problems.push_back(Json{{"where", p.where}, {"what", p.what}});
        Output::emit(Json{{"volume", args.dir},
                          {"ok", check->ok()},
                          {"pack_problems", std::move(problems)},
                          {"journal", recovery_json(check->journal)},
                          {"replay_error", check->replay_error}});
    } else {
        fmt::print("{} {}\n", check->ok() ? "OK" : "FAILED", args.dir);
        fmt::print("  pack: {} files, {} checked, {} problem{}\n", check->pack.files_checked,
                   human_size(check->pack.bytes_checked), check->pack.problems.size(),
                   check->pack.problems.size() == 1 ? "" : "s");
        for (const VerifyProblem& p : check->pack.problems) fmt::print("    {}: {}\n", p.where, p.what);
        fmt::print("  journal: {} record{} replay cleanly\n", check->journal.records_replayed,
                   check->journal.records_replayed == 1 ? "" : "s");
        print_recovery(check->journal, "recovery would drop");
        if (!check->replay_error.empty()) fmt::print("  replay: {}\n", check->replay_error);
    }
    return check->ok() ? kExitOk : kExitFailed;
}

}  // namespace

Command add_volume_command(CLI::App& parent) {
    auto args = std::make_shared<VolumeArgs>();
    CLI::App* sub = parent.add_subcommand("volume", "Make, inspect, compact and check volumes");
    sub->require_subcommand(1);
    CLI::App* init = sub->add_subcommand("init", "Make a new volume in DIR");
    init->add_option("DIR", args->dir, "Volume directory (created; must be empty)")->required();
    init->add_option("--from", args->from, "Start from this pack file or host directory");
    init->add_option("--durability", args->durability,
                     "explicit (durable at fsync/sync and within the 5 s commit interval, as "
                     "ext4) | batch (each change durable when it returns; group commit) | always "
                     "(each change its own fdatasync)")
        ->check(CLI::IsMember({"always", "batch", "explicit"}))
        ->capture_default_str();
    CLI::App* status = sub->add_subcommand("status", "Sizes, journal length, last compaction, mode");
    status->add_option("DIR", args->dir, "Volume directory")->required();
    CLI::App* compact = sub->add_subcommand("compact", "Fold the journal into a fresh pack");
    compact->add_option("DIR", args->dir, "Volume directory")->required();
    CLI::App* check = sub->add_subcommand(
        "check", "Verify the pack and the journal; change nothing; say what recovery would drop");
    check->add_option("DIR", args->dir, "Volume directory")->required();
    for (CLI::App* s : {init, status, compact, check})
        s->add_flag("--json", args->json, "Print the result as one JSON object");
    return {sub, [args, init, status, compact](const std::string&) {
                if (init->parsed()) return run_init(*args);
                if (status->parsed()) return run_status(*args);
                if (compact->parsed()) return run_compact(*args);
                return run_check(*args);
            }};
}

}  // namespace packfs::cli
