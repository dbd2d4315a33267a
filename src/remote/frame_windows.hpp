// How many stored bytes of a remote pack's metadata frames one fetch takes
// (pack::ByteSource::frame_window; the reader claims the frames within it that nobody has or
// fetches, pack/reader/meta_frames.hpp). kFirst for a fetch on its own. A fetch that starts
// within a recent one's window (a walk reading a section in order) continues it: twice that
// one's window, up to kMax. A walk reads several sections at once (inodes, dirents, names), so
// a few such streams are followed, the least recently used one replaced.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>

namespace packfs::remote {

class FrameWindows {
public:
    static constexpr uint64_t kFirst = 256 << 10;
    static constexpr uint64_t kMax = 4 << 20;

    // The window of a fetch that starts at file offset `offset`, remembered for the next.
    uint64_t next(uint64_t offset) noexcept {
        std::lock_guard lock(mutex_);
        Stream* slot = nullptr;
        for (Stream& s : streams_) {
            if (s.window != 0 && s.start < offset && offset <= s.start + s.window) slot = &s;
        }
        uint64_t window = kFirst;
        if (slot != nullptr) {
            window = std::min(2 * slot->window, kMax);
        } else {
            slot = &*std::min_element(
                streams_.begin(), streams_.end(),
                [](const Stream& a, const Stream& b) { return a.last_use < b.last_use; });
        }
        *slot = Stream{offset, window, ++clock_};
        return window;
    }

private:
    struct Stream {
        uint64_t start = 0;
        uint64_t window = 0;  // 0: unused
        uint64_t last_use = 0;
    };
    std::mutex mutex_;
    std::array<Stream, 8> streams_{};
    uint64_t clock_ = 0;
};

}  // namespace packfs::remote
