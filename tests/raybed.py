"""A Ray cluster across the namespace hosts of tests/multihost.py: the head in this machine's
namespace (on the bridge), one worker per namespace host with the `mpi_node` resource, each
started by Ray's own `ray start` under the host's name and address. So every Ray node is a
distinct host to Ray and to Open MPI alike, and a rank can tell which node it ran on.

(ray.cluster_utils.Cluster puts every node on one address and one host name, where mpirun
cannot place ranks per node and no benchmark can tell the nodes apart.)"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from autotune.launch._executor import session_members
from tests import multihost

RAY = str(Path(sys.executable).with_name("ray"))
QUIET = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_DEDUP_LOGS": "0"}
FAST_HEALTH = {"RAY_health_check_period_ms": "1000", "RAY_health_check_failure_threshold": "3",
               "RAY_health_check_initial_delay_ms": "1000"}


@dataclass
class RayBed:
    bed: multihost.TestBed
    address: str
    namespaces: list[str]
    head: subprocess.Popen
    root: Path
    workers: dict[str, subprocess.Popen] = field(default_factory=dict)

    def kill_node(self, index: int) -> str:
        """A node dies: every process of its namespace is killed and its network is cut."""
        ns = self.namespaces[index]
        _kill_namespace(ns)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        return self.bed.hosts[index]

    def kill_head(self) -> None:
        _kill_session(self.head.pid)


def _free_port(ip: str) -> int:
    with socket.socket() as sock:
        sock.bind((ip, 0))
        return sock.getsockname()[1]


def _kill_session(sid: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in session_members(sid):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        time.sleep(1.0)


def _kill_namespace(ns: str) -> None:
    pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def wait_for_nodes(address: str, count: int, timeout: float = 90.0) -> None:
    script = ("import ray, sys, time\n"
              f"ray.init(address={address!r}, logging_level='ERROR', log_to_driver=False)\n"
              f"end = time.time() + {timeout}\n"
              "while time.time() < end:\n"
              "    n = sum(1 for x in ray.nodes() if x['Alive'] and x['Resources'].get('mpi_node'))\n"
              f"    if n >= {count}: sys.exit(0)\n"
              "    time.sleep(0.5)\n"
              "sys.exit(1)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=timeout + 60, env=dict(os.environ, **QUIET))
    if proc.returncode:
        raise RuntimeError(f"Ray workers did not join within {timeout:.0f} s: {proc.stderr[-800:]}")


def create(tmp: Path, workers: int = 4) -> RayBed:
    """Build the hosts and the cluster; raise RuntimeError with the reason when it cannot be."""
    bed = multihost.create(tmp, workers)
    head_ip = bed.gateway
    port = _free_port(head_ip)
    address = f"{head_ip}:{port}"
    root = Path(tempfile.mkdtemp(prefix="atr", dir="/tmp"))  # short: Ray's socket paths <= 107 B
    env = dict(os.environ, **QUIET, **FAST_HEALTH)
    head = subprocess.Popen([RAY, "start", "--head", "--block", f"--node-ip-address={head_ip}",
                             f"--port={port}", "--num-cpus=1", "--include-dashboard=false",
                             "--object-store-memory=80000000", f"--temp-dir={root}/head"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    namespaces = [f"{bed.tag}h{i}" for i in range(1, workers + 1)]
    ray_bed = RayBed(bed=bed, address=address, namespaces=namespaces, head=head, root=root)
    for ns, ip in zip(namespaces, bed.hosts):
        line = (f"hostname {ns}; exec {RAY} start --block --address={address} "
                f"--node-ip-address={ip} --num-cpus=1 --object-store-memory=80000000 "
                f"--temp-dir={root}/{ns} --resources='{{\"mpi_node\": 1}}'")
        ray_bed.workers[ns] = subprocess.Popen(
            ["ip", "netns", "exec", ns, "unshare", "--uts", "sh", "-c", line], env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for_nodes(address, workers)
    except BaseException:
        destroy(ray_bed)
        raise
    return ray_bed


def destroy(ray_bed: RayBed) -> None:
    for ns in ray_bed.namespaces:
        _kill_namespace(ns)
    for proc in ray_bed.workers.values():
        _kill_session(proc.pid)
    _kill_session(ray_bed.head.pid)
    multihost.destroy()
    shutil.rmtree(ray_bed.root, ignore_errors=True)
