"""chorus.ray.ChorusTrainer / ChorusConfig under Ray Train (one local Ray
for the module): chorus.torch's DistributedOptimizer in
train_loop_per_worker with Ray Train's scaling config, reports and
checkpoints."""
import os

import pytest

pytest.importorskip("ray.train")

import rank_functions as fns  # noqa: E402

RAY_CPUS = 4  # one local Ray for the module (conftest.py)


def test_a_ray_train_run_on_chorus(tmp_path):
    import ray.train
    import torch

    from chorus.ray import ChorusConfig, ChorusTrainer
    trainer = ChorusTrainer(fns.train_loop, train_loop_config={"steps": 30},
                            chorus_config=ChorusConfig(timeout_s=60),
                            scaling_config=ray.train.ScalingConfig(num_workers=2),
                            run_config=ray.train.RunConfig(storage_path=str(tmp_path), name="chorus"))
    result = trainer.fit()
    assert result.error is None
    weights = result.metrics["weights"]
    assert result.metrics["size"] == 2 and weights[0] == weights[1]  # one model on both ranks
    assert abs(weights[0] - 3.0) < 1e-3  # fitted
    with result.checkpoint.as_directory() as where:
        saved = torch.load(os.path.join(where, "model.pt"))
    assert float(saved["weight"]) == weights[0]
