# Threads: many threads reading one tree at once get the right bytes, and the GIL really is
# released in the calls that do I/O. The proof of the latter is one that cannot pass by
# timing luck: the tree is a remote pack served over HTTP by a Python thread of this same
# process, so every open, read, view and walk that fetches a block can only finish if the
# serving thread gets the GIL meanwhile. A call holding the GIL would deadlock until the
# remote timeout (and fail with EIO).
import concurrent.futures
import http.server
import os
import threading

import pytest

import packfs


def test_threads_read_concurrently(pack_path, files):
    paths = sorted(files)
    with packfs.open(pack_path) as t:
        def work(seed):
            buf = bytearray(1 << 20)
            for i in range(300):
                p = paths[(seed + i) % len(paths)]
                if t.read(p) != files[p]:
                    return f"read {p}"
                with t.open(p) as f:
                    n = f.readinto(buf)
                    if bytes(buf[:n]) != files[p]:
                        return f"readinto {p}"
                if bytes(t.view(p)) != files[p]:
                    return f"view {p}"
                if t.stat(p).st_size != len(files[p]):
                    return f"stat {p}"
            if [bytes(v) for v in t.read_many(paths)] != [files[p] for p in paths]:
                return "read_many"
            data, offsets = t.read_concat(paths)
            if bytes(data) != b"".join(files[p] for p in paths) or len(offsets) != len(paths) + 1:
                return "read_concat"
            return sum(len(fs) for _, _, fs in t.walk())
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = list(pool.map(work, range(16)))
    assert all(isinstance(r, int) and r == results[0] for r in results), results


def test_close_while_other_threads_read(pack_path, files):
    # close() only drops the tree's reference: reads in flight finish, later ones fail cleanly.
    t = packfs.open(pack_path)
    errors, done = [], threading.Event()

    def reader():
        while not done.is_set():
            try:
                assert t.read("/big.bin") == files["/big.bin"]
            except ValueError:  # closed
                return
            except Exception as e:  # noqa: BLE001
                errors.append(e)
                return

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for th in threads:
        th.start()
    t.close()
    done.set()
    for th in threads:
        th.join()
    assert errors == []


class RangeHandler(http.server.BaseHTTPRequestHandler):
    """GET with one Range, as the remote reader asks (206 with Content-Range)."""
    root = None

    def do_GET(self):  # noqa: N802
        path = os.path.join(self.root, self.path.lstrip("/"))
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            self.send_error(404)
            return
        first, last = 0, len(data) - 1
        rng = self.headers.get("Range")
        if rng:
            a, b = rng.split("=", 1)[1].split("-")
            first, last = int(a), min(int(b) if b else len(data) - 1, len(data) - 1)
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {first}-{last}/{len(data)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(last - first + 1))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        self.wfile.write(data[first:last + 1])

    def log_message(self, *args):
        pass


def test_gil_released_while_fetching(pack_path, files, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    RangeHandler.root = os.path.dirname(pack_path)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RangeHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/{os.path.basename(pack_path)}"
        with packfs.open(url) as t:  # the header and metadata come from the Python server
            assert t.kind == "remote"
            assert t.read("/big.bin") == files["/big.bin"]
            with t.open("/a/two") as f:
                assert f.read() == files["/a/two"]
            assert bytes(t.view("/data/x.dat")) == files["/data/x.dat"]
            assert [bytes(v) for v in t.read_many(["/a/b/c/deep.bin", "/data/y.dat"])] == [
                files["/a/b/c/deep.bin"], files["/data/y.dat"]]
            data, _ = t.read_concat(["/data/y.dat", "/a/b/c/deep.bin"])
            assert bytes(data) == files["/data/y.dat"] + files["/a/b/c/deep.bin"]
            names = [os.path.basename(p) for p in files] + ["dangling", "link", "loop"]
            assert sorted(f for _, _, fs in t.walk() for f in fs) == sorted(names)
    finally:
        server.shutdown()
        server.server_close()


class TokenHandler(RangeHandler):
    """RangeHandler behind a bearer token: 401 without it."""

    def do_GET(self):  # noqa: N802
        if self.headers.get("Authorization") != "Bearer s3cret":
            self.send_error(401)
            return
        super().do_GET()


def serve(handler, root):
    handler.root = root
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_remote_options(pack_path, files, tmp_path):
    server = serve(TokenHandler, os.path.dirname(pack_path))
    try:
        url = f"http://127.0.0.1:{server.server_port}/{os.path.basename(pack_path)}"
        cache = tmp_path / "blocks"
        # The token as a dict or as strings; the cache where it is told (a PathLike).
        with packfs.open(url, headers={"Authorization": "Bearer s3cret"}, cache=cache,
                         cache_size=1 << 30, timeout=5, connections=2) as t:
            assert t.read("/big.bin") == files["/big.bin"]
        assert any(cache.iterdir()), "nothing was kept in the cache given"
        with packfs.open(url, headers=["Authorization: Bearer s3cret"], cache="none") as t:
            assert t.read("/a/two") == files["/a/two"]
        # Without it: refused, as the os module says it (EACCES), naming the URL.
        with pytest.raises(PermissionError) as refused:
            packfs.open(url, cache="none", timeout=5)
        assert "401" in str(refused.value)
        # A pin the pack does not match: refused, saying so.
        with pytest.raises(OSError) as wrong:
            packfs.open(url, headers={"Authorization": "Bearer s3cret"}, cache="none",
                        digest="0" * 64)
        assert "digest" in str(wrong.value)
        # Wrong values, and remote options for a local source, are ValueErrors.
        for bad in ({"connections": 0}, {"timeout": 0}, {"cache_size": -1},
                    {"headers": ["no colon"]}, {"headers": ["A: b\r\nC: d"]}):
            with pytest.raises(ValueError):
                packfs.open(url, **bad)
        with pytest.raises(ValueError):
            packfs.open(pack_path, cache="none")
        with pytest.raises(TypeError):
            packfs.open(url, False, "0" * 64)  # the options are keywords only
    finally:
        server.shutdown()
        server.server_close()
