// The calls that changed what a disk holds in one directory, in the order the kernel saw them:
// core/io.hpp's recorder, kept as values for the disk model (disk_model.hpp) to replay.
//
// A DiskRecorder installs the process-wide recorder for its lifetime and keeps the events
// whose file is in its directory (a file directly in it: the model knows one directory, which
// is all a volume is). Anything else in that directory, a subdirectory's file or a rename
// into or out of it, is noted as a problem the test reports rather than replayed wrongly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/io.hpp"

namespace packfs::powercut {

struct DiskOp {
    io::IoEventKind kind = io::IoEventKind::write;
    std::string name;      // the file's name in the directory; rename: the source; fsync_dir: ""
    std::string to;        // rename: the destination's name
    uint64_t ino = 0;      // create, write, truncate, fsync: the file's inode number
    uint64_t offset = 0;   // write: where the bytes went; truncate: the new size
    std::string data;      // write: the bytes
    bool data_only = false;  // fsync: an fdatasync
};

// "write journal.1 @4160 +96", "rename MANIFEST.tmp -> MANIFEST", "fsync_dir".
std::string describe(const DiskOp& op);

class DiskRecorder {
public:
    // Records the calls on files in `dir` (an existing directory) until stop() or destruction.
    explicit DiskRecorder(const std::string& dir);
    DiskRecorder(const DiskRecorder&) = delete;
    DiskRecorder& operator=(const DiskRecorder&) = delete;
    ~DiskRecorder();

    // The operations recorded so far.
    std::size_t count() const;
    // Removes the recorder and hands over what it recorded.
    std::vector<DiskOp> stop();
    // Calls in the directory the model cannot replay (one line each); empty when all is well.
    std::vector<std::string> problems() const;

private:
    void on_event(const io::IoEvent& event);
    // The name of `path` in the directory, or "" when it is elsewhere.
    std::string name_in_dir(std::string_view path);

    std::string dir_;
    mutable std::mutex mu_;
    std::vector<DiskOp> ops_;
    std::vector<std::string> problems_;
    bool recording_ = true;
};

}  // namespace packfs::powercut
