# The dataset example as a library: its PackDataset indexes every regular file, reads them, and
# survives pickling (what DataLoader worker processes do with it).
import importlib.util
import os
import pickle
import sys

import packfs

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "examples", "python", "dataset.py")


def load_example():
    spec = importlib.util.spec_from_file_location("packfs_dataset_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # so pickle finds its classes by name
    spec.loader.exec_module(module)
    return module


def test_pack_dataset(tmp_path):
    example = load_example()
    pack = example.make_pack(str(tmp_path), 300)
    ds = example.PackDataset(pack, transform=example.decode)
    assert len(ds) == 300
    label, payload = ds[7]
    assert 0 <= label < 10 and len(payload) >= 100
    copy = pickle.loads(pickle.dumps(ds))
    assert len(copy) == 300 and copy[7] == ds[7]
    raw = example.PackDataset(pack, root="/shard03")
    assert all(p.startswith("/shard03/") for p in raw.paths)
    assert raw[0].split(b":")[0].isdigit()
    assert isinstance(raw.tree, type(packfs.mem()))
