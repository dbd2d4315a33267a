# walk against os.walk: the pack, the host directory it was built from, and that tree extracted
# by `packfs extract`, compared as sorted lists (top-down and bottom-up, with and without
# followlinks), plus pruning in place and onerror.
import os
import subprocess

import pytest

import packfs


def normalised(walk, root):
    out = []
    for dirpath, dirnames, filenames in walk:
        rel = "/" + os.path.relpath(dirpath, root) if dirpath != root else "/"
        out.append((rel.replace("//", "/"), sorted(dirnames), sorted(filenames)))
    return sorted(out)


@pytest.fixture(scope="module")
def extracted(pack_path, cli, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("extract") / "tree")
    subprocess.run([cli, "extract", pack_path, out], check=True, stdout=subprocess.DEVNULL)
    return out


@pytest.mark.parametrize("topdown", [True, False])
@pytest.mark.parametrize("followlinks", [False, True])
def test_walk_matches_os_walk(pack, extracted, tree_dir, topdown, followlinks):
    expected = normalised(os.walk(extracted, topdown=topdown, followlinks=followlinks), extracted)
    assert expected == normalised(os.walk(tree_dir[0], topdown=topdown, followlinks=followlinks),
                                  tree_dir[0])
    mine = list(pack.walk("/", topdown=topdown, followlinks=followlinks))
    assert normalised(mine, "/") == expected
    with packfs.open(tree_dir[0]) as d:
        assert normalised(d.walk("/", topdown, None, followlinks), "/") == expected
    # the order of os.walk: a directory before its children top-down, after them bottom-up
    paths = [p for p, _, _ in mine]
    assert (paths[0] == "/") == topdown and (paths[-1] == "/") == (not topdown)


def test_walk_subtree_prune_and_bytes(pack):
    assert [p for p, _, _ in pack.walk("/a")] == ["/a", "/a/b", "/a/b/c"]
    seen = []
    for dirpath, dirnames, _ in pack.walk():
        seen.append(dirpath)
        if "a" in dirnames:
            dirnames.remove("a")
    assert "/a" not in seen and "/data" in seen
    assert [p for p, _, _ in pack.walk(b"/a/b")] == [b"/a/b", b"/a/b/c"]


def test_walk_errors(pack):
    assert list(pack.walk("/nope")) == []
    errors = []
    assert list(pack.walk("/hello.txt", onerror=errors.append)) == []
    assert isinstance(errors[0], NotADirectoryError) and errors[0].filename == "/hello.txt"
