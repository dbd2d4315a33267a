# Every packfs error is the OSError os would raise: the subclass chosen by errno, with errno,
# strerror and filename (and filename2 for two-path calls) set to what the caller passed.
import errno
import os
import pathlib

import pytest

import packfs


def raises(exc_type, code, call, *args, filename=None, filename2=None):
    with pytest.raises(exc_type) as info:
        call(*args)
    e = info.value
    assert type(e) is exc_type, f"{type(e).__name__} for {code}"
    assert e.errno == code, errno.errorcode.get(e.errno)
    assert e.strerror == os.strerror(code) or e.strerror.startswith(os.strerror(code))
    assert e.filename == (args[0] if filename is None else filename)
    assert e.filename2 == filename2
    return e


def test_read_errors_on_pack(pack):
    raises(FileNotFoundError, errno.ENOENT, pack.stat, "/nope")
    raises(FileNotFoundError, errno.ENOENT, pack.read, "/a/nope")
    raises(FileNotFoundError, errno.ENOENT, pack.open, "/nope")
    raises(FileNotFoundError, errno.ENOENT, pack.listdir, "/nope")
    raises(FileNotFoundError, errno.ENOENT, pack.stat, "/dangling")
    raises(NotADirectoryError, errno.ENOTDIR, pack.listdir, "/hello.txt")
    raises(NotADirectoryError, errno.ENOTDIR, pack.stat, "/hello.txt/x")
    raises(IsADirectoryError, errno.EISDIR, pack.read, "/a")
    raises(OSError, errno.ELOOP, pack.stat, "/loop")
    raises(OSError, errno.EINVAL, pack.readlink, "/hello.txt")
    raises(OSError, errno.ENODATA, pack.getxattr, "/hello.txt", "user.nope")
    # the filename is the object passed, as os keeps it
    p = pathlib.PurePosixPath("/nope")
    raises(FileNotFoundError, errno.ENOENT, pack.stat, p)
    raises(FileNotFoundError, errno.ENOENT, pack.stat, b"/nope")


def test_erofs_on_pack(pack):
    for call, args in [(pack.mkdir, ("/new",)), (pack.unlink, ("/hello.txt",)),
                       (pack.rmdir, ("/emptydir",)), (pack.chmod, ("/hello.txt", 0o600)),
                       (pack.truncate, ("/hello.txt", 0)), (pack.write, ("/w", b"x")),
                       (pack.open, ("/hello.txt", "r+b")), (pack.open, ("/new", "wb"))]:
        raises(OSError, errno.EROFS, call, *args)
    raises(OSError, errno.EROFS, pack.rename, "/hello.txt", "/x", filename2="/x")
    raises(OSError, errno.EROFS, pack.symlink, "t", "/s", filename2="/s")


def test_mutation_errors_on_mem():
    t = packfs.mem()
    t.mkdir("/d")
    t.write("/d/f", b"data")
    raises(FileExistsError, errno.EEXIST, t.mkdir, "/d")
    raises(FileExistsError, errno.EEXIST, t.open, "/d/f", "xb")
    raises(IsADirectoryError, errno.EISDIR, t.open, "/d", "wb")
    raises(IsADirectoryError, errno.EISDIR, t.unlink, "/d")
    raises(NotADirectoryError, errno.ENOTDIR, t.rmdir, "/d/f")
    raises(NotADirectoryError, errno.ENOTDIR, t.mkdir, "/d/f/g")
    raises(OSError, errno.ENOTEMPTY, t.rmdir, "/d")
    raises(FileNotFoundError, errno.ENOENT, t.rmdir, "/gone")
    raises(PermissionError, errno.EPERM, t.link, "/d", "/d2", filename2="/d2")
    raises(FileNotFoundError, errno.ENOENT, t.rename, "/nope", "/x", filename2="/x")
    raises(OSError, errno.EINVAL, t.rename, "/d", "/d/sub", filename2="/d/sub")
    raises(FileExistsError, errno.EEXIST, t.symlink, "x", "/d/f", filename="x", filename2="/d/f")


def test_open_source_errors(tmp_path, pack_path):
    missing = str(tmp_path / "missing.pack")
    raises(FileNotFoundError, errno.ENOENT, packfs.open, missing)
    raises(OSError, errno.EROFS, packfs.open, pack_path, True)
    raises(NotADirectoryError, errno.ENOTDIR, packfs.open, pack_path + "/x")


def test_corrupt_pack_is_euclean(pack_path, tmp_path):
    data = bytearray(open(pack_path, "rb").read())
    data[100] ^= 0xFF  # inside the header, which is checksummed
    bad = tmp_path / "bad.pack"
    bad.write_bytes(bytes(data))
    e = raises(OSError, errno.EUCLEAN, packfs.open, str(bad))
    assert "Structure needs cleaning" in e.strerror
    junk = tmp_path / "junk.pack"
    junk.write_bytes(b"not a pack at all")
    raises(OSError, errno.EUCLEAN, packfs.open, str(junk))
