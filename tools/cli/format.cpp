#include "format.hpp"

#include <fmt/format.h>
#include <sys/sysmacros.h>

#include <array>
#include <cctype>
#include <ctime>
#include <limits>

namespace packfs::cli {

std::string human_size(uint64_t bytes) {
    static constexpr std::array<const char*, 6> kUnits = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) return fmt::format("{} B", bytes);
    double value = static_cast<double>(bytes) / 1024;
    std::size_t unit = 0;
    while (value >= 1024 && unit + 1 < kUnits.size()) {
        value /= 1024;
        ++unit;
    }
    return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::optional<uint64_t> parse_size(std::string_view text) {
    std::size_t digits = 0;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) {
        ++digits;
    }
    if (digits == 0) return std::nullopt;
    uint64_t value = 0;
    for (char c : text.substr(0, digits)) {
        const uint64_t digit = static_cast<uint64_t>(c - '0');
        if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) return std::nullopt;
        value = value * 10 + digit;
    }
    std::string suffix;
    for (char c : text.substr(digits)) suffix += static_cast<char>(std::toupper(c));
    // "K", "KB" and "KIB" all mean 1024: block sizes are powers of two, never powers of ten.
    if (suffix.ends_with("IB")) {
        suffix.erase(suffix.size() - 2);
    } else if (suffix.size() > 1 && suffix.ends_with("B")) {
        suffix.pop_back();
    }
    unsigned shift = 0;
    if (suffix.empty() || suffix == "B") {
        shift = 0;
    } else if (suffix == "K") {
        shift = 10;
    } else if (suffix == "M") {
        shift = 20;
    } else if (suffix == "G") {
        shift = 30;
    } else if (suffix == "T") {
        shift = 40;
    } else {
        return std::nullopt;
    }
    if (shift && value > (std::numeric_limits<uint64_t>::max() >> shift)) return std::nullopt;
    return value << shift;
}

std::string mode_string(FileType type, uint32_t mode) {
    char kind = '-';
    switch (type) {
        case FileType::regular:
            kind = '-';
            break;
        case FileType::directory:
            kind = 'd';
            break;
        case FileType::symlink:
            kind = 'l';
            break;
        case FileType::fifo:
            kind = 'p';
            break;
        case FileType::char_device:
            kind = 'c';
            break;
        case FileType::block_device:
            kind = 'b';
            break;
        case FileType::socket:
            kind = 's';
            break;
    }
    std::string out(10, '-');
    out[0] = kind;
    static constexpr std::array<char, 3> kRwx = {'r', 'w', 'x'};
    for (int i = 0; i < 9; ++i) {
        if (mode & (0400u >> i)) out[1 + i] = kRwx[i % 3];
    }
    // setuid, setgid and sticky replace the execute letter: lower case when it is also set.
    auto special = [&](uint32_t bit, std::size_t at, char letter) {
        if (!(mode & bit)) return;
        out[at] = out[at] == 'x' ? letter : static_cast<char>(std::toupper(letter));
    };
    special(04000, 3, 's');
    special(02000, 6, 's');
    special(01000, 9, 't');
    return out;
}

const char* type_description(FileType type, uint64_t size) {
    switch (type) {
        case FileType::regular:
            return size == 0 ? "regular empty file" : "regular file";
        case FileType::directory:
            return "directory";
        case FileType::symlink:
            return "symbolic link";
        case FileType::fifo:
            return "fifo";
        case FileType::char_device:
            return "character special file";
        case FileType::block_device:
            return "block special file";
        case FileType::socket:
            return "socket";
    }
    return "unknown";
}

namespace {

std::tm local_tm(Time t) {
    const std::time_t seconds = static_cast<std::time_t>(t.sec);
    std::tm tm{};
    localtime_r(&seconds, &tm);
    return tm;
}

std::string strftime_string(const char* format, const std::tm& tm) {
    std::array<char, 64> buf{};
    const std::size_t n = std::strftime(buf.data(), buf.size(), format, &tm);
    return std::string(buf.data(), n);
}

}  // namespace

std::string full_time(Time t) {
    const std::tm tm = local_tm(t);
    return fmt::format("{}.{:09} {}", strftime_string("%Y-%m-%d %H:%M:%S", tm), t.nsec,
                       strftime_string("%z", tm));
}

std::string short_time(Time t) {
    return strftime_string("%Y-%m-%d %H:%M", local_tm(t));
}

std::string child_path(std::string_view dir, std::string_view name) {
    std::string out(dir);
    if (out.empty() || out.back() != '/') out += '/';
    out += name;
    return out;
}

std::string counted(uint64_t n, std::string_view one, std::string_view many) {
    return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string device_numbers(uint64_t rdev) {
    return fmt::format("{}, {}", major(static_cast<dev_t>(rdev)), minor(static_cast<dev_t>(rdev)));
}

}  // namespace packfs::cli
