# horovod_training.py
import os  # Chorus: for the EXAMPLE_* knobs below
import time  # Chorus: images/s

import torch
import torch.nn as nn
import chorus.torch as hvd  # Chorus: was `import horovod.torch as hvd`
from torch.utils.data.distributed import DistributedSampler
import torchvision
import torchvision.transforms as transforms

from fashion_mnist_data import FashionMNISTRGB, prepare  # Chorus: Fashion-MNIST from /usr/share/datasets


def main():
    # Chorus: knobs for quick runs; the article's values are the defaults
    epochs = int(os.environ.get("EXAMPLE_EPOCHS", "10"))
    train_subset = int(os.environ.get("EXAMPLE_TRAIN_SUBSET", "0"))  # 0: all 60,000 images
    loader_workers = int(os.environ.get("EXAMPLE_LOADER_WORKERS", "4"))
    out_dir = os.environ.get("EXAMPLE_OUT_DIR", ".")

    # 1. Initialize Horovod
    hvd.init()

    # 2. Pin each process to its GPU
    # Chorus: only where there is one; otherwise train on the CPU
    if torch.cuda.is_available():
        torch.cuda.set_device(hvd.local_rank())
        device = torch.device("cuda")
    else:
        device = torch.device("cpu")

    # 3. Data loading: use DistributedSampler
    transform = transforms.Compose([
        transforms.ToTensor(),
        transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
    ])
    # Chorus: Fashion-MNIST (gray images turned into RGB) instead of CIFAR10 with download=True
    dataset = FashionMNISTRGB(root=prepare(), train=True, download=False, transform=transform)
    if train_subset > 0:  # Chorus: the first EXAMPLE_TRAIN_SUBSET images only
        dataset = torch.utils.data.Subset(dataset, range(min(train_subset, len(dataset))))
    sampler = DistributedSampler(dataset, num_replicas=hvd.size(), rank=hvd.rank())
    dataloader = torch.utils.data.DataLoader(dataset, batch_size=64, sampler=sampler,
                                             num_workers=loader_workers)  # Chorus: was num_workers=4

    # 4. Move the model to the GPU
    model = torchvision.models.resnet18(num_classes=10).to(device)  # Chorus: was .cuda()

    # 5. Optimizer: scale the learning rate by the number of workers
    optimizer = torch.optim.SGD(
        model.parameters(),
        lr=0.01 * hvd.size()  # key point: the learning rate grows linearly with the number of workers
    )

    # 6. Wrap it in Horovod's distributed optimizer
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())

    # 7. Broadcast the initial parameters so that every worker starts from the same state
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    if hvd.rank() == 0:  # Chorus: the checkpoints' folder
        os.makedirs(out_dir, exist_ok=True)

    # 8. Training loop
    criterion = nn.CrossEntropyLoss()
    for epoch in range(epochs):  # Chorus: was range(10)
        sampler.set_epoch(epoch)
        loss_sum, batches, images, start = 0.0, 0, 0, time.perf_counter()  # Chorus: progress
        for batch_idx, (data, target) in enumerate(dataloader):
            data, target = data.to(device), target.to(device)  # Chorus: was .cuda()
            optimizer.zero_grad()
            output = model(data)
            loss = criterion(output, target)
            loss.backward()
            optimizer.step()  # Horovod synchronizes the gradients automatically
            loss_sum += loss.item()  # Chorus: progress
            batches += 1
            images += data.size(0)

        # Chorus: mean loss and images/s, averaged over the ranks (Horovod's default op is Average)
        seconds = time.perf_counter() - start
        stats = torch.tensor([loss_sum / max(batches, 1), images / seconds], dtype=torch.float64)
        mean_loss, per_rank = hvd.allreduce(stats, name=f"epoch_stats.{epoch}").tolist()
        if hvd.rank() == 0:
            print(f"epoch {epoch}: loss {mean_loss:.4f}, {per_rank:.1f} images/s per rank, "
                  f"{per_rank * hvd.size():.1f} images/s total", flush=True)

        # Only rank 0 saves the model
        if hvd.rank() == 0:
            # Chorus: into EXAMPLE_OUT_DIR (default: the current directory)
            torch.save(model.state_dict(), os.path.join(out_dir, f"model_epoch_{epoch}.pth"))


if __name__ == "__main__":
    main()
