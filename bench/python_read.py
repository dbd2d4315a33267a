#!/usr/bin/env python3
"""Python bindings benchmark (docs/BENCH.md, "Python bindings"): read 100,000 files of 4 KiB
from a pack with Tree.read(path), one thread and two, against the same files read from a
directory with open().read(), page cache warm. Prints the median of RUNS runs of each.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_read.py [--files N] [--runs R]

The source directory and the pack are made once under /var/tmp/packfs-pybench (--dir)."""
import argparse
import hashlib
import os
import statistics
import threading
import time

import packfs


def make_source(root, count, size):
    marker = os.path.join(root, f".done-{count}-{size}")
    src = os.path.join(root, "src")
    pack = os.path.join(root, "files.pack")
    if not os.path.exists(marker):
        print(f"making {count} files of {size} bytes under {src} and packing them ...", flush=True)
        per_dir = 1000
        for i in range(count):
            d = os.path.join(src, f"d{i // per_dir:04d}")
            if i % per_dir == 0:
                os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, f"f{i:06d}.bin"), "wb") as f:
                f.write(os.urandom(size))
        packfs.build(src, pack)  # raw: reads are views into the mapping
        open(marker, "w").close()
    paths = [f"/d{i // 1000:04d}/f{i:06d}.bin" for i in range(count)]
    return src, pack, paths


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def in_threads(n, paths, body):
    chunks = [paths[i::n] for i in range(n)]
    threads = [threading.Thread(target=body, args=(c,)) for c in chunks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--batch", type=int, default=1000, help="files a Tree.read_many call")
    ap.add_argument("--dir", default="/var/tmp/packfs-pybench")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    src, pack, paths = make_source(args.dir, args.files, args.size)
    host_paths = [src + p for p in paths]
    tree = packfs.open(pack)
    load = os.getloadavg()[0]  # other work on the machine: the 2-thread cases need a free core

    def from_dir(ps):
        for p in ps:
            with open(p, "rb") as f:
                f.read()

    def from_pack(ps):
        read = tree.read
        for p in ps:
            read(p)

    def from_pack_batched(ps):  # read_many: the GIL given up twice a batch, not a file
        read_many = tree.read_many
        for i in range(0, len(ps), args.batch):
            read_many(ps[i:i + args.batch])

    block = os.urandom(1 << 20)

    def control(ps):  # the machine's own parallelism: hashlib releases the GIL for big data
        for _ in range(len(ps) // 1000):
            hashlib.sha256(block).digest()

    cases = {
        "directory, open().read(), 1 thread": lambda: from_dir(host_paths),
        "directory, open().read(), 2 threads": lambda: in_threads(2, host_paths, from_dir),
        "pack, Tree.read(), 1 thread": lambda: from_pack(paths),
        "pack, Tree.read(), 2 threads": lambda: in_threads(2, paths, from_pack),
        "pack, Tree.read_many(), 1 thread": lambda: from_pack_batched(paths),
        "pack, Tree.read_many(), 2 threads": lambda: in_threads(2, paths, from_pack_batched),
        "control: sha256 of 1 MiB, 1 thread": lambda: control(paths),
        "control: sha256 of 1 MiB, 2 threads": lambda: in_threads(2, paths, control),
    }
    for fn in cases.values():  # warm the page cache and the pack's lookups once
        fn()
    times = {name: [] for name in cases}
    for _ in range(args.runs):  # interleaved, so a burst of other load hits every case alike
        for name, fn in cases.items():
            times[name].append(timed(fn))
    print(f"{args.files} files of {args.size} bytes, median of {args.runs} runs "
          f"(Python {'.'.join(map(str, os.sys.version_info[:3]))}, packfs {packfs.__version__})")
    print(f"{'case':40} {'median s':>9} {'files/s':>10}   runs")
    print(f"(load average at the start: {load:.2f}, cores: {os.cpu_count()})")
    med = {}
    for name, ts in times.items():
        med[name] = statistics.median(ts)
        print(f"{name:40} {med[name]:9.3f} {args.files / med[name]:10.0f}   "
              + " ".join(f"{t:.3f}" for t in ts))
    one = med["pack, Tree.read(), 1 thread"]
    print(f"pack 1 thread vs directory 1 thread: {med['directory, open().read(), 1 thread'] / one:.2f}x"
          " (target >= 5x)")
    print(f"pack 2 threads vs 1 thread:          {one / med['pack, Tree.read(), 2 threads']:.2f}x"
          " (target >= 1.8x)")
    many = med["pack, Tree.read_many(), 1 thread"]
    print(f"read_many 1 thread vs read:          {one / many:.2f}x")
    print(f"read_many 2 threads vs 1 thread:     {many / med['pack, Tree.read_many(), 2 threads']:.2f}x"
          f" (target >= 1.8x; {args.batch} files a call)")
    c1 = med["control: sha256 of 1 MiB, 1 thread"]
    print(f"control 2 threads vs 1 thread:       {c1 / med['control: sha256 of 1 MiB, 2 threads']:.2f}x"
          " (what the machine gives a GIL-free C loop now)")


if __name__ == "__main__":
    main()
