// libFuzzer target: the volume's operation records (src/volume/records.hpp) on arbitrary
// bytes: the payload parser a journal with valid checksums but hostile contents reaches.
//
// Input: two bytes of record type (little-endian), then the payload. Invariants:
// - decode_record either fails with EUCLEAN or returns a record;
// - a decoded record encodes back to exactly the payload it came from (the encoder and the
//   decoder share one field list, so they cannot drift apart);
// - applying it to a small mem tree either succeeds or fails with an error value: never a
//   crash, a hang or a sanitizer report, whatever the paths, modes, flags, sizes or inode
//   numbers say (writes are capped below so one input cannot ask for gigabytes).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>

#include "packfs/mem.hpp"
#include "volume/records.hpp"

namespace {

[[noreturn]] void die(const char* what) {
    std::fprintf(stderr, "fuzz_journal_records: invariant broken: %s\n", what);
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    using namespace packfs;
    if (size < 2) return 0;
    uint16_t type = 0;
    std::memcpy(&type, data, 2);
    const auto payload = std::as_bytes(std::span(data + 2, size - 2));
    auto record = volume::decode_record(type, payload);
    if (!record) {
        if (record.error().code() != kErrCorrupt) die("a decode error that is not EUCLEAN");
        return 0;
    }
    const std::vector<std::byte> again = volume::encode_record(*record);
    if (again.size() != payload.size() || std::memcmp(again.data(), payload.data(), again.size()) != 0)
        die("a decoded record does not encode back to its payload");
    // Sizes and offsets a replay would act on, kept small enough for a fuzzer's memory.
    if (record->offset > (1u << 20) || record->data.size() > (1u << 20)) return 0;
    auto fs = make_mem_backend();
    (void)fs->mkdir("/d");
    (void)write_file(*fs, "/d/f", "content");
    (void)fs->symlink("d/f", "/link");
    record->next_ino = fs->inode_numbering().limit;  // past the check, into the call
    (void)volume::apply_record(*fs, *record);
    return 0;
}
