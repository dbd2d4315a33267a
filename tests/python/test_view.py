# Zero-copy views: from a raw pack a memoryview points into the pack's mapping (two views of
# the same bytes share an address, whichever File or call made them), is read-only, and stays
# valid after the File and the Tree are closed, for as long as the view lives. Elsewhere a view
# is a copy, and says so.
import gc

import pytest

import packfs


def test_views_share_the_mapping(pack, files):
    data = files["/big.bin"]
    with pack.open("/big.bin") as f1, pack.open("/big.bin") as f2:
        v1 = f1.view()
        v2 = f2.view(4096, 100)
    v3 = pack.view("/big.bin", 4096)
    assert v1.readonly and v1.obj.zero_copy and v3.obj.zero_copy
    assert v1.nbytes == len(data) and bytes(v1) == data
    assert bytes(v2) == data[4096:4196] and bytes(v3) == data[4096:]
    a1 = packfs._view_address(v1)
    assert packfs._view_address(v2) == a1 + 4096
    assert packfs._view_address(v3) == a1 + 4096
    # another file's bytes are elsewhere in the same mapping
    other = pack.view("/data/x.dat")
    assert bytes(other) == files["/data/x.dat"]
    assert packfs._view_address(other) != a1
    with pytest.raises(TypeError):
        v1[0] = 1
    assert pack.view("/empty").nbytes == 0
    assert bytes(pack.view("/big.bin", len(data) + 10)) == b""


def test_view_outlives_tree(pack_path, files):
    t = packfs.open(pack_path)
    f = t.open("/big.bin")
    v = f.view(100, 1000)
    f.close()
    t.close()
    del f, t
    gc.collect()
    assert bytes(v) == files["/big.bin"][100:1100]
    assert v[0] == files["/big.bin"][100]


def test_view_copies_where_it_must(zpack_path, files):
    with packfs.open(zpack_path) as t:
        v = t.view("/big.bin")
        assert not v.obj.zero_copy and bytes(v) == files["/big.bin"]
        with t.open("/a/two") as f:
            w = f.view(10, 20)
        assert bytes(w) == files["/a/two"][10:30]
    m = packfs.mem()
    m.write("/f", b"abcdef")
    v = m.view("/f", 1, 3)
    assert bytes(v) == b"bcd" and not v.obj.zero_copy
    m.write("/f", b"changed")
    assert bytes(v) == b"bcd"  # a copy: what was there when the view was made


def test_view_errors(pack):
    with pytest.raises(FileNotFoundError):
        pack.view("/nope")
    with pytest.raises(IsADirectoryError):
        pack.view("/a")
