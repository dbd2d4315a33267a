// HandlePool: a block released is the next one handed out on that thread (outside ASan, where
// the pool is off), blocks move between threads safely, and pooled pack handles opened on one
// thread and closed on another read correctly (label tsan).
#include "core/handle_pool.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <set>
#include <thread>
#include <vector>

#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "support/files.hpp"

namespace packfs {
namespace {

struct Pooled {
    PACKFS_POOLED(Pooled)
    char bytes[72];
};

TEST(HandlePool, AReleasedBlockIsReusedOnTheSameThread) {
    auto* a = new Pooled;
    [[maybe_unused]] void* where = a;  // compared only where the pool is on
    delete a;
    auto* b = new Pooled;
#ifndef __SANITIZE_ADDRESS__
    EXPECT_EQ(static_cast<void*>(b), where) << "the freed block came back";
#endif
    delete b;
    // More live at once than the pool keeps: all distinct, all given back.
    std::vector<Pooled*> many;
    std::set<void*> seen;
    for (int i = 0; i < 200; ++i) {
        many.push_back(new Pooled);
        EXPECT_TRUE(seen.insert(many.back()).second);
    }
    for (Pooled* p : many) delete p;
}

TEST(HandlePool, BlocksFreedOnAnotherThreadAreSafe) {
    std::vector<Pooled*> made;
    for (int i = 0; i < 500; ++i) {
        made.push_back(new Pooled);
        made.back()->bytes[0] = static_cast<char>(i);
    }
    int intact = 0;
    std::jthread other([&] {
        for (int i = 0; i < 500; ++i) {
            // What the making thread wrote is there, then the block goes into this thread's
            // list, or the heap.
            intact += made[i]->bytes[0] == static_cast<char>(i) ? 1 : 0;
            delete made[i];
        }
        for (int i = 0; i < 100; ++i) delete new Pooled;
    });
    other.join();
    EXPECT_EQ(intact, 500);
    // The making thread can go on making and freeing after another thread freed its blocks.
    for (int i = 0; i < 100; ++i) {
        auto* p = new Pooled;
        p->bytes[0] = 'x';
        EXPECT_EQ(p->bytes[0], 'x');
        delete p;
    }
}

TEST(HandlePool, PackHandlesOpenedOnOneThreadAndClosedOnAnotherReadRight) {
    test_support::TempDir dir;
    auto mem = make_mem_backend();
    ASSERT_TRUE(mem->mkdir("/d"));
    for (int i = 0; i < 100; ++i)
        ASSERT_TRUE(
            write_file(*mem, "/d/f" + std::to_string(i), std::string(100 + i, 'a' + i % 26)));
    const std::string path = (dir.path / "p.pack").string();
    ASSERT_TRUE(write_pack(*mem, path, {}));
    auto pack = open_pack(path);
    ASSERT_TRUE(pack);
    std::vector<FileHandle> handles(100);
    for (int i = 0; i < 100; ++i) {
        auto h = (*pack)->open("/d/f" + std::to_string(i), O_RDONLY);
        ASSERT_TRUE(h);
        handles[i] = std::move(*h);
    }
    std::jthread reader([&] {
        for (int round = 0; round < 3; ++round) {
            for (int i = 0; i < 100; ++i) {
                std::string buf(300, '\0');
                auto n = handles[i]->pread(std::as_writable_bytes(std::span(buf)), 0);
                ASSERT_TRUE(n);
                EXPECT_EQ(buf.substr(0, *n), std::string(100 + i, 'a' + i % 26));
            }
        }
        handles.clear();                 // closed here, opened on the main thread
        for (int i = 0; i < 100; ++i) {  // and reopened from this thread's pool
            auto h = (*pack)->open("/d/f" + std::to_string(i), O_RDONLY);
            ASSERT_TRUE(h);
            auto st = (*h)->fstat();
            ASSERT_TRUE(st);
            EXPECT_EQ(st->size, 100u + i);
        }
    });
}

}  // namespace
}  // namespace packfs
