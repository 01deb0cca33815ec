"""Test accuracy of a checkpoint written by horovod_training.py or ddp_training.py.

    python3 examples/python/evaluate.py model_epoch_9.pth [--min-accuracy 85]

Loads the state dict into torchvision.models.resnet18(num_classes=10), runs it
on the 10,000 Fashion-MNIST test images (same transforms as the training
scripts), prints `test accuracy: XX.XX %` and exits 1 below --min-accuracy.
"""

import argparse
import os
import sys

import torch
import torchvision
import torchvision.transforms as transforms

from fashion_mnist_data import FashionMNISTRGB, prepare


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", help="a model_epoch_N.pth file")
    parser.add_argument("--min-accuracy", type=float, default=85.0,
                        help="exit 1 if the accuracy (in %%) is below this (default: 85)")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--data-dir", default=None,
                        help="root of FashionMNIST/raw (default: $EXAMPLE_DATA_DIR or examples/python/data)")
    args = parser.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    state = torch.load(args.checkpoint, map_location="cpu")
    # A state dict saved from the DDP wrapper itself would carry "module." prefixes.
    state = {k[len("module."):] if k.startswith("module.") else k: v for k, v in state.items()}
    model = torchvision.models.resnet18(num_classes=10)
    model.load_state_dict(state)
    model.to(device).eval()

    transform = transforms.Compose([
        transforms.ToTensor(),
        transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
    ])
    dataset = FashionMNISTRGB(root=prepare(args.data_dir), train=False, download=False, transform=transform)
    workers = int(os.environ.get("EXAMPLE_LOADER_WORKERS", "4"))
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, shuffle=False,
                                         num_workers=workers)

    correct = total = 0
    with torch.no_grad():
        for data, target in loader:
            data, target = data.to(device), target.to(device)
            correct += (model(data).argmax(dim=1) == target).sum().item()
            total += target.size(0)

    accuracy = 100.0 * correct / total
    print(f"{args.checkpoint}: {correct} of {total} test images right")
    print(f"test accuracy: {accuracy:.2f} %")
    if accuracy < args.min_accuracy:
        print(f"below --min-accuracy {args.min_accuracy:g} %", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
