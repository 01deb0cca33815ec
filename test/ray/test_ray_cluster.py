"""chorus.ray across the two nodes of a simulated Ray cluster
(ray.cluster_utils.Cluster: two raylets on this machine): RayExecutor's
num_hosts with num_workers_per_host spreads the workers one group per node,
each rank's LOCAL_RANK / local size counting the workers of its own node;
ElasticRayExecutor loses a whole node mid-training and the workers of the
other go on from their last commit."""
import threading
import time

import pytest

pytest.importorskip("ray")

import conftest  # noqa: E402
import rank_functions as fns  # noqa: E402
from chorus.ray import ElasticRayExecutor, RayExecutor  # noqa: E402


@pytest.fixture(scope="module")
def two_nodes():
    import ray
    from ray.cluster_utils import Cluster
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2})
    cluster.second = cluster.add_node(num_cpus=2)
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


def test_elastic_workers_of_a_lost_node_are_gone_and_the_others_go_on(two_nodes, tmp_path):
    """Last in the module: the second node is removed for good."""
    marker, steps = tmp_path / "a third done", 90

    def remove_second_node_at_a_third():
        while not marker.exists():
            time.sleep(0.05)
        two_nodes.remove_node(two_nodes.second)

    remover = threading.Thread(target=remove_second_node_at_a_third, daemon=True)
    remover.start()
    executor = ElasticRayExecutor(ElasticRayExecutor.create_settings(min_np=2, max_np=4, elastic_timeout=60))
    executor.start()
    results = executor.run(fns.elastic_counter, args=[steps, str(marker)], kwargs={"end_own_process": False})
    remover.join(timeout=30)
    assert marker.exists() and not remover.is_alive()
    want = fns.elastic_closed_form(steps)
    assert len(results) == 2  # the head node's two workers finished in the last world
    for done, checksum, resets, size in results:
        assert done == steps and checksum == pytest.approx(want, rel=1e-12) and size == 2
        assert 2 in resets  # they went on in a world of two
