#!/usr/bin/env python3
"""Versions of a tree, each made from the one before by a seeded script, for the chunk-sharing
benchmarks (docs/BENCH.md "Packs that share").

    bench/make_versions.py BASE OUT [--versions 10] [--seed 1]

OUT/v0 is a copy of BASE; OUT/vK is OUT/v(K-1) with about 1% of its files edited (text files:
a few runs of lines inserted and deleted; binary files: a few bytes overwritten), 0.1% added
(an existing text file's lines, shuffled and edited, under a new name in an existing directory)
and 0.1% removed. Files a version does not change are hard links to the same file of the version
before, so ten versions of a 1.5 GB tree take about 1.5 GB; a changed file is written anew and
renamed into place, never changed through a link. The same BASE and seed give the same versions,
byte for byte (names, contents; mtimes are set from the seed too).
"""
import argparse
import os
import random
import shutil
import sys


def files_of(root):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if os.path.isfile(path) and not os.path.islink(path):
                out.append(os.path.relpath(path, root))
    return out


def is_text(data):
    return b"\0" not in data[:8192]


def edit_text(data, rng):
    lines = data.split(b"\n")
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(lines) + 1)
        if rng.random() < 0.5 and len(lines) > 2:
            del lines[at:at + rng.randint(1, 5)]
        else:
            lines = lines or [b""]
            new = [b"/* edit %d */ %s" % (rng.randrange(10**9),
                                           rng.choice(lines)[:80]) for _ in range(rng.randint(1, 5))]
            lines[at:at] = new
    return b"\n".join(lines)


def edit_binary(data, rng):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if data:
            data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


def write_new(path, data, mtime):
    tmp = path + ".tmp-version"
    with open(tmp, "wb") as f:
        f.write(data)
    os.utime(tmp, (mtime, mtime))
    os.replace(tmp, path)


def next_version(prev, cur, rng, version):
    # Hard-link copy (cp -al keeps modes, owners and times; links, not copies, of the files).
    if os.system("cp -al '%s' '%s'" % (prev, cur)) != 0:
        sys.exit("cp -al %s %s failed" % (prev, cur))
    files = files_of(cur)
    mtime = 1_700_000_000 + version * 86_400
    edited = rng.sample(files, max(1, len(files) // 100))
    for rel in edited:
        path = os.path.join(cur, rel)
        with open(path, "rb") as f:
            data = f.read()
        write_new(path, edit_text(data, rng) if is_text(data) else edit_binary(data, rng), mtime)
    edited_set = set(edited)
    removed = set(rng.sample([f for f in files if f not in edited_set], max(1, len(files) // 1000)))
    for rel in removed:
        os.unlink(os.path.join(cur, rel))
    kept = [f for f in files if f not in removed]
    for i in range(max(1, len(files) // 1000)):
        model = rng.choice(kept)
        with open(os.path.join(cur, model), "rb") as f:
            data = f.read()
        if is_text(data):
            lines = data.split(b"\n")
            rng.shuffle(lines)
            data = edit_text(b"\n".join(lines), rng)
        else:
            data = edit_binary(data, rng)
        name = os.path.join(os.path.dirname(model), "added-%d-%d" % (version, i))
        write_new(os.path.join(cur, name), data, mtime)
    return len(edited), len(removed), max(1, len(files) // 1000)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base")
    parser.add_argument("out")
    parser.add_argument("--versions", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    first = os.path.join(args.out, "v0")
    if os.path.exists(first):
        sys.exit("%s exists: remove OUT's versions first" % first)
    shutil.copytree(args.base, first, symlinks=True)
    for k in range(1, args.versions):
        counts = next_version(os.path.join(args.out, "v%d" % (k - 1)),
                              os.path.join(args.out, "v%d" % k), rng, k)
        print("v%d: %d edited, %d removed, %d added" % ((k,) + counts), flush=True)


if __name__ == "__main__":
    main()
