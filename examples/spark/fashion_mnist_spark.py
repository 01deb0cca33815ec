"""Fashion-MNIST trained data-parallel with chorus.torch on Spark's barrier
execution mode (chorus.spark.run): the C++ main job's CNN, one rank per
barrier task, Debian's dataset-fashion-mnist (nothing downloaded).
Run: python3 fashion_mnist_spark.py (a local Spark of EXAMPLE_WORKERS
cores, 2 by default; SPARK_MASTER=spark://... for a cluster whose
executors can import chorus). Prints rank 0's test accuracy; exits 1
below EXAMPLE_MIN_ACCURACY (85). EXAMPLE_EPOCHS (2)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_EXAMPLES = os.path.join(HERE, "..", "python")


def train(epochs):
    """One rank's part: runs in a Spark barrier task."""
    import torch
    import torch.nn.functional as F

    import chorus.torch as hvd
    from elastic_training import FashionNet, accuracy, images  # examples/python

    hvd.init()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    train_set, test_set = images(True), images(False)
    model = FashionNet()
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size(), momentum=0.9),
                                         named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    sampler = torch.utils.data.distributed.DistributedSampler(train_set, num_replicas=hvd.size(), rank=hvd.rank(),
                                                              shuffle=True, seed=0)
    loader = torch.utils.data.DataLoader(train_set, batch_size=64, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
    return accuracy(model, test_set) if hvd.rank() == 0 else None


def main():
    from pyspark import SparkConf, SparkContext

    import chorus.spark
    workers = int(os.environ.get("EXAMPLE_WORKERS", "2"))
    epochs = int(os.environ.get("EXAMPLE_EPOCHS", "2"))
    min_accuracy = float(os.environ.get("EXAMPLE_MIN_ACCURACY", "85"))
    # The tasks' Python workers import examples/python's modules and chorus as this process does.
    os.environ["PYTHONPATH"] = os.pathsep.join([PYTHON_EXAMPLES] + sys.path)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = SparkConf().setMaster(os.environ.get("SPARK_MASTER", f"local[{workers}]")).setAppName("chorus-fashion-mnist")
    sc = SparkContext.getOrCreate(conf.set("spark.ui.enabled", "false"))
    sc.setLogLevel("ERROR")
    try:
        results = chorus.spark.run(train, args=(epochs,), num_proc=workers, spark_context=sc)
    finally:
        sc.stop()
    print(f"test accuracy {results[0]:.2f} % after {epochs} epochs on {workers} Spark barrier tasks", flush=True)
    if results[0] < min_accuracy:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
