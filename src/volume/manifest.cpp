#include "volume/manifest.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <ctime>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/fd.hpp"
#include "core/io.hpp"

namespace packfs::volume {
namespace {

std::string hex(const std::array<uint8_t, 16>& id) {
    std::string out;
    for (uint8_t b : id) out += fmt::format("{:02x}", b);
    return out;
}

bool unhex(std::string_view text, std::array<uint8_t, 16>& id) {
    if (text.size() != 32) return false;
    for (std::size_t i = 0; i < 16; ++i) {
        unsigned v = 0;
        for (int j = 0; j < 2; ++j) {
            const char c = text[2 * i + j];
            v <<= 4;
            if (c >= '0' && c <= '9') v |= unsigned(c - '0');
            else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
            else return false;
        }
        id[i] = static_cast<uint8_t>(v);
    }
    return true;
}

// A file name the manifest may name: a plain name in the volume directory, nothing else.
bool plain_name(const std::string& name) {
    return !name.empty() && name.size() < 256 && name.find('/') == std::string::npos &&
           name != "." && name != "..";
}

std::unexpected<Error> bad_manifest(const std::string& what, uint64_t offset = 0) {
    return std::unexpected(
        Error::corrupt("open volume", kManifestName, Corruption{offset, 0, 0, what}));
}

}  // namespace

std::string pack_file_name(uint64_t generation) { return fmt::format("pack.{}", generation); }
std::string journal_file_name(uint64_t generation) { return fmt::format("journal.{}", generation); }

std::string utc_now_iso8601() {
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

Result<Manifest> read_manifest(const std::string& dir) {
    const std::string path = dir + "/" + kManifestName;
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return fail(errno, "open volume", kManifestName);
    std::string text;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(errno, "open volume", kManifestName);
        }
        if (n == 0) break;
        text.append(buf, static_cast<std::size_t>(n));
        if (text.size() > (1 << 20)) return bad_manifest("larger than 1 MiB");
    }
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        // The parser's own words ("syntax error while parsing value - invalid literal; last
        // read: ...") and the byte it stopped at.
        return bad_manifest(fmt::format("not valid JSON: {}", e.what()), e.byte);
    }
    if (!j.is_object())
        return bad_manifest(fmt::format("not a JSON object (the document is a {})", j.type_name()));
    try {
        if (j.value("format", "") != "packfs-volume") return bad_manifest("format is not packfs-volume");
        const uint64_t version = j.at("version").get<uint64_t>();
        if (version > kManifestVersion)
            return fail(ENOTSUP, "open volume",
                        fmt::format("{} (manifest version {} is newer than this PackFS reads, {})",
                                    kManifestName, version, kManifestVersion));
        Manifest m;
        if (!unhex(j.at("volume_id").get<std::string>(), m.volume_id)) return bad_manifest("volume_id");
        m.generation = j.at("generation").get<uint64_t>();
        m.pack = j.at("pack").get<std::string>();
        m.journal = j.at("journal").get<std::string>();
        m.first_seq = j.at("first_seq").get<uint64_t>();
        m.next_ino = j.at("next_ino").get<uint64_t>();
        auto durability = durability_from_name(j.at("durability").get<std::string>());
        if (!durability) return bad_manifest("durability (not always, batch or explicit)");
        m.durability = *durability;
        m.pack_digest = j.value("pack_digest", "");
        m.created = j.value("created", "");
        m.last_compaction = j.value("last_compaction", "");
        m.last_compaction_seconds = j.value("last_compaction_seconds", 0.0);
        if (!plain_name(m.pack) || !plain_name(m.journal) || m.pack == m.journal)
            return bad_manifest("pack or journal is not a file name in the volume");
        if (m.generation == 0 || m.first_seq == 0 || m.next_ino < 2)
            return bad_manifest("generation, first_seq or next_ino out of range");
        return m;
    } catch (const nlohmann::json::exception& e) {
        return bad_manifest(fmt::format("missing or mistyped field ({})", e.what()));
    }
}

Result<void> write_manifest(const std::string& dir, const Manifest& m) {
    nlohmann::json j;
    j["format"] = "packfs-volume";
    j["version"] = kManifestVersion;
    j["volume_id"] = hex(m.volume_id);
    j["generation"] = m.generation;
    j["pack"] = m.pack;
    j["journal"] = m.journal;
    j["first_seq"] = m.first_seq;
    j["next_ino"] = m.next_ino;
    j["durability"] = durability_name(m.durability);
    j["pack_digest"] = m.pack_digest;
    j["created"] = m.created;
    j["last_compaction"] = m.last_compaction;
    j["last_compaction_seconds"] = m.last_compaction_seconds;
    const std::string text = j.dump(2) + "\n";
    const std::string temp = dir + "/" + kManifestName + ".tmp";
    const std::string final_path = dir + "/" + kManifestName;
    auto created = io::create_file(temp, O_WRONLY | O_CREAT | O_TRUNC, 0644, "manifest");
    if (!created) return fail(created.error().code(), "write manifest", kManifestName);
    Fd fd = std::move(*created);
    auto bytes = std::as_bytes(std::span(text.data(), text.size()));
    if (auto ok = io::pwrite_all(fd.get(), bytes, 0, "manifest"); !ok) return ok;
    if (auto ok = io::fsync(fd.get(), "manifest"); !ok) return ok;
    fd = Fd();
    if (auto ok = io::step("manifest.before_rename"); !ok) return ok;
    if (auto ok = io::rename(temp, final_path, "manifest"); !ok) return ok;
    if (auto ok = io::step("manifest.after_rename"); !ok) return ok;
    return io::fsync_dir(dir, "volume directory");
}

}  // namespace packfs::volume
