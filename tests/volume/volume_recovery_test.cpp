// Journal tail damage at the volume level (DESIGN §10: "Recovery replays the longest valid
// prefix, stops at the first bad frame, truncates the torn tail, and reports what it
// dropped"): a volume's journal cut at every byte of its last three records, and a few
// hundred seeded single-bit flips anywhere after its header, must open to exactly the state
// of the records before the damaged frame (compared with the same ops replayed on a mem
// backend), report what it dropped, cut the file to its valid end and take new mutations. A
// newer journal version is refused with ENOTSUP, and check_volume() reports damage without
// changing a byte.
//
// PACKFS_RECOVERY_FLIPS=<n> sets the bit flips (default 300; 60 with PACKFS_SANITIZER_RUN=1).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "packfs/mem.hpp"
#include "packfs/volume.hpp"
#include "support/files.hpp"
#include "volume/journal_format.hpp"
#include "volume/journal_reader.hpp"
#include "volume/manifest.hpp"
#include "volume/volume_test_util.hpp"

namespace packfs::volume_test {
namespace {

using test_support::TempDir;
namespace fs = std::filesystem;

struct Frame {
    uint64_t start, end;
};

class VolumeRecovery : public ::testing::Test {
protected:
    static constexpr int kGenerated = 57;

    // A volume (always mode: a record per op) holding 57 generated ops and three small fixed
    // ones at the end, closed cleanly; states_[k] is the tree after op k, from a mem backend.
    void SetUp() override {
        base_ = (scratch_.path / "base").string();
        VolumeInit init;
        init.durability = Durability::always;
        ASSERT_TRUE(Volume::create(base_, init).has_value());
        OpGen gen(9001, "");
        for (int i = 0; i < kGenerated; ++i) ops_.push_back(gen.next());
        Op mk, cr, wr;
        mk.kind = OpKind::mkdir;
        mk.path = "/tail";
        cr.kind = OpKind::create;
        cr.path = "/tail/x";
        cr.mode = 0644;
        wr.kind = OpKind::write;
        wr.path = "/tail/x";
        wr.offset = 10;
        wr.size = 100;
        wr.data_seed = 5;
        ops_.insert(ops_.end(), {mk, cr, wr});
        auto v = Volume::open(base_);
        ASSERT_TRUE(v.has_value());
        auto mem = make_mem_backend();
        states_.push_back(*capture(*mem));
        for (const Op& op : ops_) {
            ASSERT_TRUE(apply_op(**v, op).has_value()) << describe(op);
            ASSERT_TRUE(apply_op(*mem, op).has_value()) << describe(op);
            states_.push_back(*capture(*mem));
        }
        ASSERT_EQ(diff(states_.back(), *capture(**v)), "");
        journal_name_ = volume::journal_file_name((*v)->status().generation);
        v->reset();
        auto scan = volume::scan_journal(base_ + "/" + journal_name_,
                                         [&](const volume::JournalRecordView& r) -> Result<void> {
                                             frames_.push_back(Frame{
                                                 r.offset, r.offset + volume::journal_frame_size(
                                                                          r.payload.size())});
                                             return {};
                                         });
        ASSERT_TRUE(scan.has_value());
        ASSERT_EQ(frames_.size(), ops_.size()) << "one record per op";
        journal_size_ = fs::file_size(base_ + "/" + journal_name_);
        ASSERT_EQ(frames_.back().end, journal_size_);
    }

    std::string copy(const std::string& name) {
        const std::string dir = (scratch_.path / name).string();
        fs::remove_all(dir);
        copy_dir(base_, dir);
        return dir;
    }
    std::string journal(const std::string& dir) const { return dir + "/" + journal_name_; }

    // How many records end at or before `offset`.
    std::size_t records_before(uint64_t offset) const {
        std::size_t n = 0;
        while (n < frames_.size() && frames_[n].end <= offset) ++n;
        return n;
    }
    uint64_t valid_end(std::size_t records) const {
        return records == 0 ? volume::kJournalHeaderSize : frames_[records - 1].end;
    }

    TempDir scratch_;
    std::string base_, journal_name_;
    std::vector<Op> ops_;
    std::vector<Tree> states_;
    std::vector<Frame> frames_;
    uint64_t journal_size_ = 0;
};

// Every cut inside the last three records: the state of the records before the cut frame,
// the drop reported, the file cut to the valid end, and the volume writable after.
TEST_F(VolumeRecovery, CutAtEveryByteOfTheLastThreeRecordsRecoversTheRecordsBeforeIt) {
    const uint64_t from = frames_[frames_.size() - 3].start;
    uint64_t cuts = 0;
    // Sanitizer runs take every 4th offset (frames start 8-aligned: every boundary is in).
    const uint64_t step = sanitizer_run() ? 4 : 1;
    for (uint64_t cut = from; cut < journal_size_; cut += step) {
        SCOPED_TRACE(fmt::format("journal cut at {} of {}", cut, journal_size_));
        const std::string dir = copy("cut");
        fs::resize_file(journal(dir), cut);
        const std::size_t kept = records_before(cut);
        auto v = Volume::open(dir);
        ASSERT_TRUE(v.has_value()) << v.error().message();
        const RecoveryReport& r = (*v)->recovery();
        EXPECT_EQ(r.records_replayed, kept);
        EXPECT_EQ(r.dropped_bytes, cut - valid_end(kept));
        if (cut != valid_end(kept)) {
            EXPECT_EQ(r.dropped_offset, valid_end(kept));
            EXPECT_EQ(r.dropped_records, 1u);
            EXPECT_FALSE(r.reason.empty());
        } else {
            EXPECT_TRUE(r.clean());
        }
        EXPECT_EQ(fs::file_size(journal(dir)), valid_end(kept)) << "torn tail not cut off";
        EXPECT_EQ(diff(states_[kept], *capture(**v)), "");
        // Writable after recovery, and the new record lands where the torn one was.
        ASSERT_TRUE((*v)->mkdir("/post", 0755).has_value());
        v->reset();
        auto again = Volume::open(dir);
        ASSERT_TRUE(again.has_value()) << again.error().message();
        EXPECT_TRUE((*again)->recovery().clean()) << (*again)->recovery().reason;
        EXPECT_EQ((*again)->recovery().records_replayed, kept + 1);
        Tree want = states_[kept];
        want["/post"] = Node{FileType::directory, 0755, 0, {}, {}};
        EXPECT_EQ(diff(want, *capture(**again)), "");
        ++cuts;
        if (HasFailure()) return;
    }
    fmt::print("journal cuts: {} offsets in the last 3 records ({} journal bytes)\n", cuts,
               journal_size_);
}

// A single flipped bit anywhere after the header: the records before the damaged frame, no
// more, no less; never a crash, never half a record.
TEST_F(VolumeRecovery, RandomBitFlipsRecoverExactlyThePrefixBeforeTheDamagedFrame) {
    const uint64_t flips = env_count("PACKFS_RECOVERY_FLIPS", sanitizer_run() ? 60 : 300);
    Rng rng(31337);
    const std::string pristine = test_support::slurp(journal(base_));
    for (uint64_t i = 0; i < flips; ++i) {
        const uint64_t at = volume::kJournalHeaderSize + rng.below(journal_size_ - volume::kJournalHeaderSize);
        const int bit = int(rng.below(8));
        SCOPED_TRACE(fmt::format("bit {} of byte {} flipped", bit, at));
        const std::string dir = copy("flip");
        std::string bytes = pristine;
        bytes[at] = char(bytes[at] ^ (1 << bit));
        {
            std::ofstream out(journal(dir), std::ios::binary | std::ios::trunc);
            out.write(bytes.data(), std::streamsize(bytes.size()));
        }
        std::size_t damaged = 0;  // index of the frame holding the flipped byte
        while (frames_[damaged].end <= at) ++damaged;
        auto v = Volume::open(dir);
        ASSERT_TRUE(v.has_value()) << v.error().message();
        const RecoveryReport& r = (*v)->recovery();
        EXPECT_EQ(r.records_replayed, damaged) << r.reason;
        EXPECT_EQ(r.dropped_offset, frames_[damaged].start);
        EXPECT_EQ(r.dropped_bytes, journal_size_ - frames_[damaged].start);
        ASSERT_LE(r.records_replayed, ops_.size());
        EXPECT_EQ(diff(states_[r.records_replayed], *capture(**v)), "");
        if (HasFailure()) return;
    }
}

// A well-formed header of a newer format version: ENOTSUP, naming the version.
TEST_F(VolumeRecovery, NewerJournalVersionIsRefusedWithEnotsup) {
    const std::string dir = copy("newer");
    std::string bytes = test_support::slurp(journal(dir));
    volume::JournalHeaderFields h;
    std::memcpy(&h.generation, bytes.data() + 16, 8);
    std::memcpy(&h.first_seq, bytes.data() + 24, 8);
    std::memcpy(h.volume_id.data(), bytes.data() + 32, 16);
    const auto header = volume::encode_journal_header(h, volume::kJournalVersion + 1);
    std::memcpy(bytes.data(), header.data(), header.size());
    {
        std::ofstream out(journal(dir), std::ios::binary | std::ios::trunc);
        out.write(bytes.data(), std::streamsize(bytes.size()));
    }
    auto v = Volume::open(dir);
    ASSERT_FALSE(v.has_value());
    EXPECT_EQ(v.error().code(), ENOTSUP) << v.error().message();
    EXPECT_NE(v.error().message().find(fmt::format("version {}", volume::kJournalVersion + 1)),
              std::string::npos)
        << v.error().message();
    // The same header re-encoded as version 1 opens (so it was the version, nothing else).
    const auto v1 = volume::encode_journal_header(h);
    std::memcpy(bytes.data(), v1.data(), v1.size());
    {
        std::ofstream out(journal(dir), std::ios::binary | std::ios::trunc);
        out.write(bytes.data(), std::streamsize(bytes.size()));
    }
    auto ok = Volume::open(dir);
    ASSERT_TRUE(ok.has_value()) << ok.error().message();
    EXPECT_EQ(diff(states_.back(), *capture(**ok)), "");
}

// check_volume on a damaged copy reports what recovery would drop and changes no byte.
TEST_F(VolumeRecovery, CheckVolumeReportsTheDamageAndChangesNothing) {
    {
        auto clean = check_volume(base_);
        ASSERT_TRUE(clean.has_value()) << clean.error().message();
        EXPECT_TRUE(clean->ok()) << clean->journal.reason << clean->replay_error;
        EXPECT_EQ(clean->journal.records_replayed, ops_.size());
    }
    const std::string dir = copy("check");
    const uint64_t cut = frames_[frames_.size() - 2].start + 5;  // inside the second to last
    fs::resize_file(journal(dir), cut);
    const auto before = dir_bytes(dir);
    auto check = check_volume(dir);
    ASSERT_TRUE(check.has_value()) << check.error().message();
    EXPECT_FALSE(check->ok());
    EXPECT_TRUE(check->pack.ok());
    EXPECT_EQ(check->replay_error, "");
    EXPECT_EQ(check->journal.records_replayed, ops_.size() - 2);
    EXPECT_EQ(check->journal.dropped_offset, frames_[frames_.size() - 2].start);
    EXPECT_EQ(check->journal.dropped_bytes, 5u);
    EXPECT_EQ(dir_bytes(dir), before) << "check_volume changed the directory";
    EXPECT_EQ(dir_names(dir), [&] {
        std::vector<std::string> n;
        for (const auto& [k, v] : before) n.push_back(k);
        return n;
    }()) << "check_volume created or removed a file";
    // And recovery then drops exactly what the check said.
    auto v = Volume::open(dir);
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ((*v)->recovery().dropped_bytes, check->journal.dropped_bytes);
    EXPECT_EQ((*v)->recovery().dropped_offset, check->journal.dropped_offset);
    EXPECT_EQ(diff(states_[ops_.size() - 2], *capture(**v)), "");
}

}  // namespace
}  // namespace packfs::volume_test
