#include "remote/url_record.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <span>
#include <string_view>

#include "pack/format/digest.hpp"
#include "remote/oci.hpp"

namespace packfs::remote {

namespace {

std::string url_record(const std::string& cache_dir, const std::string& url) {
    const auto key = pack::sha256(std::as_bytes(std::span(url.data(), url.size())));
    return fmt::format("{}/urls/{}", cache_dir, pack::to_hex(key));
}

bool http_url(std::string_view url) {
    return url.starts_with("http://") || url.starts_with("https://");
}

// The record's next line (without its newline), taken off `rest`.
std::string_view next_line(std::string_view& rest) {
    const auto end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    return line;
}

}  // namespace

UrlRecord read_url_record(const std::string& cache_dir, const std::string& url) {
    std::FILE* f = std::fopen(url_record(cache_dir, url).c_str(), "re");
    if (f == nullptr) return {};
    std::string text(64 << 10, '\0');
    text.resize(std::fread(text.data(), 1, text.size(), f));
    std::fclose(f);
    std::string_view rest(text);
    const auto digest = parse_digest_hex(next_line(rest));
    if (!digest || digest->empty()) return {};
    UrlRecord record{*digest, {}, {}};
    if (rest.empty()) return record;
    record.blob_url = std::string(next_line(rest));
    if (!http_url(record.blob_url)) return {};
    while (!rest.empty()) {
        const std::string_view line = next_line(rest);
        const auto base = parse_digest_hex(line.substr(0, 64));
        if (!base || base->empty() || line.size() < 66 || line[64] != ' ' ||
            !http_url(line.substr(65)))
            return {};
        record.bases.emplace_back(*base, std::string(line.substr(65)));
    }
    return record;
}

void write_url_record(const std::string& cache_dir, const std::string& url,
                      const UrlRecord& record) {
    if (read_url_record(cache_dir, url) == record) return;
    const std::string path = url_record(cache_dir, url);
    ::mkdir(fmt::format("{}/urls", cache_dir).c_str(), 0700);
    const std::string tmp = fmt::format("{}.{}.tmp", path, ::getpid());
    std::FILE* f = std::fopen(tmp.c_str(), "we");
    if (f == nullptr) return;
    std::string text = record.digest;
    if (!record.blob_url.empty()) text += "\n" + record.blob_url;
    for (const auto& [digest, blob_url] : record.bases) text += fmt::format("\n{} {}", digest, blob_url);
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) != 0 || !ok || std::rename(tmp.c_str(), path.c_str()) != 0)
        std::remove(tmp.c_str());
}

}  // namespace packfs::remote
