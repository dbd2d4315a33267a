#include "volume/powercut/disk_model.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace packfs::powercut {

using io::IoEventKind;

namespace {

// The sectors a write covers, counted from the one its first byte is in.
std::size_t sector_count(const DiskOp& op) {
    if (op.data.empty()) return 0;
    const uint64_t end = op.offset + op.data.size();
    return static_cast<std::size_t>((end - 1) / kSectorBytes - op.offset / kSectorBytes + 1);
}

// The write's bytes in `content`, only in the sectors `sectors` names (empty: all). The file
// grows to the write's end either way.
void apply_write(std::string& content, const DiskOp& op, const std::vector<bool>& sectors) {
    const uint64_t end = op.offset + op.data.size();
    if (content.size() < end) content.resize(end, '\0');
    if (sectors.empty()) {
        std::memcpy(content.data() + op.offset, op.data.data(), op.data.size());
        return;
    }
    const uint64_t first = op.offset / kSectorBytes;
    for (std::size_t j = 0; j < sectors.size(); ++j) {
        if (!sectors[j]) continue;
        const uint64_t lo = std::max(op.offset, (first + j) * kSectorBytes);
        const uint64_t hi = std::min(end, (first + j + 1) * kSectorBytes);
        if (lo < hi) std::memcpy(content.data() + lo, op.data.data() + (lo - op.offset), hi - lo);
    }
}

void apply_change(std::string& content, const DiskOp& op, const std::vector<bool>& sectors) {
    if (op.kind == IoEventKind::write)
        apply_write(content, op, sectors);
    else
        content.resize(op.offset, '\0');  // ftruncate
}

// Sector boundaries of an n-sector write to tear it at: all of 1..n-1, or kMaxTornBoundaries
// of them evenly spaced (the first and last included); {0} for a one-sector write (nothing of
// it written but the size).
std::vector<std::size_t> tear_points(std::size_t n) {
    if (n <= 1) return {0};
    std::vector<std::size_t> out;
    if (n - 1 <= kMaxTornBoundaries) {
        for (std::size_t b = 1; b < n; ++b) out.push_back(b);
        return out;
    }
    for (std::size_t k = 0; k < kMaxTornBoundaries; ++k)
        out.push_back(1 + k * (n - 2) / (kMaxTornBoundaries - 1));
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::vector<bool> sectors_between(std::size_t n, std::size_t from, std::size_t to) {
    std::vector<bool> mask(n, false);
    for (std::size_t j = from; j < to && j < n; ++j) mask[j] = true;
    return mask;
}

std::string ranges_of(const std::vector<bool>& mask) {
    std::string out;
    for (std::size_t j = 0; j < mask.size();) {
        if (!mask[j]) {
            ++j;
            continue;
        }
        std::size_t k = j;
        while (k + 1 < mask.size() && mask[k + 1]) ++k;
        out += (out.empty() ? "" : ",") + (j == k ? fmt::format("{}", j) : fmt::format("{}-{}", j, k));
        j = k + 1;
    }
    return out.empty() ? "none" : out;
}

}  // namespace

DiskModel::DiskModel(std::vector<DiskOp> ops) : ops_(std::move(ops)) {
    struct FileNow {
        std::shared_ptr<const std::string> durable = std::make_shared<const std::string>();
        std::vector<uint32_t> unsynced;
    };
    std::vector<FileNow> files;
    std::map<uint64_t, uint32_t> by_ino;  // the file each inode number names now
    std::size_t committed = 0;
    auto file_of = [&](const DiskOp& op, std::size_t i) -> FileNow* {
        auto it = by_ino.find(op.ino);
        if (it == by_ino.end()) {
            problems_.push_back(
                fmt::format("call {} ({}) on a file never created", i + 1, powercut::describe(op)));
            return nullptr;
        }
        return &files[it->second];
    };
    cuts_.push_back(Cut{});
    for (std::size_t i = 0; i < ops_.size(); ++i) {
        const DiskOp& op = ops_[i];
        switch (op.kind) {
            case IoEventKind::create: {
                const auto id = static_cast<uint32_t>(files.size());
                files.emplace_back();
                by_ino[op.ino] = id;
                labels_.push_back(op.name);
                names_.push_back(NameOp{NameOpKind::create, op.name, {}, id});
                break;
            }
            case IoEventKind::unlink: names_.push_back(NameOp{NameOpKind::unlink, op.name, {}, 0}); break;
            case IoEventKind::rename:
                names_.push_back(NameOp{NameOpKind::rename, op.name, op.to, 0});
                break;
            case IoEventKind::write:
            case IoEventKind::truncate:
                if (FileNow* f = file_of(op, i)) f->unsynced.push_back(static_cast<uint32_t>(i));
                break;
            case IoEventKind::fsync:
                if (FileNow* f = file_of(op, i); f && !f->unsynced.empty()) {
                    std::string content = *f->durable;
                    for (uint32_t change : f->unsynced) apply_change(content, ops_[change], {});
                    f->durable = std::make_shared<const std::string>(std::move(content));
                    f->unsynced.clear();
                }
                break;
            case IoEventKind::fsync_dir: committed = names_.size(); break;
        }
        Cut cut;
        cut.names_committed = committed;
        cut.names_done = names_.size();
        cut.files.reserve(files.size());
        for (uint32_t id = 0; id < files.size(); ++id)
            cut.files.push_back(FileAtCut{id, files[id].durable, files[id].unsynced});
        cuts_.push_back(std::move(cut));
    }
}

bool DiskModel::open_at(std::size_t cut) const {
    const Cut& c = cuts_.at(cut);
    if (c.names_done > c.names_committed) return true;
    return std::any_of(c.files.begin(), c.files.end(),
                       [](const FileAtCut& f) { return !f.unsynced.empty(); });
}

std::size_t DiskModel::freedom(std::size_t cut) const {
    const Cut& c = cuts_.at(cut);
    std::size_t n = c.names_done - c.names_committed;
    for (const FileAtCut& f : c.files)
        for (uint32_t change : f.unsynced)
            n += 1 + std::min(sector_count(ops_[change]), kMaxTornBoundaries);
    return n;
}

std::vector<CutState> DiskModel::systematic(std::size_t cut) const {
    const Cut& c = cuts_.at(cut);
    const std::size_t uncommitted = c.names_done - c.names_committed;
    std::vector<CutState> out;
    auto all_kept = [&](std::string how) {
        CutState s;
        s.cut = cut;
        s.names_kept = uncommitted;
        s.how = std::move(how);
        return s;
    };
    out.push_back(all_kept("every unsynced change kept"));
    if (!open_at(cut)) return out;
    CutState nothing = all_kept("nothing unsynced kept");
    nothing.names_kept = 0;
    for (const FileAtCut& f : c.files)
        if (!f.unsynced.empty()) nothing.kept[f.file] = {};
    out.push_back(nothing);

    for (std::size_t j = 1; j < uncommitted; ++j) {
        CutState s = all_kept(fmt::format("{} of {} uncommitted names, all content", j, uncommitted));
        s.names_kept = j;
        out.push_back(std::move(s));
        CutState t = nothing;
        t.names_kept = j;
        t.how = fmt::format("{} of {} uncommitted names, no unsynced content", j, uncommitted);
        out.push_back(std::move(t));
    }
    if (uncommitted > 0) {
        CutState s = all_kept("no uncommitted names, all content");
        s.names_kept = 0;
        out.push_back(std::move(s));
    }

    for (const FileAtCut& f : c.files) {
        const std::size_t m = f.unsynced.size();
        if (m == 0) continue;
        const std::string label = file_label(f.file);
        auto changes = [&](std::size_t from, std::size_t to) {
            std::vector<KeptChange> v;
            for (std::size_t i = from; i < to; ++i) v.push_back(KeptChange{static_cast<uint32_t>(i), {}});
            return v;
        };
        for (std::size_t i = 0; i < m; ++i) {
            CutState s = all_kept(fmt::format("{}: the first {} of {} unsynced changes", label, i, m));
            s.kept[f.file] = changes(0, i);
            out.push_back(std::move(s));
        }
        for (std::size_t i = 0; m > 1 && i + 1 < m; ++i) {  // the last alone is a prefix above
            CutState s = all_kept(fmt::format("{}: unsynced change {} of {} lost alone", label, i + 1, m));
            auto v = changes(0, m);
            v.erase(v.begin() + static_cast<long>(i));
            s.kept[f.file] = std::move(v);
            out.push_back(std::move(s));
        }
        for (std::size_t i = 0; i < m; ++i) {
            const DiskOp& op = ops_[f.unsynced[i]];
            if (op.kind != IoEventKind::write) continue;
            const std::size_t n = sector_count(op);
            for (std::size_t b : tear_points(n)) {
                CutState last = all_kept(fmt::format(
                    "{}: unsynced change {} of {} torn, its first {} of {} sectors written, the "
                    "changes after it lost",
                    label, i + 1, m, b, n));
                auto v = changes(0, i);
                v.push_back(KeptChange{static_cast<uint32_t>(i), sectors_between(n, 0, b)});
                last.kept[f.file] = std::move(v);
                out.push_back(std::move(last));
                if (n <= 1) continue;
                CutState middle = all_kept(fmt::format(
                    "{}: unsynced change {} of {} torn, only its sectors {}..{} of {} written, "
                    "the other changes kept",
                    label, i + 1, m, b, n - 1, n));
                auto w = changes(0, m);
                w[i].sectors = sectors_between(n, b, n);
                middle.kept[f.file] = std::move(w);
                out.push_back(std::move(middle));
            }
        }
    }
    return out;
}

CutState DiskModel::random(std::size_t cut, volume_test::Rng& rng) const {
    const Cut& c = cuts_.at(cut);
    CutState s;
    s.cut = cut;
    s.names_kept = rng.below(c.names_done - c.names_committed + 1);
    s.how = "random";
    for (const FileAtCut& f : c.files) {
        const std::size_t m = f.unsynced.size();
        if (m == 0 || rng.below(10) < 3) continue;  // a file not in the map kept everything
        std::vector<KeptChange> v;
        for (std::size_t i = 0; i < m; ++i)
            if (rng.below(2) == 0) v.push_back(KeptChange{static_cast<uint32_t>(i), {}});
        if (rng.below(3) == 0) {  // applied in another order
            for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
        }
        for (KeptChange& k : v) {
            const DiskOp& op = ops_[f.unsynced[k.change]];
            if (op.kind != IoEventKind::write || rng.below(2) != 0) continue;
            const std::size_t n = sector_count(op);
            const std::size_t b = rng.below(n + 1);
            switch (rng.below(3)) {
                case 0:
                    k.sectors.resize(n);
                    for (std::size_t j = 0; j < n; ++j) k.sectors[j] = rng.below(2) == 0;
                    break;
                case 1: k.sectors = sectors_between(n, 0, b); break;
                default: k.sectors = sectors_between(n, b, n); break;
            }
        }
        s.kept[f.file] = std::move(v);
    }
    return s;
}

std::map<std::string, uint32_t> DiskModel::names_of(const Cut& cut, std::size_t kept) const {
    std::map<std::string, uint32_t> names;
    const std::size_t end = std::min(cut.names_committed + kept, cut.names_done);
    for (std::size_t i = 0; i < end; ++i) {
        const NameOp& op = names_[i];
        switch (op.kind) {
            case NameOpKind::create: names[op.name] = op.file; break;
            case NameOpKind::unlink: names.erase(op.name); break;
            case NameOpKind::rename:
                if (auto it = names.find(op.name); it != names.end()) {
                    const uint32_t file = it->second;
                    names.erase(it);
                    names[op.to] = file;
                }
                break;
        }
    }
    return names;
}

std::string DiskModel::content_of(const FileAtCut& file, const std::vector<KeptChange>* kept) const {
    std::string content = *file.durable;
    if (!kept) {
        for (uint32_t change : file.unsynced) apply_change(content, ops_[change], {});
        return content;
    }
    for (const KeptChange& k : *kept) apply_change(content, ops_[file.unsynced.at(k.change)], k.sectors);
    return content;
}

DiskImage DiskModel::image(const CutState& state) const {
    const Cut& c = cuts_.at(state.cut);
    DiskImage image;
    for (const auto& [name, file] : names_of(c, state.names_kept)) {
        auto it = state.kept.find(file);
        image[name] = content_of(c.files.at(file), it == state.kept.end() ? nullptr : &it->second);
    }
    return image;
}

std::string DiskModel::fingerprint(const CutState& state) const {
    const Cut& c = cuts_.at(state.cut);
    std::string out;
    auto put = [&](uint64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); };
    for (const auto& [name, file] : names_of(c, state.names_kept)) {
        out += name;
        out += '\0';
        const FileAtCut& f = c.files.at(file);
        put(reinterpret_cast<uintptr_t>(f.durable.get()));  // one object per durable version
        auto it = state.kept.find(file);
        if (it == state.kept.end()) {
            for (uint32_t change : f.unsynced) put(change);
        } else {
            for (const KeptChange& k : it->second) {
                put(f.unsynced.at(k.change));
                for (bool sector : k.sectors) out += sector ? '1' : '0';
                out += '.';
            }
        }
        out += '\n';
    }
    return out;
}

std::string DiskModel::file_label(uint32_t file) const {
    return fmt::format("{} (file {})", labels_.at(file), file);
}

std::string DiskModel::describe(const CutState& state) const {
    const Cut& c = cuts_.at(state.cut);
    std::string out = state.cut == 0 ? fmt::format("cut before call 1 of {}", ops_.size())
                                     : fmt::format("cut after call {} of {} ({})", state.cut,
                                                   ops_.size(), powercut::describe(ops_[state.cut - 1]));
    out += fmt::format("; chosen as: {}", state.how);
    const std::size_t uncommitted = c.names_done - c.names_committed;
    if (uncommitted > 0) {
        out += fmt::format("\n  names: {} committed, {} of {} more kept:", c.names_committed,
                           state.names_kept, uncommitted);
        for (std::size_t i = c.names_committed; i < c.names_done; ++i) {
            const NameOp& op = names_[i];
            const char* kind = op.kind == NameOpKind::create ? "create"
                               : op.kind == NameOpKind::unlink ? "unlink"
                                                              : "rename";
            out += fmt::format(" [{} {} {}{}]", i < c.names_committed + state.names_kept ? "kept" : "lost",
                               kind, op.name, op.to.empty() ? "" : " -> " + op.to);
        }
    }
    for (const FileAtCut& f : c.files) {
        if (f.unsynced.empty()) continue;
        out += fmt::format("\n  {}: {} bytes durable, {} unsynced changes", file_label(f.file),
                           f.durable->size(), f.unsynced.size());
        auto it = state.kept.find(f.file);
        if (it == state.kept.end()) {
            out += ", all kept";
            continue;
        }
        out += it->second.empty() ? ", none kept" : ", kept in this order:";
        for (const KeptChange& k : it->second) {
            const DiskOp& op = ops_[f.unsynced[k.change]];
            out += fmt::format(" [{}: {}{}]", k.change + 1, powercut::describe(op),
                               k.sectors.empty() ? ""
                                                 : fmt::format(", sectors {} of {}", ranges_of(k.sectors),
                                                               k.sectors.size()));
        }
    }
    return out;
}

}  // namespace packfs::powercut
