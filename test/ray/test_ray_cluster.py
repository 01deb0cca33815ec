"""chorus.ray.RayExecutor across the two nodes of a simulated Ray cluster
(ray.cluster_utils.Cluster: two raylets on this machine): num_hosts with
num_workers_per_host spreads the workers one group per node, and each rank's
LOCAL_RANK / local size counts the workers of its own node."""
import pytest

pytest.importorskip("ray")

import conftest  # noqa: E402
import rank_functions as fns  # noqa: E402
from chorus.ray import RayExecutor  # noqa: E402


@pytest.fixture(scope="module")
def two_nodes():
    import ray
    from ray.cluster_utils import Cluster
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2})
    cluster.add_node(num_cpus=2)
    ray.init(address=cluster.address, **conftest.RAY_START)
    yield cluster
    ray.shutdown()
    cluster.shutdown()


def test_workers_per_host_spread_over_the_nodes(two_nodes):
    executor = RayExecutor(num_hosts=2, num_workers_per_host=2)
    executor.start()
    try:
        results = executor.run(fns.allreduce_rank)
        nodes = executor.execute(fns.node_id)
    finally:
        executor.shutdown()
    assert [r["rank"] for r in results] == [0, 1, 2, 3] and all(r["sum"] == 10.0 for r in results)
    assert nodes[0] == nodes[1] and nodes[2] == nodes[3] and nodes[0] != nodes[2]
    assert [(r["local_rank"], r["local_size"]) for r in results] == [(0, 2), (1, 2), (0, 2), (1, 2)]


def test_more_hosts_than_nodes_fail_naming_both(two_nodes):
    executor = RayExecutor(RayExecutor.create_settings(placement_group_timeout_s=2), num_hosts=3,
                           num_workers_per_host=1)
    with pytest.raises(Exception, match=r"3 workers of 1 CPU on 3 hosts could not be placed .* on 2 nodes"):
        executor.start()
