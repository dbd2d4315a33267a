// The volume's operation records (src/volume/records.hpp): every node type encodes and decodes
// back to itself, field for field; a payload that ends early, carries trailing bytes or holds a
// value no encoder writes is EUCLEAN naming the record type and what was wrong.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "volume/records.hpp"

namespace packfs::volume {
namespace {

OpRecord sample(RecordType type) {
    OpRecord r;
    r.type = type;
    r.time = Time{1'700'000'000, 123};
    r.next_ino = 42;
    r.ino = 7;
    r.ino2 = 9;
    r.name = "name";
    r.name2 = "other";
    r.value = std::string("v\0w", 3);
    r.mode = 0640;
    r.uid = 1000;
    r.gid = 100;
    r.has_owner = true;
    r.flags = 1;
    r.offset = 4096;
    r.atime = TimeUpdate::now();
    r.mtime = TimeUpdate::at(Time{5, 6});
    return r;
}

const RecordType kNodeTypes[] = {
    RecordType::create_at,   RecordType::mkdir_at,       RecordType::mknod_at,
    RecordType::symlink_at,  RecordType::link_at,        RecordType::unlink_at,
    RecordType::rmdir_at,    RecordType::rename_at,      RecordType::setattr,
    RecordType::setxattr_at, RecordType::removexattr_at, RecordType::fallocate,
    RecordType::clone_range,
};

TEST(Records, EveryNodeTypeDecodesToWhatWasEncoded) {
    for (RecordType type : kNodeTypes) {
        SCOPED_TRACE(record_type_name(type));
        const OpRecord r = sample(type);
        const std::vector<std::byte> payload = encode_record(r);
        auto back = decode_record(static_cast<uint16_t>(type), payload);
        ASSERT_TRUE(back.has_value()) << back.error().message();
        EXPECT_EQ(encode_record(*back), payload);
        EXPECT_EQ(back->time.sec, r.time.sec);
        EXPECT_EQ(back->next_ino, r.next_ino);
        EXPECT_EQ(back->ino, r.ino);
        EXPECT_EQ(describe_record(*back), describe_record(r));
    }
}

TEST(Records, BadPayloadsNameWhatWasWrong) {
    const OpRecord r = sample(RecordType::mkdir_at);
    std::vector<std::byte> payload = encode_record(r);
    const uint16_t type = static_cast<uint16_t>(RecordType::mkdir_at);
    auto message_of = [&](const std::vector<std::byte>& bytes) {
        auto d = decode_record(type, bytes);
        EXPECT_FALSE(d.has_value());
        if (d) return std::string("<decoded>");
        EXPECT_EQ(d.error().code(), kErrCorrupt);
        return d.error().message();
    };
    std::vector<std::byte> cut(payload.begin(), payload.end() - 1);
    EXPECT_NE(message_of(cut).find("runs past the end"), std::string::npos) << message_of(cut);
    std::vector<std::byte> longer = payload;
    longer.push_back(std::byte{0});
    EXPECT_NE(message_of(longer).find("bytes after the last field"), std::string::npos);
    // time (8 + 4), next_ino (8): the nanoseconds are bytes 8..11.
    std::vector<std::byte> nsec = payload;
    nsec[8] = nsec[9] = nsec[10] = nsec[11] = std::byte{0xff};
    EXPECT_NE(message_of(nsec).find("nanoseconds"), std::string::npos) << message_of(nsec);
    // mkdir_at: time, next_ino, ino, name, mode, then the owner flag.
    const std::size_t owner_at = 12 + 8 + 8 + 4 + r.name.size() + 4;
    std::vector<std::byte> flag = payload;
    ASSERT_EQ(flag[owner_at], std::byte{1});
    flag[owner_at] = std::byte{2};
    EXPECT_NE(message_of(flag).find("owner flag"), std::string::npos) << message_of(flag);
    EXPECT_NE(message_of(flag).find("mkdir record"), std::string::npos) << message_of(flag);
    auto unknown = decode_record(999, payload);
    ASSERT_FALSE(unknown.has_value());
    EXPECT_EQ(unknown.error().code(), kErrCorrupt);
}

}  // namespace
}  // namespace packfs::volume
