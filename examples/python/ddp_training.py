# ddp_training.py
import os
import time  # Chorus: images/s

import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler
import torchvision
import torchvision.transforms as transforms

from fashion_mnist_data import FashionMNISTRGB, prepare  # Chorus: Fashion-MNIST from /usr/share/datasets


def setup(rank, world_size):
    """Initialize the distributed process group"""
    # Chorus: setdefault, so that torchrun's address and port are kept
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "12355")
    # Chorus: NCCL where there is CUDA, else gloo (was "nccl")
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend, rank=rank, world_size=world_size)


def cleanup():
    dist.destroy_process_group()


def train(rank, world_size):
    # Chorus: knobs for quick runs; the article's values are the defaults
    epochs = int(os.environ.get("EXAMPLE_EPOCHS", "10"))
    train_subset = int(os.environ.get("EXAMPLE_TRAIN_SUBSET", "0"))  # 0: all 60,000 images
    loader_workers = int(os.environ.get("EXAMPLE_LOADER_WORKERS", "4"))
    out_dir = os.environ.get("EXAMPLE_OUT_DIR", ".")

    setup(rank, world_size)

    # 1. Data loading: DistributedSampler shards the data automatically
    transform = transforms.Compose([
        transforms.ToTensor(),
        transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
    ])
    # Chorus: Fashion-MNIST (gray images turned into RGB) instead of CIFAR10 with download=True
    dataset = FashionMNISTRGB(root=prepare(), train=True, download=False, transform=transform)
    if train_subset > 0:  # Chorus: the first EXAMPLE_TRAIN_SUBSET images only
        dataset = torch.utils.data.Subset(dataset, range(min(train_subset, len(dataset))))
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank)
    dataloader = torch.utils.data.DataLoader(dataset, batch_size=64, sampler=sampler,
                                             num_workers=loader_workers)  # Chorus: was num_workers=4

    # 2. Move the model to this process's GPU and wrap it in DDP
    # Chorus: the GPU of this rank on its host (LOCAL_RANK under torchrun), or the CPU
    if torch.cuda.is_available():
        local_rank = int(os.environ.get("LOCAL_RANK", rank))
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        model = torchvision.models.resnet18(num_classes=10).to(device)  # Chorus: was .cuda(rank)
        model = DDP(model, device_ids=[local_rank])  # Chorus: was device_ids=[rank]
    else:
        device = torch.device("cpu")
        model = DDP(torchvision.models.resnet18(num_classes=10))  # Chorus: no device_ids on the CPU

    # 3. Loss function and optimizer
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    if rank == 0:  # Chorus: the checkpoints' folder
        os.makedirs(out_dir, exist_ok=True)

    # 4. Training loop
    for epoch in range(epochs):  # Chorus: was range(10)
        sampler.set_epoch(epoch)  # reshuffle differently every epoch
        loss_sum, batches, images, start = 0.0, 0, 0, time.perf_counter()  # Chorus: progress
        for batch_idx, (data, target) in enumerate(dataloader):
            data, target = data.to(device), target.to(device)  # Chorus: was .cuda(rank)
            optimizer.zero_grad()
            output = model(data)
            loss = criterion(output, target)
            loss.backward()  # DDP synchronizes the gradients automatically
            optimizer.step()
            loss_sum += loss.item()  # Chorus: progress
            batches += 1
            images += data.size(0)

        # Chorus: mean loss and images/s, averaged over the ranks
        seconds = time.perf_counter() - start
        stats = torch.tensor([loss_sum / max(batches, 1), images / seconds], dtype=torch.float64,
                             device=device)
        dist.all_reduce(stats)  # sum
        mean_loss, per_rank = (stats / world_size).tolist()
        if rank == 0:
            print(f"epoch {epoch}: loss {mean_loss:.4f}, {per_rank:.1f} images/s per rank, "
                  f"{per_rank * world_size:.1f} images/s total", flush=True)

        # Only rank 0 saves the model
        if rank == 0:
            # Chorus: into EXAMPLE_OUT_DIR (default: the current directory)
            torch.save(model.module.state_dict(), os.path.join(out_dir, f"model_epoch_{epoch}.pth"))

    cleanup()


if __name__ == "__main__":
    # Chorus: started by torchrun (RANK and WORLD_SIZE set): this process is one rank
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    else:
        # Chorus: EXAMPLE_NP ranks if set, else one per GPU, else 2 on the CPU (was torch.cuda.device_count())
        world_size = int(os.environ.get("EXAMPLE_NP", "0")) or torch.cuda.device_count() or 2
        import torch.multiprocessing as mp
        mp.spawn(train, args=(world_size,), nprocs=world_size, join=True)
