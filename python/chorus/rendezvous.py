"""An elastic job's rendezvous held by a driver of one's own (the C ABI's
chorus_rendezvous_*, chorus/elastic_rendezvous.h; docs/elastic.md): what
chorusrun holds for `--min-np` jobs, for drivers that start their workers
another way (chorus.ray.ElasticRayExecutor).

    rendezvous = ElasticRendezvous("10.0.0.1", job_id, secret, min_np=2)
    env = rendezvous.worker_env("worker-1")   # that worker's variables
    rendezvous.expect("worker-1"); ...start the worker...
    while ...:
        late = rendezvous.run_for(0.1)        # members to stop
        rendezvous.left                       # retired members done with their step: end them
        rendezvous.gone(id)                   # when one ended
"""
import ctypes

from ._library import lib
from .handles import check

HOSTS_ADDED, HOSTS_REMOVED = 1, 2


class ElasticRendezvous:
    """Listens on a free port of every interface; `address`: where the
    workers reach it. `min_np_name`, `timeout_name`: how its failures name
    min_np and elastic_timeout (default chorusrun's flags)."""

    def __init__(self, address, job_id, secret, min_np, max_np=None, elastic_timeout=600, join_grace=10,
                 min_np_name=None, timeout_name=None):
        self._handle = None
        self.address, self.job_id, self.secret = address, job_id, secret or ""
        handle = ctypes.c_void_p()
        check(lib.chorus_rendezvous_start(address.encode(), job_id.encode(), self.secret.encode(), int(min_np),
                                          int(max_np or 0), float(elastic_timeout), float(join_grace),
                                          min_np_name.encode() if min_np_name else None,
                                          timeout_name.encode() if timeout_name else None, ctypes.byref(handle)))
        self._handle = handle
        self.port = check(lib.chorus_rendezvous_port(self._handle))
        self.worlds_formed = 0
        self.left = []

    def worker_env(self, member):
        """The variables that make a process member `member` of this job."""
        return {"CHORUS_TRANSPORT": "tcp", "CHORUS_JOB_ID": self.job_id, "CHORUS_SECRET": self.secret,
                "CHORUS_ELASTIC_ADDR": f"{self.address}:{self.port}", "CHORUS_ELASTIC_MEMBER": member}

    def expect(self, member):
        check(lib.chorus_rendezvous_expect(self._live(), member.encode()))

    def gone(self, member):
        check(lib.chorus_rendezvous_gone(self._live(), member.encode()))

    def hosts_changed(self, kinds):
        check(lib.chorus_rendezvous_hosts_changed(self._live(), int(kinds)))

    def retire(self, member):
        """`member` leaves gracefully (its host was removed, not failed):
        True when it is in the running world, where it finishes its step
        (then call hosts_changed(HOSTS_REMOVED); it appears in `left` once
        it asks for the next world: end it then, nothing is rolled back);
        False when it is in no world: end it now."""
        return check(lib.chorus_rendezvous_retire(self._live(), member.encode())) == 1

    def run_for(self, seconds):
        """Accepts, reads and answers for up to `seconds`; returns the
        members to stop (late to ask again) and sets `left` (retired members
        that finished their step). AbortedError when no world can form (the
        members were told why)."""
        formed, late = ctypes.c_int64(), ctypes.c_int()
        check(lib.chorus_rendezvous_run_for(self._live(), float(seconds), ctypes.byref(formed), ctypes.byref(late)))
        self.worlds_formed = formed.value
        self.left = [lib.chorus_rendezvous_left(self._handle, i).decode()
                     for i in range(lib.chorus_rendezvous_left_count(self._handle))]
        return [lib.chorus_rendezvous_late(self._handle, i).decode() for i in range(late.value)]

    def close(self):
        if self._handle is not None:
            lib.chorus_rendezvous_stop(self._handle)
            self._handle = None

    def _live(self):
        if self._handle is None:
            raise ValueError("chorus.rendezvous: the rendezvous was closed")
        return self._handle

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()
