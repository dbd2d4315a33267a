#!/usr/bin/env python3
"""A deterministic tree shaped like a source tree, for the mount tests at scale.

    make_tree.py DIR FILES [SEED]

DIR (created) gets about FILES regular files in directories both deep (chains of 12
levels) and wide (one directory of 2,000 entries), sizes as a source tree has them (most a few
KiB, some up to 1 MiB, empty ones; about 7 KiB a file), plus symlinks (relative, dangling), hard links, modes
0600..0755 and one setuid file, and mtimes in the past. The same arguments make the same tree.
"""
import os
import random
import sys


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    root, count = sys.argv[1], int(sys.argv[2])
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    os.makedirs(root, exist_ok=True)

    dirs = [root]
    # Deep: chains of nested directories.
    for chain in range(max(1, count // 2000)):
        at = os.path.join(root, f"deep{chain}")
        for level in range(12):
            at = os.path.join(at, f"level{level}")
            dirs.append(at)
    # Wide: many directories of a few levels.
    for i in range(max(1, count // 100)):
        parent = rng.choice(dirs[: 1 + len(dirs) // 2])
        dirs.append(os.path.join(parent, f"dir{i}"))
    wide = os.path.join(root, "wide")
    for d in dirs + [wide]:
        os.makedirs(d, exist_ok=True)

    files = []
    blob = rng.randbytes(1 << 20)
    for i in range(count):
        if i < 2000:
            d = wide
        else:
            d = rng.choice(dirs)
        r = rng.random()
        if r < 0.03:
            size = 0
        elif r < 0.968:
            size = int(rng.expovariate(1 / 4000)) % 65536
        elif r < 0.998:
            size = rng.randrange(65536, 131072)
        else:
            size = rng.randrange(131072, 1 << 20)
        path = os.path.join(d, f"f{i}.{rng.choice(['c', 'h', 'txt', 'S', 'rs', 'py'])}")
        start = rng.randrange(0, len(blob) - size) if size < len(blob) else 0
        with open(path, "wb") as f:
            f.write(f"{i}\n".encode() + blob[start:start + size])
        os.chmod(path, rng.choice([0o644, 0o644, 0o644, 0o600, 0o755, 0o640]))
        files.append(path)
    os.chmod(files[len(files) // 2], 0o4755)
    for i in range(0, len(files), 97):  # hard links
        os.link(files[i], files[i] + ".hard")
    for i in range(0, len(files), 89):  # relative symlinks, some dangling
        target = os.path.basename(files[i]) if i % 2 else "nowhere"
        os.symlink(target, files[i] + ".link")
    stamp = 1_500_000_000
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        for name in filenames:
            p = os.path.join(dirpath, name)
            stamp += 7
            os.utime(p, ns=(stamp * 10**9 + 123, stamp * 10**9 + 456), follow_symlinks=False)
        stamp += 11
        os.utime(dirpath, ns=(stamp * 10**9, stamp * 10**9))
    return 0


if __name__ == "__main__":
    sys.exit(main())
