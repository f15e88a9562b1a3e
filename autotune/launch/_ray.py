"""Ray launcher: trials run on the MPI nodes of a running Ray cluster.

Each MPI node carries a custom resource (`mpi_node: 1` by default). A trial reserves its nodes
with a placement group, one bundle of that resource per node, strictly spread (never two bundles
on one node, and no other trial can hold them meanwhile). Every launch of the trial is a Ray task
pinned to bundle 0 that runs `mpirun --host <the reserved nodes>`; the group is removed after the
trial. The Ray cluster only places and starts mpirun; MPI traffic never goes through Ray.

Results are counted once: tasks have max_retries=0 (a lost node fails the launch, Ray never
re-runs it), each launch carries a fresh token the result must echo, and the task must report
the node of bundle 0. A node of the group dying mid-launch (seen in ray.nodes()) fails the launch
as `infrastructure`; the head being unreachable for `head_grace` seconds raises ClusterLost, which
stops the run with the study intact. Ray would kill this process 60 s after losing its head
(gcs_rpc_server_reconnect_timeout_s), so that timeout is raised before connecting.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field

import ray
from ray.util.placement_group import placement_group, placement_group_table, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from ..errors import ClusterLost, EnvironmentProblem, InputError, NoNodes
from ._base import Command, LaunchSpec, RunResult
from ._executor import run_command
from ._hostlist import HostListLauncher
from ._ray_head import HeadSilent, ask_head, check_reachable, split_address

DEFAULT_RESOURCE = "mpi_node"
RECONNECT_ENV = "RAY_gcs_rpc_server_reconnect_timeout_s"
POLL_SECONDS = 1.0
CANCEL_GRACE_SECONDS = 5.0
HOPELESS_AFTER_SECONDS = 5.0


@ray.remote(num_cpus=0, max_retries=0, retry_exceptions=False)
def run_on_node(command: Command, timeout: float, token: str) -> RunResult:
    """Runs on the group's first node: mpirun there, with every host of the group."""
    result = run_command(command, timeout)
    result.extra["node_id"] = ray.get_runtime_context().get_node_id()
    result.extra["token"] = token
    return result


@dataclass(frozen=True)
class RayNode:
    node_id: str
    address: str  # what mpirun's --host gets
    hostname: str  # what the ranks report


@dataclass
class RayGroup:
    pool: "RayPool"
    pg: object
    nodes: tuple[RayNode, ...]
    label: str
    name: str = "ray"
    lost: str = field(default="")

    def hosts(self) -> tuple[str, ...]:
        return tuple(n.address for n in self.nodes)

    def host_names(self) -> tuple[str, ...]:
        return tuple(n.hostname for n in self.nodes)

    def command(self, spec: LaunchSpec) -> Command:
        launcher = HostListLauncher("ray", self.hosts(), self.pool.site_mca, mpirun=self.pool.mpirun)
        return launcher.command(spec)

    def run(self, command: Command, timeout: float) -> RunResult:
        started, t0 = time.time(), time.monotonic()
        if self.lost:
            return self._failed(command, started, t0, node_lost=self.lost)
        token = uuid.uuid4().hex
        strategy = PlacementGroupSchedulingStrategy(self.pg, placement_group_bundle_index=0)
        ref = run_on_node.options(scheduling_strategy=strategy).remote(command, timeout, token)
        deadline = t0 + timeout + 60.0  # the task enforces `timeout` itself; this is a backstop
        try:
            return self._watch(ref, command, token, started, t0, deadline)
        except BaseException:  # a stop signal, ClusterLost: never leave the launch running
            self._cancel(ref)
            raise

    def _watch(self, ref, command: Command, token: str, started: float, t0: float,
               deadline: float) -> RunResult:
        while True:
            ready, _ = ray.wait([ref], timeout=POLL_SECONDS)
            if ready:
                return self._collect(ref, command, token, started, t0)
            if self.pool.cancel.is_set():
                self._cancel(ref)
                return self._failed(command, started, t0, cancelled=True)
            self.pool.check_head()  # raises ClusterLost
            lost = self.pool.lost_nodes(self.nodes)
            if lost:
                self.lost = lost
                self._cancel(ref)
                return self._failed(command, started, t0, node_lost=lost)
            if time.monotonic() > deadline:
                self._cancel(ref)
                return self._failed(command, started, t0, timed_out=True)

    def settle(self) -> None:
        """A launch failed for infrastructure reasons: if a node of the group died, Ray declares
        it dead only after its health checks fail (seconds to a minute). Wait for that verdict
        (up to `pool.node_verdict` s) so the trial fails at once and no later trial gets the
        dead node; a group that stays healthy is retried as usual."""
        end = time.monotonic() + self.pool.node_verdict
        while not self.lost and time.monotonic() < end and not self.pool.cancel.is_set():
            self.pool.check_head()
            self.lost = self.pool.lost_nodes(self.nodes)
            if not self.lost:
                time.sleep(POLL_SECONDS)

    def _collect(self, ref, command: Command, token: str, started: float, t0: float) -> RunResult:
        try:
            result: RunResult = ray.get(ref)
        except ray.exceptions.RayError as exc:
            self.pool.wait_for_head()  # a task dies with the head too: that is not this group's fault
            self.lost = self.pool.lost_nodes(self.nodes)
            # a dead node, or a task that died for another reason (Ray's memory monitor, ...):
            # infrastructure either way; only a dead node makes retrying on this group futile
            why = self.lost or (f"Ray task failed on {self.nodes[0].hostname}: {type(exc).__name__}: "
                                f"{str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''}")
            return self._failed(command, started, t0, node_lost=why)
        if result.extra.get("token") != token:
            raise ClusterLost("a Ray task returned another launch's result; refusing to count it")
        if result.extra.get("node_id") != self.nodes[0].node_id:
            result.extra["node_lost"] = (f"the launch ran on Ray node {result.extra.get('node_id')}, "
                                         f"not on the reserved {self.nodes[0].node_id}")
        return result

    def _cancel(self, ref) -> None:
        """Ask the task to stop (it kills its mpirun session), then force it."""
        try:
            ray.cancel(ref)
            ready, _ = ray.wait([ref], timeout=CANCEL_GRACE_SECONDS)
            if not ready:
                ray.cancel(ref, force=True)
        except Exception:  # noqa: BLE001 - the task or its node may be gone already
            pass

    @staticmethod
    def _failed(command: Command, started: float, t0: float, **why: object) -> RunResult:
        timed_out = bool(why.pop("timed_out", False))
        return RunResult(argv=command.argv, returncode=None, stdout="", stderr="",
                         seconds=time.monotonic() - t0, started=started, timed_out=timed_out,
                         extra=dict(why))


class RayPool:
    """Reserves node groups on a Ray cluster; one placement group per running trial."""

    name = "ray"

    def __init__(self, address: str | None, nodes: int, parallel: int = 1,
                 resource: str = DEFAULT_RESOURCE, site_mca: tuple[tuple[str, str], ...] = (),
                 acquire_timeout: float = 600.0, head_grace: float = 30.0,
                 node_verdict: float = 20.0, mpirun: str = "mpirun") -> None:
        self.nodes = nodes
        self.parallel = parallel
        self.resource = resource
        self.site_mca = site_mca
        self.acquire_timeout = acquire_timeout
        self.head_grace = head_grace
        self.node_verdict = node_verdict
        self.mpirun = mpirun
        self.cancel = threading.Event()
        self._head_down_since: float | None = None
        self._groups: dict[str, RayGroup] = {}
        self._unremoved: list = []  # placement groups whose removal has to be retried
        self._lock = threading.Lock()  # worker threads acquire and release groups at once
        os.environ.setdefault(RECONNECT_ENV, "86400")
        address = address or os.environ.get("RAY_ADDRESS") or "auto"
        if address != "auto":
            check_reachable(address)
        try:
            ray.init(address=address, namespace="autotune", logging_level=logging.ERROR,
                     log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise EnvironmentProblem(f"cannot connect to the Ray cluster at {address}: "
                                     f"{str(exc).splitlines()[0] if str(exc) else exc}") from None
        self.address = address
        self.gcs = split_address(ray.get_runtime_context().gcs_address)
        odd = [f"{n['NodeManagerHostname']} ({n['Resources'][resource]:g})" for n in ask_head(ray.nodes)
               if n.get("Alive") and n.get("Resources", {}).get(resource, 0) not in (0, 1)]
        if odd:  # a bundle could land there, and two trials could share such a node
            ray.shutdown()
            raise EnvironmentProblem(f"Ray nodes must carry exactly 1 {resource!r}; these carry "
                                     f"another amount: {', '.join(odd)}")
        mpi_nodes = self.mpi_nodes()
        if len(mpi_nodes) < nodes * parallel:
            ray.shutdown()
            shown = ", ".join(n.hostname for n in mpi_nodes) or "none"
            error = InputError if len(mpi_nodes) >= nodes else EnvironmentProblem
            raise error(f"--nodes {nodes} x --parallel {parallel} needs {nodes * parallel} Ray nodes "
                        f"with resource {resource!r}; the cluster has {len(mpi_nodes)} ({shown}). "
                        f"Start workers with --resources='{{\"{resource}\": 1}}'")

    def mpi_nodes(self) -> list[RayNode]:
        return sorted((RayNode(n["NodeID"], n["NodeManagerAddress"], n["NodeManagerHostname"])
                       for n in ask_head(ray.nodes)
                       if n.get("Alive") and n.get("Resources", {}).get(self.resource, 0) >= 1),
                      key=lambda n: (n.address, n.node_id))

    def hosts(self) -> tuple[str, ...]:
        return tuple(n.address for n in self.mpi_nodes())

    def host_names(self) -> tuple[str, ...]:
        return tuple(n.hostname for n in self.mpi_nodes())

    def describe(self) -> str:
        nodes = self.mpi_nodes()
        return (f"Ray cluster at {self.address}: {len(nodes)} node(s) with resource "
                f"{self.resource!r} ({', '.join(n.hostname for n in nodes[:4])}"
                + (", ..." if len(nodes) > 4 else "") + ")")

    # -------------------------------------------------------------- health

    def head_reachable(self) -> bool:
        try:
            socket.create_connection(self.gcs, timeout=2.0).close()
            return True
        except OSError:
            return False

    def check_head(self) -> None:
        """Raise ClusterLost once the head has been unreachable for `head_grace` seconds."""
        if self.head_reachable():
            self._head_down_since = None
            return
        now = time.monotonic()
        if self._head_down_since is None:
            self._head_down_since = now
        if now - self._head_down_since >= self.head_grace:
            raise ClusterLost(f"the Ray head ({self.gcs[0]}:{self.gcs[1]}) has been unreachable for "
                              f"{now - self._head_down_since:.0f} s")

    def wait_for_head(self) -> None:
        """Return once the head answers; raise ClusterLost when it stays away `head_grace` s."""
        while not self.head_reachable():
            if self.cancel.is_set():
                raise NoNodes("stopping")
            self.check_head()
            time.sleep(POLL_SECONDS)
        self._head_down_since = None

    def lost_nodes(self, nodes: tuple[RayNode, ...]) -> str:
        """Why the group is broken ("" while all its nodes are alive)."""
        if not self.head_reachable():
            return ""  # cannot tell; check_head decides about the head
        try:
            alive = {n["NodeID"]: n.get("Alive", False) for n in ask_head(ray.nodes)}
        except Exception:  # noqa: BLE001 - the head went away meanwhile; check_head decides
            return ""
        dead = [n for n in nodes if not alive.get(n.node_id)]
        if not dead:
            return ""
        return "Ray node(s) lost during the trial: " + ", ".join(
            f"{n.hostname} ({n.address})" for n in dead)

    # -------------------------------------------------------------- groups

    def acquire(self, timeout: float | None = None) -> RayGroup:
        timeout = self.acquire_timeout if timeout is None else timeout
        try:
            return self._acquire(timeout)
        except ray.exceptions.RayError as exc:  # e.g. GetTimeoutError while the head is gone
            self.wait_for_head()
            raise NoNodes(f"could not reserve {self.nodes} Ray node(s): {type(exc).__name__}: "
                          f"{str(exc).splitlines()[0][:200] if str(exc) else ''}") from None

    def _acquire(self, timeout: float) -> RayGroup:
        self.wait_for_head()
        self._retry_removals()
        pg = ask_head(placement_group, [{self.resource: 1}] * self.nodes,
                       strategy="STRICT_SPREAD", name=f"autotune-{uuid.uuid4().hex[:12]}")
        t0 = time.monotonic()
        try:
            while True:
                ready, _ = ray.wait([pg.ready()], timeout=POLL_SECONDS)
                if ready:
                    break
                if self.cancel.is_set():
                    raise NoNodes("stopping")
                self.check_head()
                self._give_up_if_hopeless(t0)
                if time.monotonic() - t0 > timeout:
                    raise NoNodes(f"could not reserve {self.nodes} node(s) with resource "
                                  f"{self.resource!r} in {timeout:.0f} s")
            table = ask_head(placement_group_table, pg)
            by_id = {n.node_id: n for n in self.mpi_nodes()}
            placed = table.get("bundles_to_node_id", {})
            if any(placed.get(i) not in by_id for i in range(self.nodes)):
                raise NoNodes("a reserved node left the cluster while it was being reserved")
        except BaseException:
            self._remove(pg)
            raise
        nodes = tuple(by_id[placed[i]] for i in range(self.nodes))
        group = RayGroup(self, pg, nodes, label=pg.id.hex()[:8])
        with self._lock:
            self._groups[group.label] = group
        return group

    def _give_up_if_hopeless(self, t0: float) -> None:
        """Once nodes are lost, the cluster may no longer hold a group for every worker: while
        the groups held by the others leave too few nodes for this one, stop waiting."""
        if time.monotonic() - t0 < HOPELESS_AFTER_SECONDS or not self.head_reachable():
            return
        alive = len(self.mpi_nodes())
        with self._lock:
            held = len(self._groups)
        if alive < self.nodes * (held + 1):
            raise NoNodes(f"{alive} Ray node(s) with resource {self.resource!r} are alive and "
                          f"{held} trial(s) hold {self.nodes} each: no room for another trial")

    def release(self, group) -> None:
        with self._lock:
            self._groups.pop(group.label, None)
        self._remove(group.pg)

    def _remove(self, pg) -> None:
        """Remove a placement group; if the head does not answer now, remember it and retry
        later (a group left behind would hold its nodes for the rest of the run)."""
        with self._lock:
            self._unremoved.append(pg)
        self._retry_removals()

    def _retry_removals(self) -> None:
        if not self.head_reachable():
            return
        with self._lock:  # taken by one thread at a time: each group is removed once
            pending, self._unremoved = self._unremoved, []
        for pg in pending:
            try:
                ask_head(remove_placement_group, pg)
            except Exception as exc:  # noqa: BLE001 - already removed, or the head went away
                if not isinstance(exc, HeadSilent) and self.head_reachable():
                    continue  # gone already: nothing holds its nodes
                with self._lock:
                    self._unremoved.append(pg)

    def cancel_all(self) -> None:
        self.cancel.set()

    def close(self) -> None:
        with self._lock:
            held = list(self._groups.values())
        for group in held:
            self.release(group)
        self._retry_removals()
        if ray.is_initialized():
            ray.shutdown()
