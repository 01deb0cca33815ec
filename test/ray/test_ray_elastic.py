"""chorus.ray.ElasticRayExecutor on a local Ray of 3 CPUs (one Ray for the
module): three workers train an elastic counter; one's process ends
mid-training; the survivors reset from their last commit, a new worker
starts on the freed CPU and joins; every worker that finishes holds the
closed-form model. And reset_limit, a worker that raises, bad settings,
too few CPUs."""
import time

import pytest

pytest.importorskip("ray")

import rank_functions as fns  # noqa: E402
from chorus.errors import ChorusError  # noqa: E402
from chorus.ray import ElasticRayExecutor, WorkerFailure  # noqa: E402

RAY_CPUS = 3  # one local Ray for the module (conftest.py)


def executor(**settings):
    made = ElasticRayExecutor(ElasticRayExecutor.create_settings(**settings))
    made.start()
    return made


def test_a_lost_worker_resets_the_others_and_a_new_one_joins(tmp_path):
    steps = 90
    results = executor(min_np=2, max_np=3, elastic_timeout=60).run(
        fns.elastic_counter, args=[steps, str(tmp_path / "killed")])
    assert (tmp_path / "killed").exists()
    want = fns.elastic_closed_form(steps)
    assert len(results) == 3  # two survivors and the newcomer finished in the last world
    for done, checksum, resets, size in results:
        assert done == steps and checksum == pytest.approx(want, rel=1e-12) and size == 3
    assert any(2 in resets for _, _, resets, _ in results)  # the survivors' world of two


def test_more_resets_than_reset_limit_fail_the_job_naming_it(tmp_path):
    with pytest.raises(ChorusError, match=r"1 reset, more than reset_limit=0 \(workers lost: ray-worker-\d+: its Ray"):
        executor(min_np=2, max_np=3, reset_limit=0, elastic_timeout=60).run(
            fns.elastic_counter, args=[90, str(tmp_path / "killed")])


def test_a_worker_that_raises_fails_the_job_naming_it():
    with pytest.raises(WorkerFailure, match=r"ray-worker-\d+ failed: KeyError: 'a bug in the training function'"):
        executor(min_np=2, max_np=2, elastic_timeout=30).run(fns.raises_in_elastic_job)


def test_too_few_cpus_for_min_np_fail_naming_both():
    began = time.monotonic()
    with pytest.raises(ChorusError, match=r"at least 5 .*min_np.* 3 s \(elastic_timeout\).* 3 CPUs") as failure:
        executor(min_np=5, elastic_timeout=3).run(fns.raises_in_elastic_job)
    assert not isinstance(failure.value, WorkerFailure)
    assert time.monotonic() - began < 30


def test_bad_settings():
    with pytest.raises(ValueError, match=r"min_np \(3\) must be >= 1 and at most max_np \(2\)"):
        ElasticRayExecutor.create_settings(min_np=3, max_np=2)
    with pytest.raises(ChorusError, match=r"call start\(\) before run\(\)"):
        ElasticRayExecutor(ElasticRayExecutor.create_settings()).run(fns.raises_in_elastic_job)
