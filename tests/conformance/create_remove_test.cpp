// Creating and removing entries (DESIGN §4): mkdir, rmdir, unlink, mknod, and an unlinked
// file that lives on through its open handles.
#include <sys/sysmacros.h>

#include "conformance/conformance_suite.hpp"

namespace packfs::conformance {

TEST_P(CreateRemove, RmdirOfNonEmptyDirFails) {
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_ASSERT_OK(write_file(fs(), "/d/f", ""));
    PACKFS_EXPECT_ERRNO(fs().rmdir("/d"), ENOTEMPTY);
    PACKFS_ASSERT_OK(fs().mkdir("/e"));
    PACKFS_ASSERT_OK(fs().mkdir("/e/sub"));
    PACKFS_EXPECT_ERRNO(fs().rmdir("/e"), ENOTEMPTY);
    PACKFS_EXPECT_OK(fs().stat("/d/f"));
    PACKFS_EXPECT_OK(fs().stat("/e/sub"));
}

TEST_P(CreateRemove, RmdirOfEmptyDirRemovesIt) {
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_ASSERT_OK(write_file(fs(), "/d/f", ""));
    PACKFS_ASSERT_OK(fs().unlink("/d/f"));
    PACKFS_EXPECT_OK(fs().rmdir("/d"));
    PACKFS_EXPECT_ERRNO(fs().stat("/d"), ENOENT);
    PACKFS_EXPECT_OK(fs().mkdir("/d")) << "the name can be used again";
}

TEST_P(CreateRemove, RmdirOfFileIsNotDir) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", ""));
    PACKFS_EXPECT_ERRNO(fs().rmdir("/f"), ENOTDIR);
    PACKFS_EXPECT_OK(fs().stat("/f"));
}

TEST_P(CreateRemove, RmdirOfSymlinkToDirIsNotDir) {
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_ASSERT_OK(fs().symlink("/d", "/l"));
    PACKFS_EXPECT_ERRNO(fs().rmdir("/l"), ENOTDIR);
    PACKFS_EXPECT_OK(fs().stat("/d"));
}

TEST_P(CreateRemove, UnlinkOfDirIsIsDir) {
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_EXPECT_ERRNO(fs().unlink("/d"), EISDIR);
    PACKFS_EXPECT_OK(fs().stat("/d"));
}

TEST_P(CreateRemove, MkdirOfExistingNameFails) {
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_ASSERT_OK(write_file(fs(), "/f", ""));
    PACKFS_ASSERT_OK(fs().symlink("/nowhere", "/dangling"));
    PACKFS_EXPECT_ERRNO(fs().mkdir("/d"), EEXIST);
    PACKFS_EXPECT_ERRNO(fs().mkdir("/f"), EEXIST);
    PACKFS_EXPECT_ERRNO(fs().mkdir("/dangling"), EEXIST);
    PACKFS_EXPECT_ERRNO(fs().mkdir("/"), EEXIST);
}

TEST_P(CreateRemove, MkdirWithMissingParentIsNotFound) {
    PACKFS_EXPECT_ERRNO(fs().mkdir("/a/b"), ENOENT);
    PACKFS_EXPECT_ERRNO(fs().stat("/a"), ENOENT);
}

TEST_P(CreateRemove, RmdirOfRootIsBusy) {
    PACKFS_EXPECT_ERRNO(fs().rmdir("/"), EBUSY);
    PACKFS_EXPECT_ERRNO(fs().unlink("/"), EISDIR);
    auto st = fs().stat("/");
    PACKFS_EXPECT_OK(st);
}

TEST_P(CreateRemove, RemovingMissingEntryIsNotFound) {
    PACKFS_EXPECT_ERRNO(fs().unlink("/missing"), ENOENT);
    PACKFS_EXPECT_ERRNO(fs().rmdir("/missing"), ENOENT);
    PACKFS_EXPECT_ERRNO(fs().unlink("/missing/x"), ENOENT);
}

TEST_P(CreateRemove, UnlinkRemovesOnlyTheName) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_ASSERT_OK(write_file(fs(), "/g", "y"));
    PACKFS_ASSERT_OK(fs().unlink("/f"));
    PACKFS_EXPECT_ERRNO(fs().stat("/f"), ENOENT);
    PACKFS_EXPECT_ERRNO(fs().open("/f", O_RDONLY), ENOENT);
    auto g = read_file(fs(), "/g");
    PACKFS_ASSERT_OK(g);
    EXPECT_EQ(*g, "y");
}

TEST_P(CreateRemove, UnlinkedOpenFileStaysReadableAndWritable) {
    std::string data = pattern_bytes(70000, 3);
    PACKFS_ASSERT_OK(write_file(fs(), "/f", data));
    auto f = fs().open("/f", O_RDWR);
    PACKFS_ASSERT_OK(f);
    PACKFS_ASSERT_OK(fs().unlink("/f"));
    PACKFS_EXPECT_ERRNO(fs().stat("/f"), ENOENT);

    auto back = read_all(**f);
    PACKFS_EXPECT_OK(back);
    if (back) {
        PACKFS_EXPECT_BYTES_EQ(*back, data);
    }
    PACKFS_EXPECT_OK(pwrite_string(**f, "after unlink", 70000));
    auto tail = pread_string(**f, 70000, 100);
    PACKFS_EXPECT_OK(tail);
    if (tail) {
        EXPECT_EQ(*tail, "after unlink");
    }
    PACKFS_EXPECT_OK((*f)->truncate(5));
    auto st = (*f)->fstat();
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->nlink, 0u);
    EXPECT_EQ(st->size, 5u);

    // A new file under the same name is a different file.
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "new"));
    auto fresh = read_file(fs(), "/f");
    PACKFS_ASSERT_OK(fresh);
    EXPECT_EQ(*fresh, "new");
    auto old = read_all(**f);
    PACKFS_ASSERT_OK(old);
    EXPECT_EQ(*old, data.substr(0, 5));
}

TEST_P(CreateRemove, FileReplacedByRenameStaysReadableThroughHandle) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "old"));
    PACKFS_ASSERT_OK(write_file(fs(), "/g", "new"));
    auto f = fs().open("/f", O_RDONLY);
    PACKFS_ASSERT_OK(f);
    PACKFS_ASSERT_OK(fs().rename("/g", "/f"));
    auto back = read_all(**f);
    PACKFS_ASSERT_OK(back);
    EXPECT_EQ(*back, "old");
    auto st = (*f)->fstat();
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->nlink, 0u);
}

TEST_P(CreateRemove, MknodCreatesSpecialFilesListedWithTheirTypes) {
    if (!caps().special_files) GTEST_SKIP() << "backend has no special files";
    PACKFS_ASSERT_OK(fs().mknod("/fifo", FileType::fifo, 0640));
    PACKFS_ASSERT_OK(fs().mknod("/sock", FileType::socket, 0755));
    PACKFS_ASSERT_OK(fs().mknod("/reg", FileType::regular, 0600));
    struct Want {
        const char* name;
        FileType type;
        uint32_t mode;
    };
    for (const Want& w : {Want{"fifo", FileType::fifo, 0640}, Want{"sock", FileType::socket, 0755},
                          Want{"reg", FileType::regular, 0600}}) {
        auto st = fs().lstat(std::string("/") + w.name);
        PACKFS_EXPECT_OK(st) << w.name;
        if (!st) continue;
        EXPECT_EQ(st->type, w.type) << w.name;
        EXPECT_EQ(st->mode, w.mode) << w.name;
        EXPECT_EQ(st->size, 0u) << w.name;
        EXPECT_EQ(st->nlink, 1u) << w.name;
    }
    auto entries = fs().readdir("/");
    PACKFS_ASSERT_OK(entries);
    for (const auto& e : *entries) {
        if (e.name == "fifo") {
            EXPECT_EQ(e.type, FileType::fifo);
        }
        if (e.name == "sock") {
            EXPECT_EQ(e.type, FileType::socket);
        }
        if (e.name == "reg") {
            EXPECT_EQ(e.type, FileType::regular);
        }
    }
    EXPECT_EQ(entries->size(), 3u);
    PACKFS_EXPECT_OK(fs().unlink("/fifo"));
    PACKFS_EXPECT_OK(fs().unlink("/sock"));
}

TEST_P(CreateRemove, MknodCreatesDevicesWithTheirNumbers) {
    if (!caps().device_nodes) GTEST_SKIP() << "backend cannot create device nodes";
    struct Want {
        const char* path;
        FileType type;
        uint64_t rdev;
    };
    // 0:0 is an ordinary device to PackFS, never a whiteout (DESIGN §9).
    const Want wants[] = {{"/zero", FileType::char_device, makedev(0, 0)},
                          {"/null", FileType::char_device, makedev(1, 3)},
                          {"/big", FileType::char_device, makedev(4095, 1048575)},
                          {"/loop", FileType::block_device, makedev(7, 0)}};
    for (const Want& w : wants) {
        PACKFS_ASSERT_OK(fs().mknod(w.path, w.type, 0660, w.rdev));
    }
    for (const Want& w : wants) {
        auto st = fs().lstat(w.path);
        PACKFS_EXPECT_OK(st) << w.path;
        if (!st) continue;
        EXPECT_EQ(st->type, w.type) << w.path;
        EXPECT_EQ(st->rdev, w.rdev) << w.path;
        EXPECT_EQ(st->mode, 0660u) << w.path;
    }
    auto entries = fs().readdir("/");
    PACKFS_ASSERT_OK(entries);
    EXPECT_EQ(entries->size(), 4u);
    for (const auto& e : *entries) {
        EXPECT_EQ(e.type, e.name == "loop" ? FileType::block_device : FileType::char_device)
            << e.name;
    }
    // A directory holding a 0:0 device lists and empties like any other.
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_ASSERT_OK(fs().mknod("/d/zero", FileType::char_device, 0600, makedev(0, 0)));
    PACKFS_EXPECT_ERRNO(fs().rmdir("/d"), ENOTEMPTY);
    PACKFS_EXPECT_OK(fs().unlink("/d/zero"));
    PACKFS_EXPECT_OK(fs().rmdir("/d"));
}

TEST_P(CreateRemove, OpenOfSpecialFileIsNotSupported) {
    if (!caps().special_open_enotsup)
        GTEST_SKIP() << "backend opens special files (kernel semantics)";
    if (caps().special_files) {
        PACKFS_ASSERT_OK(fs().mknod("/fifo", FileType::fifo, 0644));
        PACKFS_ASSERT_OK(fs().mknod("/sock", FileType::socket, 0644));
        PACKFS_EXPECT_ERRNO(fs().open("/fifo", O_RDONLY), ENOTSUP);
        PACKFS_EXPECT_ERRNO(fs().open("/fifo", O_WRONLY), ENOTSUP);
        PACKFS_EXPECT_ERRNO(fs().open("/sock", O_RDWR), ENOTSUP);
    }
    if (caps().device_nodes) {
        PACKFS_ASSERT_OK(fs().mknod("/null", FileType::char_device, 0666, makedev(1, 3)));
        PACKFS_EXPECT_ERRNO(fs().open("/null", O_RDWR), ENOTSUP);
    }
}

TEST_P(CreateRemove, MknodOfDirectoryOrSymlinkTypeIsInvalid) {
    PACKFS_EXPECT_ERRNO(fs().mknod("/d", FileType::directory, 0755), EINVAL);
    PACKFS_EXPECT_ERRNO(fs().mknod("/l", FileType::symlink, 0777), EINVAL);
    PACKFS_EXPECT_ERRNO(fs().stat("/d"), ENOENT);
    PACKFS_EXPECT_ERRNO(fs().lstat("/l"), ENOENT);
}

TEST_P(CreateRemove, MknodOverExistingNameFails) {
    if (!caps().special_files) GTEST_SKIP() << "backend has no special files";
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_EXPECT_ERRNO(fs().mknod("/f", FileType::fifo, 0644), EEXIST);
    auto st = fs().lstat("/f");
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->type, FileType::regular);
}

}  // namespace packfs::conformance
