// The time a mutation stamps (mtime, ctime, a new inode's times, "now" of utimens): the clock,
// or, while a volume records or replays an operation on this thread, the time the journal holds
// for it, so that a replay stamps exactly what the original did.
#pragma once

#include <optional>

#include "packfs/types.hpp"

namespace packfs {

namespace detail {
inline thread_local std::optional<Time> op_time;
}

inline Time op_now() noexcept { return detail::op_time ? *detail::op_time : Time::now(); }

// Mutations made by this thread while the scope lives are stamped `t`.
class OpTimeScope {
public:
    explicit OpTimeScope(Time t) noexcept : previous_(detail::op_time) { detail::op_time = t; }
    ~OpTimeScope() { detail::op_time = previous_; }
    OpTimeScope(const OpTimeScope&) = delete;
    OpTimeScope& operator=(const OpTimeScope&) = delete;

private:
    std::optional<Time> previous_;
};

}  // namespace packfs
