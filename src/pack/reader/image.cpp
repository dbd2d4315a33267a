#include "pack/reader/image.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>

#include "core/io.hpp"

namespace packfs::pack {

namespace {

// --- the process-wide SIGBUS registry (see image.hpp) -------------------------------------

struct Slot {
    std::atomic<uintptr_t> begin{0};  // 0: no mapping registered here
    std::atomic<uintptr_t> end{0};
    std::atomic<std::atomic<uint64_t>*> damage{nullptr};
    std::atomic<bool> claimed{false};
};

Slot g_slots[kMaxMappings];
std::atomic<std::size_t> g_slots_used{0};  // high-water mark: the handler scans no further
std::atomic<int> g_in_handler{0};          // handlers running now (unregister waits for 0)
struct sigaction g_previous {};
uintptr_t g_page_size = 4096;
bool g_installed = false;
std::once_flag g_install_once;

// Maps a zero page over the faulting page when `addr` is inside a registered mapping.
bool absorb_fault(uintptr_t addr) noexcept {
    g_in_handler.fetch_add(1, std::memory_order_seq_cst);
    bool ours = false;
    const std::size_t used = g_slots_used.load(std::memory_order_seq_cst);
    for (std::size_t i = 0; i < used; ++i) {
        const uintptr_t begin = g_slots[i].begin.load(std::memory_order_seq_cst);
        if (begin == 0 || addr < begin || addr >= g_slots[i].end.load(std::memory_order_seq_cst))
            continue;
        const uintptr_t page = addr & ~(g_page_size - 1);
        // The raw system call: async-signal-safe, and not seen by sanitizer interceptors.
        const long r = syscall(SYS_mmap, page, g_page_size, PROT_READ,
                               MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (r != -1) {
            if (auto* damage = g_slots[i].damage.load(std::memory_order_seq_cst))
                damage->fetch_add(1, std::memory_order_acq_rel);
            ours = true;
        }
        break;
    }
    g_in_handler.fetch_sub(1, std::memory_order_seq_cst);
    return ours;
}

// Hands a fault that is not ours to whoever handled SIGBUS before PackFS.
void chain(int sig, siginfo_t* info, void* context) noexcept {
    const bool from_kernel = info != nullptr && info->si_code > 0;  // a fault, not kill(2)
    if (g_previous.sa_flags & SA_SIGINFO) {
        if (g_previous.sa_sigaction != nullptr &&
            reinterpret_cast<void*>(g_previous.sa_sigaction) != reinterpret_cast<void*>(SIG_IGN)) {
            g_previous.sa_sigaction(sig, info, context);
            return;
        }
    } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
        g_previous.sa_handler(sig);
        return;
    } else if (g_previous.sa_handler == SIG_IGN && !from_kernel) {
        return;  // an ignored signal someone sent: still ignored
    }
    // The default action: restore it and let the signal recur. A fault re-runs the faulting
    // instruction when the handler returns; a sent signal is raised again.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGBUS, &dfl, nullptr);
    if (!from_kernel) raise(SIGBUS);
}

void on_sigbus(int sig, siginfo_t* info, void* context) {
    const int saved_errno = errno;
    const bool ours = info != nullptr && absorb_fault(reinterpret_cast<uintptr_t>(info->si_addr));
    errno = saved_errno;
    if (!ours) chain(sig, info, context);
    errno = saved_errno;
}

bool install_handler() {
    std::call_once(g_install_once, [] {
        const long page = sysconf(_SC_PAGESIZE);
        if (page > 0) g_page_size = static_cast<uintptr_t>(page);
        struct sigaction action {};
        action.sa_sigaction = on_sigbus;
        action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
        sigemptyset(&action.sa_mask);
        // Read the previous action first, so the handler never runs before it is known.
        g_installed = sigaction(SIGBUS, nullptr, &g_previous) == 0 &&
                      sigaction(SIGBUS, &action, nullptr) == 0;
    });
    return g_installed;
}

int claim_slot() noexcept {
    for (std::size_t i = 0; i < kMaxMappings; ++i) {
        bool expected = false;
        if (g_slots[i].claimed.compare_exchange_strong(expected, true)) {
            std::size_t used = g_slots_used.load();
            while (used < i + 1 && !g_slots_used.compare_exchange_weak(used, i + 1)) {
            }
            return static_cast<int>(i);
        }
    }
    return -1;
}

void publish_slot(int slot, const std::byte* begin, std::size_t length,
                  std::atomic<uint64_t>* damage) noexcept {
    Slot& s = g_slots[slot];
    s.damage.store(damage, std::memory_order_seq_cst);
    s.end.store(reinterpret_cast<uintptr_t>(begin) + length, std::memory_order_seq_cst);
    s.begin.store(reinterpret_cast<uintptr_t>(begin), std::memory_order_seq_cst);
}

// After this returns no handler looks at the slot any more, so the range may be unmapped.
void release_slot(int slot) noexcept {
    Slot& s = g_slots[slot];
    s.begin.store(0, std::memory_order_seq_cst);
    while (g_in_handler.load(std::memory_order_seq_cst) != 0) sched_yield();
    s.end.store(0, std::memory_order_seq_cst);
    s.damage.store(nullptr, std::memory_order_seq_cst);
    s.claimed.store(false, std::memory_order_seq_cst);
}

}  // namespace

Result<std::unique_ptr<PackImage>> PackImage::open(std::string_view host_path) {
    const std::string path(host_path);
    std::unique_ptr<PackImage> image(new PackImage());  // private constructor
    image->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (image->fd_ < 0) return fail(errno, "open_pack", host_path);
    struct stat st {};
    if (::fstat(image->fd_, &st) != 0) return fail(errno, "open_pack", host_path);
    if (S_ISDIR(st.st_mode)) return fail(EISDIR, "open_pack", host_path);
    if (!S_ISREG(st.st_mode)) return fail(EINVAL, "open_pack", host_path);
    image->size_ = static_cast<uint64_t>(st.st_size);
    if (image->size_ < kHeaderSize) {
        return std::unexpected(Error::corrupt(
            "open_pack", host_path,
            Corruption{0, kHeaderSize, image->size_, "file size (shorter than a pack header)"}));
    }
    if (!image->read_at(0, image->header_)) return fail(EIO, "open_pack", host_path);
    return image;
}

Result<std::unique_ptr<PackImage>> PackImage::open(std::shared_ptr<ByteSource> source) {
    std::unique_ptr<PackImage> image(new PackImage());  // private constructor
    image->source_ = std::move(source);
    if (auto ok = image->source_->read(0, image->header_); !ok) return std::unexpected(ok.error());
    image->size_ = image->source_->size();
    return image;
}

PackImage::~PackImage() {
    if (slot_ >= 0) release_slot(slot_);
    if (map_ != nullptr) ::munmap(map_, map_length_);
    if (on_demand_ != nullptr) ::munmap(on_demand_, on_demand_length_);
    if (fd_ >= 0) ::close(fd_);
}

Result<void> PackImage::load(PackAccess access, uint64_t meta_offset, std::string_view host_path) {
    if (source_ && frames_on_demand_) {
        // Reserved, not committed: only the pages of frames fetched cost memory.
        Header h;
        std::memcpy(&h, header_, sizeof h);
        on_demand_length_ = size_ - meta_offset;
        void* at = ::mmap(nullptr, on_demand_length_, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (at == MAP_FAILED) return fail(errno, "open_pack", host_path);
        on_demand_ = static_cast<std::byte*>(at);
        const uint64_t tail = h.meta_frames_length;  // the index (after padding), sums, digests
        if (auto ok = source_->read(meta_offset + tail,
                                    std::span(on_demand_ + tail, size_ - meta_offset - tail));
            !ok)
            return std::unexpected(ok.error());
        meta_ = on_demand_;
        return {};
    }
    if (source_) {
        const uint64_t length = size_ - meta_offset;
        buffer_ = std::make_unique_for_overwrite<std::byte[]>(length);
        if (auto ok = source_->read(meta_offset, std::span(buffer_.get(), length)); !ok)
            return std::unexpected(ok.error());
        meta_ = buffer_.get();
        return {};
    }
    if (access == PackAccess::mmap && install_handler()) {
        slot_ = claim_slot();
        if (slot_ >= 0) {
            void* map = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_, 0);
            if (map != MAP_FAILED) {
                map_ = static_cast<std::byte*>(map);
                map_length_ = size_;
                const std::size_t registered = (size_ + g_page_size - 1) & ~(g_page_size - 1);
                publish_slot(slot_, map_, registered, &damage_);
                access_ = PackAccess::mmap;
                meta_ = map_ + meta_offset;
                // No madvise: WILLNEED on the metadata would read all of it on open (O(files)),
                // and the kernel's default readahead suits both lookups and sequential reads.
                return {};
            }
            release_slot(slot_);
            slot_ = -1;
        }
        // No slot, no handler or no mapping (a filesystem without mmap): read instead.
    }
    access_ = PackAccess::pread;
    const uint64_t length = size_ - meta_offset;
    buffer_ = std::make_unique_for_overwrite<std::byte[]>(length);
    if (!read_at(meta_offset, std::span(buffer_.get(), length)))
        return fail(EIO, "open_pack", host_path);
    meta_ = buffer_.get();
    return {};
}

Result<void> PackImage::read_at(uint64_t offset, std::span<std::byte> out,
                                uint64_t content_end) const {
    if (source_) return source_->read_data(offset, out, content_end);
    const auto n = io::pread_full(fd_, out, offset, "read");
    if (!n) return std::unexpected(n.error());
    if (*n != out.size()) return fail(EIO, "read");  // the file shrank under us
    return {};
}

}  // namespace packfs::pack
