// A one-line progress display on stderr, only when stderr is a terminal (a log or a pipe gets
// nothing), redrawn at most ten times a second and erased when the work is done.
#pragma once

#include <chrono>
#include <string>
#include <utility>

namespace packfs::cli {

class ProgressLine {
public:
    ProgressLine();
    ~ProgressLine() { clear(); }
    ProgressLine(const ProgressLine&) = delete;
    ProgressLine& operator=(const ProgressLine&) = delete;

    bool enabled() const noexcept { return enabled_; }

    // Redraws the line with make_text() if the last redraw is 100 ms old; make_text is not
    // called otherwise, so building the text costs nothing on the hot path.
    template <class MakeText>
    void update(MakeText&& make_text) {
        if (!enabled_) return;
        const auto now = std::chrono::steady_clock::now();
        if (shown_ && now - last_ < kInterval) return;
        last_ = now;
        draw(std::forward<MakeText>(make_text)());
    }

    // Erases the line (before printing results or errors).
    void clear();

private:
    static constexpr std::chrono::milliseconds kInterval{100};
    void draw(const std::string& text);

    bool enabled_;
    bool shown_ = false;
    std::chrono::steady_clock::time_point last_{};
};

}  // namespace packfs::cli
