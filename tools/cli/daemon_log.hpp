// Where a mount's daemon reports what goes wrong while it serves (a remote pack's failed
// fetches, the error that ended it): the file `packfs mount --log FILE` names when given, else
// standard error while the daemon has one (-f, or until it detaches), then syslog.
#pragma once

#include <string>
#include <string_view>

#include "packfs/error.hpp"

namespace packfs::cli::daemon_log {

// --log FILE: opened for appending (created 0644 if missing); every line from now on goes
// there, stamped with the UTC time and the daemon's pid, one write each.
Result<void> open_file(const std::string& path);
// Standard error is /dev/null from now on: lines not going to a file go to syslog.
void detached();
// One line (no newline). `priority`: syslog's (LOG_WARNING, LOG_ERR).
void write(std::string_view line, int priority);

}  // namespace packfs::cli::daemon_log
