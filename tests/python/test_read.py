# The read calls on a pack, a compressed pack and the host directory itself: each answers what
# the os module answers on the source tree.
import os
import pathlib
import stat

import pytest

import packfs


@pytest.fixture(params=["pack", "zstd", "directory"])
def tree(request, pack_path, zpack_path, tree_dir):
    source = {"pack": pack_path, "zstd": zpack_path, "directory": tree_dir[0]}[request.param]
    with packfs.open(source) as t:
        yield t


def test_version_and_kinds(pack_path, tree_dir):
    assert packfs.__version__.count(".") == 2
    with packfs.open(pack_path) as t:
        assert t.kind == "pack" and t.read_only and not t.closed
        assert "pack" in repr(t)
    with packfs.open(tree_dir[0]) as t:
        assert t.kind == "directory" and t.read_only
    assert packfs.mem().kind == "mem" and not packfs.mem().read_only


def test_stat_matches_os(tree, tree_dir):
    root = tree_dir[0]
    for path in ["/", "/hello.txt", "/a", "/a/b/c/deep.bin", "/big.bin", "/link", "/dirlink",
                 "/a/one.hard", "/empty"]:
        for follow in (True, False):
            mine = tree.stat(path, follow_symlinks=follow)
            host = os.stat(root + path, follow_symlinks=follow)
            assert isinstance(mine, os.stat_result)
            assert stat.S_IFMT(mine.st_mode) == stat.S_IFMT(host.st_mode), path
            assert stat.S_IMODE(mine.st_mode) == stat.S_IMODE(host.st_mode), path
            if not stat.S_ISDIR(host.st_mode):
                assert mine.st_size == host.st_size, path
            assert mine.st_mtime_ns == host.st_mtime_ns, path
            assert mine.st_mtime == pytest.approx(mine.st_mtime_ns / 1e9)
            assert mine[stat.ST_MODE] == mine.st_mode and mine.st_dev in (0, host.st_dev)
    assert stat.S_ISLNK(tree.lstat("/link").st_mode)
    assert stat.S_ISREG(tree.stat("/link").st_mode)
    assert tree.stat("/a/one").st_nlink == 2
    assert tree.stat("/a/one").st_ino == tree.stat("/a/one.hard").st_ino


def test_predicates(tree):
    assert tree.exists("/hello.txt") and tree.isfile("/hello.txt") and not tree.isdir("/hello.txt")
    assert tree.isdir("/a") and tree.isdir("/dirlink") and tree.islink("/dirlink")
    assert not tree.exists("/dangling") and tree.lexists("/dangling")
    assert not tree.exists("/nope") and not tree.isfile("/nope") and not tree.islink("/nope")


def test_listdir_and_readlink(tree, tree_dir):
    root = tree_dir[0]
    assert sorted(tree.listdir()) == sorted(os.listdir(root))
    assert sorted(tree.listdir("/a")) == sorted(os.listdir(root + "/a"))
    assert tree.listdir("/emptydir") == []
    assert tree.readlink("/link") == "hello.txt"
    assert tree.readlink("/dirlink") == "a/b"
    # bytes in, bytes out; os.PathLike accepted
    assert sorted(tree.listdir(b"/a")) == sorted(os.fsencode(n) for n in os.listdir(root + "/a"))
    assert tree.readlink(b"/link") == b"hello.txt"
    assert tree.readlink(pathlib.PurePosixPath("/link")) == "hello.txt"


def test_scandir(tree, tree_dir):
    root = tree_dir[0]
    host = {e.name: e for e in os.scandir(root)}
    with tree.scandir("/") as it:
        mine = {e.name: e for e in it}
    assert mine.keys() == host.keys()
    for name, e in mine.items():
        h = host[name]
        assert e.path == "/" + name and os.fspath(e) == e.path
        if name == "loop":  # os raises ELOOP from is_dir(); so does packfs
            for entry in (e, h):
                with pytest.raises(OSError) as info:
                    entry.is_dir()
                assert info.value.errno == 40
            continue
        assert e.is_dir() == h.is_dir() and e.is_file() == h.is_file(), name
        assert e.is_symlink() == h.is_symlink(), name
        assert e.is_dir(follow_symlinks=False) == h.is_dir(follow_symlinks=False), name
        assert e.inode() == e.stat(follow_symlinks=False).st_ino
        if name != "dangling" and name != "loop":
            assert stat.S_IFMT(e.stat().st_mode) == stat.S_IFMT(h.stat().st_mode)
        assert repr(e) == f"<DirEntry {name!r}>"
    sub = list(tree.scandir("/a/b"))
    assert [e.path for e in sub] == ["/a/b/c"]


def test_read_whole(tree, files):
    for path, data in files.items():
        assert tree.read(path) == data
    assert tree.read("/link") == files["/hello.txt"]


def test_read_many(tree, files):
    paths = sorted(files) + ["/link", "/empty"]
    views = tree.read_many(paths)
    assert [bytes(v) for v in views] == [tree.read(p) for p in paths]
    assert all(isinstance(v, memoryview) and v.readonly for v in views)
    with pytest.raises(TypeError):
        views[0][0:1] = b"x"
    tree.close()  # the views keep their one buffer alive, not the tree
    assert bytes(views[0]) == files[paths[0]] and bytes(views[-3]) == files["/hello.txt"]


def test_read_many_errors(tree, files):
    assert tree.read_many([]) == []
    with pytest.raises(FileNotFoundError) as e:
        tree.read_many(["/hello.txt", "/nope", "/a/one"])
    assert e.value.filename == "/nope"
    with pytest.raises(IsADirectoryError):
        tree.read_many(["/a"])
    with pytest.raises(TypeError):
        tree.read_many([1])
    assert [bytes(v) for v in tree.read_many((b"/a/one", pathlib.PurePosixPath("/a/two")))] == [
        files["/a/one"], files["/a/two"]]


def test_read_concat(tree, files):
    paths = sorted(files) + ["/link", "/empty"]
    data, offsets = tree.read_concat(paths)
    assert isinstance(data, memoryview) and data.readonly
    assert not data.obj.zero_copy  # a copy of the files, whatever the source
    assert offsets.format == "Q" and offsets.readonly and len(offsets) == len(paths) + 1
    assert offsets[0] == 0 and offsets[-1] == len(data)
    assert [bytes(data[offsets[i]:offsets[i + 1]]) for i in range(len(paths))] == [
        tree.read(p) for p in paths]
    assert list(offsets) == sorted(offsets)  # files end to end, in the order given
    with pytest.raises(TypeError):
        data[0:1] = b"x"
    tree.close()  # the views own their buffers, not the tree
    assert bytes(data[offsets[0]:offsets[1]]) == files[paths[0]]


def test_read_concat_errors(tree, files):
    data, offsets = tree.read_concat([])
    assert len(data) == 0 and list(offsets) == [0]
    with pytest.raises(FileNotFoundError) as e:
        tree.read_concat(["/hello.txt", "/nope"])
    assert e.value.filename == "/nope"
    with pytest.raises(IsADirectoryError):
        tree.read_concat(["/a"])
    with pytest.raises(TypeError):
        tree.read_concat([1])
    with pytest.raises(TypeError):
        tree.read_concat(7)  # not a sequence of paths
    data, offsets = tree.read_concat(p for p in (b"/a/one", pathlib.PurePosixPath("/a/two")))
    assert bytes(data) == files["/a/one"] + files["/a/two"]
    assert list(offsets) == [0, len(files["/a/one"]), len(data)]


def test_file_object(tree, files):
    data = files["/big.bin"]
    with tree.open("/big.bin") as f:
        assert f.readable() and f.seekable() and not f.writable()
        assert f.name == "/big.bin" and f.mode == "rb" and not hasattr(f, "fileno")
        assert f.read(10) == data[:10] and f.tell() == 10
        assert f.seek(-5, os.SEEK_END) == len(data) - 5
        assert f.read() == data[-5:] and f.read() == b""
        f.seek(1000)
        buf = bytearray(3000)
        assert f.readinto(buf) == 3000 and bytes(buf) == data[1000:4000]
        mv = memoryview(buf)[100:200]
        f.seek(7, os.SEEK_SET)
        assert f.readinto(mv) == 100 and bytes(buf[100:200]) == data[7:107]
        assert f.seek(10, os.SEEK_CUR) == 117
        assert f.stat().st_size == len(data)
        with pytest.raises(OSError) as e:
            f.seek(-1)
        assert e.value.errno == 22
        with pytest.raises(ValueError):
            f.seek(0, 7)
        import io
        with pytest.raises(io.UnsupportedOperation):
            f.write(b"x")
    assert f.closed
    with pytest.raises(ValueError):
        f.read()
    with tree.open("/empty") as f:
        assert f.read() == b"" and f.readall() == b""
    with tree.open("/a/two") as f:  # a huge request is sized to the file, not allocated
        f.seek(4000)
        assert f.read(1 << 40) == files["/a/two"][4000:] and f.read(1 << 40) == b""
    for bad in ["r", "rt", "rbb", "rw", "z", "wb+b"]:
        with pytest.raises(ValueError):
            tree.open("/hello.txt", bad)


def test_snapshot_of_pack_is_the_pack(pack):
    snap = pack.snapshot()
    assert snap.kind == "pack" and snap.read("/hello.txt") == b"hello, world\n"


def test_closed_tree(pack_path):
    t = packfs.open(pack_path)
    t.close()
    t.close()
    assert t.closed
    with pytest.raises(ValueError):
        t.stat("/")
    with pytest.raises(ValueError):
        t.read("/hello.txt")


def test_build_stats(tree_dir, tmp_path):
    stats = packfs.build(tree_dir[0], str(tmp_path / "p.pack"), compression="lz4")
    assert stats["files"] >= 8 and len(stats["digest"]) == 64
    with pytest.raises(ValueError):
        packfs.build(tree_dir[0], str(tmp_path / "q.pack"), compression="gzip")
    with packfs.open(str(tmp_path / "p.pack")) as t:
        assert t.read("/a/two") == b"2" * 5000


def test_build_exclude(tree_dir, tmp_path):
    out = str(tmp_path / "x.pack")
    stats = packfs.build(tree_dir[0], out, exclude=["/a", "*.txt"])
    with packfs.open(out) as t:
        names = [os.path.join(d, n) for d, dirs, files in t.walk("/") for n in dirs + files]
    assert names and not any(n.startswith("/a/") or n == "/a" or n.endswith(".txt") for n in names)
    assert stats["excluded"] == 2  # /a (what is under it is not read) and /hello.txt
    assert "/data/x.dat" in names
    with pytest.raises(ValueError, match="a/../b"):
        packfs.build(tree_dir[0], str(tmp_path / "y.pack"), exclude=["a/../b"])
    with pytest.raises(TypeError):
        packfs.build(tree_dir[0], str(tmp_path / "z.pack"), exclude="*.txt")


def test_wrong_argument_types(pack):
    with pytest.raises(TypeError):
        pack.stat(42)
    with pytest.raises(ValueError):
        pack.stat("/a\0b")


def test_xattrs_and_properties(pack, tree_dir, pack_path):
    host = os.path.join(tree_dir[0], "hello.txt")
    names = os.listxattr(host)
    assert pack.listxattr("/hello.txt") == names
    for name in names:
        assert pack.getxattr("/hello.txt", name) == os.getxattr(host, name)
    assert pack.source == pack_path
    with pack.open("/hello.txt") as f:
        f.flush()
        f.sync()
        assert not f.isatty() and "hello.txt" in repr(f)


def test_scandir_bytes(pack):
    entries = sorted(pack.scandir(b"/a"), key=lambda e: e.name)
    assert [e.name for e in entries] == [b"b", b"one", b"one.hard", b"two"]
    assert entries[1].path == b"/a/one" and entries[1].is_file()
