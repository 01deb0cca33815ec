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


def main():
    from pyspark import SparkConf, SparkContext

    import chorus.spark
    workers = int(os.environ.get("EXAMPLE_WORKERS", "2"))
    epochs = int(os.environ.get("EXAMPLE_EPOCHS", "2"))
    min_accuracy = float(os.environ.get("EXAMPLE_MIN_ACCURACY", "85"))
    # The tasks' Python workers import examples/python's modules and chorus as this process does.
    os.environ["PYTHONPATH"] = os.pathsep.join([PYTHON_EXAMPLES] + sys.path)
    sys.path.insert(0, PYTHON_EXAMPLES)
    import fashion_mnist_rank  # one rank's part, run in each task (examples/python)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = SparkConf().setMaster(os.environ.get("SPARK_MASTER", f"local[{workers}]")).setAppName("chorus-fashion-mnist")
    sc = SparkContext.getOrCreate(conf.set("spark.ui.enabled", "false"))
    sc.setLogLevel("ERROR")
    try:
        results = chorus.spark.run(fashion_mnist_rank.train, args=(epochs,), num_proc=workers, spark_context=sc)
    finally:
        sc.stop()
    print(f"test accuracy {results[0]:.2f} % after {epochs} epochs on {workers} Spark barrier tasks", flush=True)
    if results[0] < min_accuracy:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
