#!/usr/bin/env python3
"""A PyTorch-style Dataset over a pack of many small files.

A training set of many small files (images, token shards, audio clips) is slow to read from a
filesystem: each file is an open, a read and a close. Packed, each sample is one lookup in the
pack's mapping, and Tree.read releases the GIL while it looks up and copies, so DataLoader
worker threads read in parallel.

    python3 examples/python/dataset.py          # builds a small pack and iterates it

torch is optional: with it, the dataset goes through torch.utils.data.DataLoader; without it
(or with PACKFS_EXAMPLE_NO_TORCH=1), through a plain loop and a thread pool.
"""
import concurrent.futures
import os
import sys
import tempfile

import packfs


class PackDataset:
    """Every regular file under `root` of a pack (or any packfs source), in a fixed order;
    dataset[i] is the file's bytes, or transform(bytes) when a transform is given."""

    def __init__(self, source, root="/", transform=None):
        self.source = source
        self.tree = packfs.open(source)
        self.transform = transform
        # walk() lists each directory without the GIL; sorting gives a stable index.
        self.paths = sorted(
            os.path.join(dirpath, name)
            for dirpath, _, names in self.tree.walk(root)
            for name in names
            if self.tree.isfile(os.path.join(dirpath, name)))

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        data = self.tree.read(self.paths[index])
        return self.transform(data) if self.transform else data

    # A Tree holds a mapping, not a descriptor position: pickling (DataLoader worker processes)
    # reopens the source in the worker.
    def __getstate__(self):
        return {"source": self.source, "paths": self.paths, "transform": self.transform}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.tree = packfs.open(self.source)


def decode(data):
    """A sample: (label, payload) from 'label:payload' bytes."""
    label, _, payload = data.partition(b":")
    return int(label), payload


def make_pack(directory, count):
    src = os.path.join(directory, "samples")
    for i in range(count):
        shard = os.path.join(src, f"shard{i % 16:02d}")
        os.makedirs(shard, exist_ok=True)
        with open(os.path.join(shard, f"sample{i:05d}.txt"), "wb") as f:
            f.write(b"%d:" % (i % 10) + bytes([i % 251]) * (100 + i % 400))
    pack = os.path.join(directory, "samples.pack")
    packfs.build(src, pack)
    return pack


def main():
    count = 2000
    with tempfile.TemporaryDirectory() as tmp:
        pack = make_pack(tmp, count)
        dataset = PackDataset(pack, transform=decode)
        assert len(dataset) == count, len(dataset)
        try:
            if os.environ.get("PACKFS_EXAMPLE_NO_TORCH"):
                raise ImportError
            import torch.utils.data as tud
        except ImportError:
            tud = None
        labels = [0] * 10
        if tud is not None:
            loader = tud.DataLoader(dataset, batch_size=64, num_workers=0,
                                    collate_fn=lambda batch: batch)
            for batch in loader:
                for label, _ in batch:
                    labels[label] += 1
            how = "torch DataLoader"
        else:
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                for label, _ in pool.map(dataset.__getitem__, range(len(dataset))):
                    labels[label] += 1
            how = "4 threads, no torch"
        assert labels == [count // 10] * 10, labels
        print(f"read {sum(labels)} samples from {os.path.basename(pack)} ({how}); "
              f"per label: {labels[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
