# Fixtures for the packfs module's tests: a host tree with every kind of entry, the packs built
# from it (raw and zstd), and the packfs program (PACKFS_CLI) for what the module does not do.
import os
import shutil
import subprocess

import pytest

import packfs


def make_tree(root):
    """A small tree: nested directories, empty and larger files, symlinks of every kind, a hard
    link. Returns {virtual path: bytes} for the regular files."""
    files = {
        "/hello.txt": b"hello, world\n",
        "/empty": b"",
        "/a/b/c/deep.bin": bytes(range(256)) * 3,
        "/a/one": b"1" * 100,
        "/a/two": b"2" * 5000,
        "/big.bin": os.urandom(1 << 20),
        "/data/x.dat": b"x" * 4096,
        "/data/y.dat": b"y" * 4096,
    }
    for path, data in files.items():
        host = os.path.join(root, path.lstrip("/"))
        os.makedirs(os.path.dirname(host), exist_ok=True)
        with open(host, "wb") as f:
            f.write(data)
    os.makedirs(os.path.join(root, "emptydir"))
    os.symlink("hello.txt", os.path.join(root, "link"))
    os.symlink("a/b", os.path.join(root, "dirlink"))
    os.symlink("nowhere", os.path.join(root, "dangling"))
    os.symlink("loop", os.path.join(root, "loop"))
    os.link(os.path.join(root, "a/one"), os.path.join(root, "a/one.hard"))
    try:  # where the host filesystem takes user xattrs, the pack gets one
        os.setxattr(os.path.join(root, "hello.txt"), "user.color", b"blue")
    except OSError:
        pass
    files["/a/one.hard"] = files["/a/one"]
    return files


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("PACKFS_CLI") or shutil.which("packfs")
    if not path:
        pytest.skip("no packfs program (set PACKFS_CLI)")
    return path


@pytest.fixture(scope="session")
def tree_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("src")
    files = make_tree(str(root))
    return str(root), files


@pytest.fixture(scope="session")
def pack_path(tree_dir, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("packs") / "tree.pack")
    packfs.build(tree_dir[0], out)
    return out


@pytest.fixture(scope="session")
def zpack_path(tree_dir, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("packs") / "tree-zstd.pack")
    packfs.build(tree_dir[0], out, compression="zstd")
    return out


@pytest.fixture
def pack(pack_path):
    with packfs.open(pack_path) as t:
        yield t


@pytest.fixture
def files(tree_dir):
    return tree_dir[1]
