"""Fashion-MNIST for the Python examples, from Debian's dataset-fashion-mnist.

The package ships the four gzipped IDX files in /usr/share/datasets/fashion-mnist/.
torchvision 0.14's FashionMNIST wants them decompressed in
<root>/FashionMNIST/raw/<name without .gz>; prepare() puts them there once and
returns <root>. Several ranks may call it at the same time: each file is
written to a temporary file in the same directory and renamed into place, so a
reader never sees a half-written file.

FashionMNISTRGB is torchvision's FashionMNIST with each 1-channel PIL image
turned into RGB before the transform, so the article's 3-channel Normalize and
torchvision.models.resnet18 apply unchanged.
"""

import gzip
import os
import shutil
import tempfile

import torchvision
from PIL import Image

SOURCE_DIR = "/usr/share/datasets/fashion-mnist"
FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)


def default_root():
    """$EXAMPLE_DATA_DIR, else a `data` folder beside this file."""
    return os.environ.get("EXAMPLE_DATA_DIR") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "data")


def prepare(root=None, source_dir=SOURCE_DIR):
    """Decompresses the four .gz files into root/FashionMNIST/raw (once); returns root."""
    root = os.path.abspath(root or default_root())
    raw = os.path.join(root, "FashionMNIST", "raw")
    os.makedirs(raw, exist_ok=True)
    for name in FILES:
        target = os.path.join(raw, name)
        if os.path.exists(target):  # only ever created by os.replace: complete
            continue
        source = os.path.join(source_dir, name + ".gz")
        if not os.path.exists(source):
            raise FileNotFoundError(
                f"{source} not found: install Debian's dataset-fashion-mnist "
                f"package (apt-get install dataset-fashion-mnist)")
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=raw)
        try:
            with os.fdopen(fd, "wb") as out, gzip.open(source, "rb") as src:
                shutil.copyfileobj(src, out, 1 << 20)
            os.chmod(tmp, 0o644)  # mkstemp makes it 0600; others may share the folder
            os.replace(tmp, target)  # atomic; a rank that lost the race replaces it with the same bytes
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    return root


class FashionMNISTRGB(torchvision.datasets.FashionMNIST):
    """torchvision.datasets.FashionMNIST, images converted to RGB before the transform."""

    # torchvision names the folders after the class; keep FashionMNIST's.
    @property
    def raw_folder(self):
        return os.path.join(self.root, "FashionMNIST", "raw")

    @property
    def processed_folder(self):
        return os.path.join(self.root, "FashionMNIST", "processed")

    def __getitem__(self, index):
        img, target = self.data[index], int(self.targets[index])
        img = Image.fromarray(img.numpy(), mode="L").convert("RGB")
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target
