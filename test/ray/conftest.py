"""What every test/ray module shares. Ray's workers import chorus and
rank_functions (functions are pickled by reference) as the driver does, so
PYTHONPATH is set before Ray starts (its workers inherit it). A module that
sets RAY_CPUS gets one local Ray of that many CPUs for all its tests."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PATHS = [HERE] + ([os.path.join(ROOT, "python")] if os.environ.get("CHORUS_TEST_INSTALLED") != "1" else [])
sys.path[:0] = PATHS
os.environ["PYTHONPATH"] = os.pathsep.join(PATHS + [os.environ.get("PYTHONPATH", "")])
os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a local test cluster: no token file in ~/.ray
RAY_START = {"include_dashboard": False, "log_to_driver": False}


@pytest.fixture(scope="module", autouse=True)
def local_ray(request):
    cpus = getattr(request.module, "RAY_CPUS", None)
    if cpus is None:  # the module starts its own cluster
        yield None
        return
    import ray
    ray.init(num_cpus=cpus, **RAY_START)
    yield ray
    ray.shutdown()
