#!/usr/bin/env python3
"""Python bindings benchmark (docs/BENCH.md, "Python bindings"): read 100,000 files of 4 KiB
from a pack with Tree.read(path), Tree.read_many(paths) and Tree.read_concat(paths), one thread
and two (each its own half of the files), against the same files read from a directory with
open().read(), page cache warm. Prints the median of RUNS runs of each.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_read.py [--files N] [--runs R]
        [--batch B] [--only SUBSTRING ...]

The source directory and the pack are made once under /var/tmp/packfs-pybench (--dir)."""
import argparse
import hashlib
import math
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


def timed(n, paths, body, passes=1):
    """Seconds a pass of body over paths, in n threads each with its own shard, over `passes`
    passes in a row. Each thread makes all its passes before it ends, as a data loader's
    workers live for an epoch: threads started and joined every pass (30 ms of work here)
    would time their start-up and the tail where one runs alone (about 3 ms a pass on this VM)
    as much as the reading."""
    if n == 1:
        start = time.perf_counter()
        for _ in range(passes):
            body(paths)
        return (time.perf_counter() - start) / passes
    # Each thread its own shard, as a data loader's workers take theirs. Dealing the files out
    # one by one instead (paths[i::n]) has both threads read alternate 4 KiB pages, which the
    # hardware prefetchers do not follow: on this VM a plain C loop of 4 KiB memcpys from the
    # page cache gets 1.37x from a second thread dealt that way and 1.9x sharded.
    per = (len(paths) + n - 1) // n
    chunks = [paths[i * per:(i + 1) * per] for i in range(n)]

    def worker(chunk):
        for _ in range(passes):
            body(chunk)

    threads = [threading.Thread(target=worker, args=(c,)) for c in chunks]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return (time.perf_counter() - start) / passes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--batch", type=int, default=1000, help="files a Tree.read_many or read_concat call")
    ap.add_argument("--min-run", type=float, default=0.25,
                    help="seconds a timed run lasts at least (a fast case repeats its pass)")
    ap.add_argument("--only", action="append", help="run only the cases whose name has this "
                    "(repeatable): e.g. --only read_concat --only control")
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

    def from_pack_concat(ps):  # read_concat: one buffer and its offsets, no object a file
        read_concat = tree.read_concat
        for i in range(0, len(ps), args.batch):
            read_concat(ps[i:i + args.batch])

    block = os.urandom(1 << 20)

    def control(ps):  # the machine's own parallelism: hashlib releases the GIL for big data
        for _ in range(len(ps) // 1000):
            hashlib.sha256(block).digest()

    cases = {  # name: (threads, paths, body)
        "directory, open().read(), 1 thread": (1, host_paths, from_dir),
        "directory, open().read(), 2 threads": (2, host_paths, from_dir),
        "pack, Tree.read(), 1 thread": (1, paths, from_pack),
        "pack, Tree.read(), 2 threads": (2, paths, from_pack),
        "pack, Tree.read_many(), 1 thread": (1, paths, from_pack_batched),
        "pack, Tree.read_many(), 2 threads": (2, paths, from_pack_batched),
        "pack, Tree.read_concat(), 1 thread": (1, paths, from_pack_concat),
        "pack, Tree.read_concat(), 2 threads": (2, paths, from_pack_concat),
        "control: sha256 of 1 MiB, 1 thread": (1, paths, control),
        "control: sha256 of 1 MiB, 2 threads": (2, paths, control),
    }
    if args.only:
        cases = {name: case for name, case in cases.items() if any(o in name for o in args.only)}
    # A warm-up pass of each (the page cache, the pack's lookups) also sets how many passes a
    # run takes: enough for a run of --min-run seconds, as a fast case's 30 ms would otherwise
    # be as much thread start-up and scheduling as reading.
    passes = {name: max(1, math.ceil(args.min_run / timed(*case))) for name, case in cases.items()}
    times = {name: [] for name in cases}
    for _ in range(args.runs):  # interleaved, so a burst of other load hits every case alike
        for name, case in cases.items():
            times[name].append(timed(*case, passes[name]))
    print(f"{args.files} files of {args.size} bytes, median of {args.runs} runs of at least "
          f"{args.min_run} s (the seconds below are a pass's) "
          f"(Python {'.'.join(map(str, os.sys.version_info[:3]))}, packfs {packfs.__version__})")
    print(f"{'case':40} {'median s':>9} {'files/s':>10}   runs")
    print(f"(load average at the start: {load:.2f}, cores: {os.cpu_count()})")
    med = {}
    for name, ts in times.items():
        med[name] = statistics.median(ts)
        print(f"{name:40} {med[name]:9.3f} {args.files / med[name]:10.0f}   "
              + " ".join(f"{t:.3f}" for t in ts))
    def ratio(label, slow, fast, note=""):  # printed when both cases ran (see --only)
        if slow in med and fast in med:
            print(f"{label:36} {med[slow] / med[fast]:.2f}x{note}")

    dir1, read1 = "directory, open().read(), 1 thread", "pack, Tree.read(), 1 thread"
    batch = f" (target >= 1.8x; {args.batch} files a call)"
    ratio("pack 1 thread vs directory 1 thread:", dir1, read1, " (target >= 5x)")
    ratio("pack 2 threads vs 1 thread:", read1, "pack, Tree.read(), 2 threads", " (target >= 1.8x)")
    for call in ("read_many", "read_concat"):
        one = f"pack, Tree.{call}(), 1 thread"
        ratio(f"{call} 1 thread vs read:", read1, one)
        ratio(f"{call} 2 threads vs 1 thread:", one, f"pack, Tree.{call}(), 2 threads", batch)
    ratio("control 2 threads vs 1 thread:", "control: sha256 of 1 MiB, 1 thread",
          "control: sha256 of 1 MiB, 2 threads", " (what the machine gives a GIL-free C loop now)")

if __name__ == "__main__":
    main()
