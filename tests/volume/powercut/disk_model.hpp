// A model of what a disk may hold after a power cut: from the calls recorded in one directory
// (disk_log.hpp), every state a cut after the k-th call could leave, enumerated where the
// choices are few and sampled with a seeded generator where they are many.
//
// The model (what the volume may rely on, and no more):
//
//   File content. Each file (an inode, not a name) holds what its last completed fsync or
//   fdatasync made durable, plus any subset of the writes and ftruncates made to it since,
//   applied in any order; each kept write may be torn at 512-byte sector boundaries of the
//   file (any subset of its sectors reached the disk, the others keep what they held before,
//   zeros past the old end). A kept write extends the file to its end even when its last
//   sectors did not make it (XFS could show such zeros; ext4's data=ordered never does, and
//   its states are a subset of these). A file that was never synced holds a subset of all
//   its writes over nothing.
//
//   Names. Creating, renaming and unlinking a name are namespace operations. Journaling
//   filesystems (ext4, XFS) commit them in the order they were made, all directories in one
//   journal, so the names after a cut are those after some prefix of the namespace operations:
//   at least every one made before the last fsync of a directory it touched (an fsync of the
//   directory commits the journal up to it, and with it everything before), at most all of
//   them. An fsync of a file does not make its name durable here. On ext4 it does in practice
//   (the fsync commits the running transaction, which holds the name); POSIX does not promise
//   it, and PackFS fsyncs the directory after every name it relies on, so the model takes the
//   weaker rule, which gives more states, and every state ext4 can leave is among them. A name
//   whose operation was not kept names what it named before (an unlinked file still there, a
//   renamed file under its old name); a file with no name left is gone.
//
//   Content and names are independent: a file's name may be durable while its content is not
//   (the empty file after a crash that auto_da_alloc works around), and the other way round.
//
// The enumeration. For a cut after k calls, the open choices are the namespace operations not
// yet committed and, for each file, its changes since its last sync. systematic() gives: every
// unsynced change kept (what a process kill leaves); nothing unsynced kept; every prefix of the
// namespace operations, with all content and with none; for each file, every prefix of its
// unsynced changes and each one dropped alone (the rest kept); and each unsynced write torn at
// every sector boundary (at most kMaxTornBoundaries of them, evenly spaced, for a long write),
// once as the last change that reached the disk with its first sectors written and once with
// every other change kept and only its last sectors written. random() draws the rest: a random
// prefix of names, and for each file a random subset of its unsynced changes in order or
// shuffled, each kept write torn half of the time: a random set of its sectors, or a random
// prefix or suffix of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "volume/powercut/disk_log.hpp"
#include "volume/volume_test_util.hpp"

namespace packfs::powercut {

inline constexpr uint64_t kSectorBytes = 512;
inline constexpr std::size_t kMaxTornBoundaries = 32;

// One unsynced change that reached the disk in a state.
struct KeptChange {
    uint32_t change = 0;        // its index among the file's unsynced changes at the cut
    std::vector<bool> sectors;  // a write's sectors that made it (file-aligned); empty: all
};

// One state a power cut may leave: the cut, and what it kept of what was not yet durable.
struct CutState {
    std::size_t cut = 0;         // calls completed: the first `cut` of the log
    std::size_t names_kept = 0;  // of the uncommitted namespace operations, this many (a prefix)
    // By file: the unsynced changes that reached the disk, in the order applied. A file not in
    // the map kept all of them, in order.
    std::map<uint32_t, std::vector<KeptChange>> kept;
    std::string how;  // how the state was chosen ("every unsynced change kept", ...)
};

// The files a state leaves in the directory: name -> content.
using DiskImage = std::map<std::string, std::string>;

class DiskModel {
public:
    explicit DiskModel(std::vector<DiskOp> ops);

    const std::vector<DiskOp>& ops() const noexcept { return ops_; }
    // Cut points: 0 (before the first call) .. ops().size().
    std::size_t cuts() const noexcept { return cuts_.size(); }
    // Whether a cut leaves anything open (more than one state).
    bool open_at(std::size_t cut) const;
    // How much a cut leaves open, roughly: its uncommitted namespace operations, plus one for
    // each unsynced change and one for each sector of an unsynced write (up to
    // kMaxTornBoundaries a write). 0 when nothing is open. A weight for drawing random states.
    std::size_t freedom(std::size_t cut) const;

    std::vector<CutState> systematic(std::size_t cut) const;
    CutState random(std::size_t cut, volume_test::Rng& rng) const;

    DiskImage image(const CutState& state) const;
    // What determines the state's image, as bytes: states with equal fingerprints have equal
    // images, whatever their cuts (a cut after an fsync that changed nothing, say). Cheaper
    // than the image, for telling states apart before building them.
    std::string fingerprint(const CutState& state) const;
    // The cut's last call and each choice the state made, for a failure report.
    std::string describe(const CutState& state) const;
    // Calls the model could not replay (a write to a file it never saw created).
    const std::vector<std::string>& problems() const noexcept { return problems_; }

private:
    enum class NameOpKind : uint8_t { create, unlink, rename };
    struct NameOp {
        NameOpKind kind;
        std::string name, to;
        uint32_t file = 0;  // create
    };
    // A file at a cut: its durable content and its unsynced changes (indices into ops_).
    struct FileAtCut {
        uint32_t file = 0;
        std::shared_ptr<const std::string> durable;
        std::vector<uint32_t> unsynced;
    };
    struct Cut {
        std::size_t names_committed = 0;  // namespace operations durable at the cut
        std::size_t names_done = 0;       // made by the cut
        std::vector<FileAtCut> files;     // every file made so far, indexed by its id
    };

    std::map<std::string, uint32_t> names_of(const Cut& cut, std::size_t kept) const;
    std::string content_of(const FileAtCut& file, const std::vector<KeptChange>* kept) const;
    std::string file_label(uint32_t file) const;

    std::vector<DiskOp> ops_;
    std::vector<NameOp> names_;         // every namespace operation, in order
    std::vector<Cut> cuts_;
    std::vector<std::string> labels_;   // by file id: the name it was created under
    std::vector<std::string> problems_;
};

}  // namespace packfs::powercut
