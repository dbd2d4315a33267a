# The writable trees: a mem tree, a volume and a host directory opened writable, each through
# every mutation, and snapshots frozen while the live tree changes.
import errno
import os
import stat
import subprocess

import pytest

import packfs


def exercise(t):
    assert not t.read_only
    t.mkdir("/d")
    t.makedirs("/d/e/f/g")
    t.makedirs("/d/e/f/g", exist_ok=True)
    with pytest.raises(FileExistsError):
        t.makedirs("/d/e")
    assert t.write("/d/file", b"hello") == 5
    assert t.read("/d/file") == b"hello"
    t.write("/d/file", bytearray(b"bye"))  # replaces
    assert t.read("/d/file") == b"bye"
    with t.open("/d/new", "wb") as f:
        assert f.writable() and not f.readable()
        assert f.write(b"abc") == 3 and f.write(memoryview(b"defgh")[1:3]) == 2
        assert f.tell() == 5
    assert t.read("/d/new") == b"abcef"
    with t.open("/d/new", "ab") as f:
        assert f.tell() == 5
        f.write(b"++")
    assert t.read("/d/new") == b"abcef++"
    with t.open("/d/new", "r+b") as f:
        f.seek(1)
        f.write(b"X")
        f.seek(0)
        assert f.read() == b"aXcef++"
        f.truncate(3)
    assert t.read("/d/new") == b"aXc"
    with pytest.raises(FileExistsError):
        t.open("/d/new", "xb")
    with t.open("/d/x", "x+b") as f:
        f.write(b"123456")
        f.seek(2)
        assert f.read(2) == b"34"
    t.truncate("/d/x", 2)
    assert t.read("/d/x") == b"12"
    t.chmod("/d/x", 0o600)
    assert stat.S_IMODE(t.stat("/d/x").st_mode) == 0o600
    t.symlink("x", "/d/lx")
    assert t.readlink("/d/lx") == "x" and t.read("/d/lx") == b"12"
    t.link("/d/x", "/d/x2")
    assert t.stat("/d/x2").st_nlink == 2
    t.rename("/d/x2", "/d/x3")
    assert not t.exists("/d/x2") and t.read("/d/x3") == b"12"
    t.replace("/d/file", "/d/x3")
    assert t.read("/d/x3") == b"bye"
    t.remove("/d/x3")
    t.unlink("/d/lx")
    t.rmdir("/d/e/f/g")
    assert sorted(t.listdir("/d")) == ["e", "new", "x"]
    t.sync()


def test_mem_round_trip():
    t = packfs.mem()
    exercise(t)
    t.setxattr("/d/x", "user.k", b"v")
    assert t.getxattr("/d/x", "user.k") == b"v" and t.listxattr("/d/x") == ["user.k"]
    with pytest.raises(FileExistsError):
        t.setxattr("/d/x", "user.k", b"w", 1)  # XATTR_CREATE
    t.removexattr("/d/x", "user.k")
    assert t.listxattr("/d/x") == []


def test_mem_snapshot_frozen():
    t = packfs.mem()
    t.write("/f", b"one")
    t.mkdir("/d")
    snap = t.snapshot()
    assert snap.kind == "snapshot" and snap.read_only
    t.write("/f", b"two")
    t.write("/d/new", b"n")
    t.rmdir("/nonexistent") if False else None
    assert snap.read("/f") == b"one" and t.read("/f") == b"two"
    assert snap.listdir("/d") == [] and t.listdir("/d") == ["new"]
    with pytest.raises(OSError) as e:
        snap.write("/g", b"x")
    assert e.value.errno == errno.EROFS


def test_volume_round_trip(tmp_path, cli, tree_dir):
    vol = str(tmp_path / "vol")
    subprocess.run([cli, "volume", "init", vol, "--from", tree_dir[0]], check=True,
                   stdout=subprocess.DEVNULL)
    with packfs.open(vol) as ro:
        assert ro.kind == "volume" and ro.read_only
    with packfs.open(vol, writable=True) as t:
        assert t.kind == "volume"
        assert t.read("/hello.txt") == b"hello, world\n"
        exercise(t)
        snap = t.snapshot()
        t.write("/hello.txt", b"changed")
        assert snap.read("/hello.txt") == b"hello, world\n"
        t.sync()
    # the changes are durable: a new open replays them
    with packfs.open(vol) as t:
        assert t.read("/hello.txt") == b"changed" and t.read("/d/x") == b"12"


def test_directory_writable(tmp_path):
    root = tmp_path / "host"
    root.mkdir()
    with packfs.open(str(root)) as ro:
        with pytest.raises(OSError) as e:
            ro.mkdir("/x")
        assert e.value.errno == errno.EROFS and e.value.filename == "/x"
    with packfs.open(str(root), writable=True) as t:
        exercise(t)
        with pytest.raises(OSError) as e:
            t.snapshot()
        assert e.value.errno in (errno.ENOTSUP, errno.EOPNOTSUPP)
    assert (root / "d" / "x").read_bytes() == b"12"


def test_volume_lock_released_when_tree_goes(tmp_path, cli):
    import gc
    vol = str(tmp_path / "vol")
    subprocess.run([cli, "volume", "init", vol], check=True, stdout=subprocess.DEVNULL)
    t = packfs.open(vol, writable=True)
    t.write("/f", b"kept")
    with pytest.raises(OSError):  # one writer at a time: the volume's lock
        packfs.open(vol, writable=True)
    del t  # no close(): dropping the last reference closes the volume
    gc.collect()
    with packfs.open(vol, writable=True) as again:
        assert again.read("/f") == b"kept"
    assert repr(again).startswith("<packfs.Tree closed")


def test_chown_and_times():
    t = packfs.mem()
    t.write("/f", b"x")
    t.symlink("f", "/l")
    t.chown("/f", 1234, 5678)
    st = t.stat("/f")
    assert (st.st_uid, st.st_gid) == (1234, 5678)
    t.chown("/l", 42, 43, follow_symlinks=False)
    assert t.lstat("/l").st_uid == 42 and t.stat("/l").st_uid == 1234
    assert t.stat("/f").st_mtime_ns > 0 and t.stat("/f").st_ctime == pytest.approx(
        t.stat("/f").st_ctime_ns / 1e9)
