#include "bench/progress.hpp"

#include <fmt/format.h>

namespace packfs::bench {

Progress::Progress(ProgressStyle style, std::size_t total_steps, std::FILE* out,
                   std::chrono::milliseconds interval)
    : style_(style), total_(total_steps), out_(out), interval_(interval) {
    if (style_ == ProgressStyle::off) return;
    ticker_ = std::jthread([this](const std::stop_token& stop) { tick(stop); });
}

Progress::~Progress() {
    if (ticker_.joinable()) {
        ticker_.request_stop();
        ticker_.join();
    }
    if (style_ == ProgressStyle::in_place) {
        fmt::print(out_, "\r\033[K");
        std::fflush(out_);
    }
}

void Progress::group(const std::string& category) {
    if (style_ == ProgressStyle::off) return;
    std::lock_guard lock(mutex_);
    what_ = category;
    print_locked(true);
}

void Progress::step(const std::string& category, const std::string& backend, int run, int runs) {
    std::lock_guard lock(mutex_);
    ++done_;
    if (style_ == ProgressStyle::off) return;
    what_ = fmt::format("{}, {}, run {}/{}", category, backend, run, runs);
    // Lines are for the ticker and group starts: one per run would flood a log.
    if (style_ == ProgressStyle::in_place) print_locked(false);
}

// "[12/140] create files, raw+fsync, run 2/5, 37 s elapsed, ~110 s left": the estimate
// assumes the remaining runs cost what the finished ones did on average, so it is rough (the
// in-memory runs are quick, the host fs's slow), and absent until a tenth is done.
std::string Progress::line_locked() const {
    using namespace std::chrono;
    const double elapsed = duration<double>(steady_clock::now() - start_).count();
    std::string line = fmt::format("[{}/{}] {}, {:.0f} s elapsed", done_, total_, what_, elapsed);
    if (done_ > 1 && done_ * 10 >= total_ && done_ <= total_) {
        const double per_step = elapsed / static_cast<double>(done_ - 1);
        line += fmt::format(", ~{:.0f} s left", per_step * static_cast<double>(total_ - done_ + 1));
    }
    return line;
}

void Progress::print_locked(bool whole_line) {
    if (style_ == ProgressStyle::in_place) {
        fmt::print(out_, "\r\033[K{}", line_locked());
    } else if (whole_line) {
        fmt::print(out_, "packfs-bench: {}\n", line_locked());
    }
    std::fflush(out_);
}

void Progress::tick(const std::stop_token& stop) {
    std::unique_lock lock(mutex_);
    while (!stop.stop_requested()) {
        if (wake_.wait_for(lock, stop, interval_, [] { return false; })) break;
        if (stop.stop_requested()) break;
        // In place, the redraw keeps the elapsed time moving through a long run.
        print_locked(true);
    }
}

}  // namespace packfs::bench
