// The engine's content changes (engine.hpp), under the writer lock: a held file's writes,
// truncates, fallocate and chunk-sharing clones.
#include <fcntl.h>

#include <algorithm>

#include "core/checks.hpp"
#include "mem/engine.hpp"

namespace packfs::mem {
namespace {

Result<void> check_fits(uint64_t offset, std::size_t length, std::string_view op) {
    if (offset > kMaxFileSize || length > kMaxFileSize - offset) return fail(EFBIG, op);
    return {};
}

}  // namespace

const Backing* Engine::writer_backing(const CellState& s) {
    if (s.type != FileType::regular || s.aux == 0 || !s.lower || !top()) return nullptr;
    return writer_files_.get(layer(s.layer), s.lower).get();  // (kept by writer_files_ until
                                                              // the writer's next get)
}


Result<void> Engine::relive(Cell* cell, std::string_view op) {
    const CellState& s = cell->state;
    if (s.kind == CellKind::live) return {};
    if (s.kind != CellKind::stub) return fail(ESTALE, op);
    // A rebase handed the file back to the lower while it was open: copied up again (its
    // holds stay where they are).
    auto owned = own_cell(Ref{cell->ino, cell, s.lower, s.type, s.layer});
    if (!owned) return std::unexpected(owned.error());
    return {};
}

Result<std::size_t> Engine::write(Cell* cell, std::span<const std::byte> data, uint64_t offset,
                                  bool append) {
    if (auto ok = relive(cell, "write"); !ok) return std::unexpected(ok.error());
    const CellState& current = cell->state;
    if (current.type != FileType::regular) return fail(EBADF, "write");
    const uint64_t at = append ? current.size : offset;
    if (auto ok = check_fits(at, data.size(), "write"); !ok) return std::unexpected(ok.error());
    if (data.empty()) return 0;
    CellState s = begin_edit(cell);
    const uint64_t before = s.allocated;
    ContentWriter w(s, reclaimer_, *arena_, writer_backing(s));
    if (auto ok = w.write(at, data); !ok) return std::unexpected(ok.error());
    bytes_used_.fetch_add(s.allocated - before, std::memory_order_relaxed);
    s.mtime = s.ctime = op_now();
    commit(cell, s);
    return data.size();
}

Result<void> Engine::truncate(Cell* cell, uint64_t size) {
    if (auto ok = relive(cell, "truncate"); !ok) return ok;
    const CellState& current = cell->state;
    auto st = setattr(Ref{cell->ino, cell, current.lower, current.type}, SetAttr::resize(size));
    if (!st) return std::unexpected(st.error());
    return {};
}

Result<void> Engine::allocate(Cell* cell, int mode, uint64_t offset, uint64_t length) {
    if (auto ok = relive(cell, "fallocate"); !ok) return ok;
    const CellState& current = cell->state;
    if (current.type == FileType::directory) return fail(EISDIR, "fallocate");
    if (current.type != FileType::regular) return fail(ENODEV, "fallocate");
    if (length == 0) return fail(EINVAL, "fallocate");
    constexpr int kKeep = FALLOC_FL_KEEP_SIZE;
    const bool punch = mode == (FALLOC_FL_PUNCH_HOLE | kKeep);
    const bool zero = (mode & ~kKeep) == FALLOC_FL_ZERO_RANGE;
    if (mode != 0 && mode != kKeep && !punch && !zero) return fail(EOPNOTSUPP, "fallocate");
    if (auto ok = check_fits(offset, length, "fallocate"); !ok) return ok;
    const bool grows = !(mode & kKeep) && offset + length > current.size;
    // Memory reserves nothing ahead: an allocation inside the file changes nothing.
    if (!punch && !zero && !grows) return {};
    CellState s = begin_edit(cell);
    const uint64_t before = s.allocated;
    ContentWriter w(s, reclaimer_, *arena_, writer_backing(s));
    if (punch || zero) {
        if (auto ok = w.punch(offset, length); !ok) return ok;
    }
    if (grows) {
        if (auto ok = w.resize(offset + length); !ok) return ok;
    }
    bytes_used_.fetch_add(s.allocated - before, std::memory_order_relaxed);  // (mod 2^64)
    s.mtime = s.ctime = op_now();
    commit(cell, s);
    return {};
}

Result<std::optional<uint64_t>> Engine::clone_range(Cell* from, uint64_t offset, Cell* to,
                                                    uint64_t to_offset, uint64_t length) {
    const CellState& source = from->state;
    const CellState& target = to->state;
    if (source.kind == CellKind::dead || target.kind != CellKind::live)
        return fail(ESTALE, "copy_file_range");
    if (source.type == FileType::directory || target.type == FileType::directory)
        return fail(EISDIR, "copy_file_range");
    if (source.type != FileType::regular || target.type != FileType::regular)
        return fail(EINVAL, "copy_file_range");
    // A stub is the lower's file, unchanged: its size is the lower's.
    const bool stub = source.kind == CellKind::stub;
    uint64_t size = source.size;
    if (stub) {
        auto st = lower(source.layer).getattr(source.lower);
        if (!st) return std::unexpected(st.error());
        size = st->size;
    }
    if (offset >= size) return std::optional<uint64_t>(0);
    length = std::min(length, size - offset);
    if (auto ok = check_fits(to_offset, length, "copy_file_range"); !ok)
        return std::unexpected(ok.error());
    if (length == 0 || from == to) return std::optional<uint64_t>();
    // A whole file into an empty one made here (cp): the copy takes the source's state, its
    // chunks shared and, for what the source still reads from the lower (a pack's file), the
    // same lower file as its backing, as a copy-up has.
    // The content is shared whole, as a snapshot shares it (its root referenced once more: the
    // first write to either file copies the path to the chunk it changes, and a chunk's
    // frontier already covers what both files show): O(1) whatever the size.
    if (offset == 0 && to_offset == 0 && length == size && target.size == 0 && !target.lower &&
        Content(target.data).empty()) {
        CellState s = begin_edit(to);
        const uint64_t before = s.allocated;
        if (!stub) {
            Content::retain(Content(source.data));
            s.data = source.data;
            s.allocated = source.allocated;
        }
        s.size = size;
        s.aux = stub ? size : source.aux;
        s.lower = s.aux > 0 ? source.lower : 0;
        s.layer = source.layer;
        bytes_used_.fetch_add(s.allocated - before, std::memory_order_relaxed);  // (mod 2^64)
        s.mtime = s.ctime = op_now();
        commit(to, s);
        return std::optional<uint64_t>(length);
    }
    if (stub) return std::optional<uint64_t>();
    // Shared chunks cover the same 64 KiB ranges in both files; a file still reading chunks
    // from the lower (a copy-up) has none of its own there to share.
    if (offset % kChunkSize != to_offset % kChunkSize || writer_backing(source) != nullptr ||
        writer_backing(target) != nullptr)
        return std::optional<uint64_t>();
    const uint64_t end = offset + length, to_end = to_offset + length;
    CellState s = begin_edit(to);
    const uint64_t before = s.allocated;
    const Content content(source.data);
    ContentWriter w(s, reclaimer_, *arena_, nullptr);
    if (to_end > s.size) {
        if (auto ok = w.resize(to_end); !ok) return std::unexpected(ok.error());
    }
    // Whole chunks are shared; so is a last partial one when it ends both the source and the
    // target (what lies past the end of a chunk is then invisible in both). The edges are
    // copied.
    auto copy = [&](uint64_t at, uint64_t n) -> Result<void> {
        std::vector<std::byte> bytes(n);
        auto got = content.read(source.size, at, bytes, nullptr, 0);
        if (!got) return std::unexpected(got.error());
        return w.write(to_offset + (at - offset), bytes);
    };
    const uint64_t first = (offset + kChunkSize - 1) / kChunkSize;
    uint64_t last = end / kChunkSize;  // chunks [first, last) lie wholly inside
    if (end == source.size && to_end >= s.size && end % kChunkSize != 0) ++last;
    if (first >= last) {
        if (auto ok = copy(offset, length); !ok) return std::unexpected(ok.error());
    } else {
        if (offset < first * kChunkSize) {
            if (auto ok = copy(offset, first * kChunkSize - offset); !ok)
                return std::unexpected(ok.error());
        }
        const uint64_t to_first = (to_offset + (first * kChunkSize - offset)) / kChunkSize;
        w.share(content, first, to_first, last - first);
        if (last * kChunkSize < end) {
            if (auto ok = copy(last * kChunkSize, end - last * kChunkSize); !ok)
                return std::unexpected(ok.error());
        }
    }
    bytes_used_.fetch_add(s.allocated - before, std::memory_order_relaxed);  // (mod 2^64)
    s.mtime = s.ctime = op_now();
    commit(to, s);
    return std::optional<uint64_t>(length);
}

}  // namespace packfs::mem
