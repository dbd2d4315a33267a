#include "pack_report.hpp"

#include <fmt/format.h>
#include <xxhash.h>

#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "content.hpp"
#include "format.hpp"
#include "tree.hpp"

namespace packfs::cli {

const char* compression_name(Compression compression) noexcept {
    switch (compression) {
        case Compression::none:
            return "none";
        case Compression::zstd:
            return "zstd";
        case Compression::lz4:
            return "lz4";
    }
    return "?";
}

double dedup_savings_percent(const PackStats& stats) noexcept {
    if (stats.file_bytes == 0 || stats.unique_bytes >= stats.file_bytes) return 0;
    return 100.0 * static_cast<double>(stats.file_bytes - stats.unique_bytes) /
           static_cast<double>(stats.file_bytes);
}

double compression_ratio(const PackStats& stats) noexcept {
    if (stats.data_bytes == 0) return 1;
    return static_cast<double>(stats.stream_bytes) / static_cast<double>(stats.data_bytes);
}

std::string pack_stats_text(const PackStats& s) {
    std::string out;
    out += fmt::format(
        "  entries   {}: {}, {}, {}, {}; {}; {}\n", counted(s.inodes, "inode", "inodes"),
        counted(s.directories, "directory", "directories"),
        counted(s.regular_files, "file", "files"), counted(s.symlinks, "symlink", "symlinks"),
        counted(s.specials, "special", "specials"),
        counted(s.hard_links, "hard link", "hard links"), counted(s.xattrs, "xattr", "xattrs"));
    if (s.excluded > 0) {
        out += fmt::format("  excluded  {} (a directory counted once)\n",
                           counted(s.excluded, "entry", "entries"));
    }
    out += fmt::format("  content   {} in files, {} unique (dedup saved {:.1f}%), {} inline\n",
                       human_size(s.file_bytes), human_size(s.unique_bytes),
                       dedup_savings_percent(s), human_size(s.inline_bytes));
    out += fmt::format(
        "  stored    stream {} -> data {} (compression ratio {:.2f}x), metadata {}, pack {}\n",
        human_size(s.stream_bytes), human_size(s.data_bytes), compression_ratio(s),
        human_size(s.metadata_bytes), human_size(s.pack_bytes));
    if (s.extents > 0)
        out += fmt::format("  extents   {}, {} referenced in its bases\n", s.extents,
                           human_size(s.base_bytes));
    if (s.unchanged_files > 0)
        out += fmt::format("  unchanged {} the base's files cache knew, not read\n",
                           counted(s.unchanged_files, "file", "files"));
    out += fmt::format("  digest    {}\n", s.digest);
    return out;
}

Json pack_stats_json(const PackStats& s) {
    return Json{{"inodes", s.inodes},
                {"directories", s.directories},
                {"regular_files", s.regular_files},
                {"symlinks", s.symlinks},
                {"specials", s.specials},
                {"hard_links", s.hard_links},
                {"xattrs", s.xattrs},
                {"excluded", s.excluded},
                {"file_bytes", s.file_bytes},
                {"unique_bytes", s.unique_bytes},
                {"dedup_savings_pct", dedup_savings_percent(s)},
                {"inline_bytes", s.inline_bytes},
                {"stream_bytes", s.stream_bytes},
                {"data_bytes", s.data_bytes},
                {"compression_ratio", compression_ratio(s)},
                {"metadata_bytes", s.metadata_bytes},
                {"pack_bytes", s.pack_bytes},
                {"extents", s.extents},
                {"base_bytes", s.base_bytes},
                {"unchanged_files", s.unchanged_files},
                {"digest", s.digest}};
}

namespace {

struct RegularFile {
    uint64_t size;
    std::string path;  // the first name of the inode
};

// A 64-bit hash of a file's bytes, to pick candidates; a match is confirmed byte by byte.
Result<uint64_t> content_hash(Backend& fs, const std::string& path,
                              const std::function<void(uint64_t)>& bytes_read) {
    auto reader = ContentReader::open(fs, path);
    if (!reader) return std::unexpected(reader.error());
    uint64_t hash = 0;
    auto ok = reader->for_each_slice([&](std::span<const std::byte> slice) -> Result<void> {
        hash = XXH3_64bits_withSeed(slice.data(), slice.size(), hash);
        bytes_read(slice.size());
        return {};
    });
    if (!ok) return std::unexpected(ok.error());
    return hash;
}

struct DistinctBytes {
    uint64_t all = 0;
    uint64_t inline_only = 0;  // of contents small enough to live in the metadata
};

// Bytes of the distinct contents among `files`, as dedup stores them. Only files whose size
// another file shares are read at all.
Result<DistinctBytes> distinct_content_bytes(Backend& fs, const std::vector<RegularFile>& files,
                                             uint64_t inline_max,
                                             const std::function<void(uint64_t)>& bytes_read) {
    std::map<uint64_t, std::vector<const RegularFile*>> by_size;
    for (const RegularFile& file : files) by_size[file.size].push_back(&file);
    DistinctBytes total;
    const auto add = [&total, inline_max](uint64_t size) {
        total.all += size;
        if (size <= inline_max) total.inline_only += size;
    };
    for (const auto& [size, group] : by_size) {
        if (group.size() == 1 || size == 0) {
            add(size);
            continue;
        }
        // Distinct contents of this size seen so far, by hash: the path of one holder each.
        std::unordered_map<uint64_t, std::vector<const std::string*>> seen;
        for (const RegularFile* file : group) {
            auto hash = content_hash(fs, file->path, bytes_read);
            if (!hash) return std::unexpected(hash.error());
            auto& holders = seen[*hash];
            bool duplicate = false;
            for (const std::string* holder : holders) {
                auto same = same_content(fs, *holder, fs, file->path);
                if (!same) return std::unexpected(same.error());
                if (*same) {
                    duplicate = true;
                    break;
                }
            }
            if (duplicate) continue;
            holders.push_back(&file->path);
            add(size);
        }
    }
    return total;
}

}  // namespace

Result<PackStats> tally_pack(PackBackend& pack, const TallyProgress& progress) {
    PackStats stats;
    const PackInfo& info = pack.info();
    std::unordered_set<uint64_t> inodes;
    std::vector<RegularFile> files;
    std::optional<Error> first_error;
    uint64_t entries = 0, bytes_read = 0;
    walk_tree(pack, "/",
              {.entry =
                   [&](const std::string& path, const Stat& st) {
                       if (progress) progress(++entries, bytes_read);
                       if (!inodes.insert(st.ino).second) {
                           ++stats.hard_links;
                           return;
                       }
                       switch (st.type) {
                           case FileType::directory:
                               ++stats.directories;
                               break;
                           case FileType::regular:
                               ++stats.regular_files;
                               stats.file_bytes += st.size;
                               files.push_back({st.size, path});
                               break;
                           case FileType::symlink:
                               ++stats.symlinks;
                               break;
                           default:
                               ++stats.specials;
                               break;
                       }
                       auto names = pack.listxattr(path);
                       if (names) {
                           stats.xattrs += names->size();
                       } else if (!first_error) {
                           first_error = names.error();
                       }
                   },
               .on_error =
                   [&](const Error& error) {
                       if (!first_error) first_error = error;
                   }});
    if (first_error) return std::unexpected(*first_error);
    stats.inodes = inodes.size();
    // Counted as a build counts them: every distinct content once, inline ones included.
    auto unique = distinct_content_bytes(pack, files, info.inline_max, [&](uint64_t n) {
        bytes_read += n;
        if (progress) progress(entries, bytes_read);
    });
    if (!unique) return std::unexpected(unique.error());
    stats.unique_bytes = unique->all;
    stats.inline_bytes = unique->inline_only;
    stats.stream_bytes = info.stream_size;
    stats.data_bytes = info.data_length;
    stats.metadata_bytes = info.meta_stored_length;  // as a build counts it: as stored
    stats.pack_bytes = info.file_size;
    stats.digest = info.digest;
    return stats;
}

}  // namespace packfs::cli
