"""block / cyclic from the openmpi-ucx space give the placements seeds/000 means, by Open MPI's own
reports: on a synthetic 2-NUMA topology (hwloc's HWLOC_SYNTHETIC) block fills NUMA node 0 first and
cyclic deals ranks over the NUMA nodes; on this machine each rank is really bound to its own core."""
import re
import subprocess

import pytest

from autotune.launch import LaunchSpec, LocalLauncher
from autotune.launch._executor import launch_environment
from autotune.space import TrialContext, load_space

pytestmark = pytest.mark.mpi
CTX = TrialContext("allreduce", 1)


def mapping_args(choice):
    space = load_space("openmpi-ucx")
    return space.settings({"mapping": choice}, CTX).mpirun_args


def run(args, extra_env=None):
    spec = LaunchSpec(nodes=1, ppn=2, program=("true",), mpirun_args=tuple(args))
    command = LocalLauncher().command(spec)
    env, _ = launch_environment(dict(extra_env or {}))
    proc = subprocess.run(list(command.argv), capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout + proc.stderr


def locales(output):
    """Locale of each rank as the set of synthetic cores it may run on."""
    found = re.findall(r"Locale:\s+\[([^\]]+)\]", output)
    return [{i for i, c in enumerate(loc.split("/")) if c == "B"} for loc in found]


@pytest.mark.parametrize("choice, expected", [
    ("block", [{0}, {1}]),          # rank 0 core 0, rank 1 core 1: both on NUMA node 0
    ("cyclic", [{0, 1}, {2, 3}]),   # rank 0 on NUMA node 0, rank 1 on NUMA node 1
])
def test_placement_on_two_numa_nodes(mpirun, choice, expected):
    args = [*mapping_args(choice), "--bind-to", "none", "--display-devel-map"]
    output = run(args, {"HWLOC_SYNTHETIC": "package:1 numa:2 core:2 pu:1"})
    assert locales(output) == expected, output


@pytest.mark.parametrize("choice", ["block", "cyclic"])
def test_each_rank_bound_to_its_own_core_here(mpirun, choice):
    output = run([*mapping_args(choice), "--report-bindings"])
    bound = re.findall(r"MCW rank (\d) bound to .*core (\d)", output)
    assert sorted(bound) == [("0", "0"), ("1", "1")], output


def test_default_mapping_adds_no_arguments():
    assert mapping_args("default") == ()
