"""Fashion-MNIST for the TensorFlow examples, read from Debian's
dataset-fashion-mnist (/usr/share/datasets/fashion-mnist: the four gzipped
IDX files) with NumPy: nothing is downloaded. Images as float32 in [0, 1]
with a channel axis, labels as int64."""
import gzip
import os

import numpy as np

SOURCE_DIR = "/usr/share/datasets/fashion-mnist"


def _idx(name, source_dir):
    path = os.path.join(source_dir, name + ".gz")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} not found: install Debian's dataset-fashion-mnist "
                                "(apt-get install dataset-fashion-mnist)")
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(shape)


def load(source_dir=SOURCE_DIR):
    """((x_train, y_train), (x_test, y_test))."""
    def images(name):
        return (_idx(name, source_dir).astype(np.float32) / 255.0)[..., None]

    def labels(name):
        return _idx(name, source_dir).astype(np.int64)

    return ((images("train-images-idx3-ubyte"), labels("train-labels-idx1-ubyte")),
            (images("t10k-images-idx3-ubyte"), labels("t10k-labels-idx1-ubyte")))


def subset():
    """$EXAMPLE_TRAIN_SUBSET: train on that many images only (the tests' quick run)."""
    n = os.environ.get("EXAMPLE_TRAIN_SUBSET")
    return int(n) if n else None
