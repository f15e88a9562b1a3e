"""Node groups: disjoint slices of an allocation, handed out one per running trial; srun argv."""
import threading

import pytest

from autotune.errors import InputError, NoNodes
from autotune.launch import HostListLauncher, LaunchSpec, LocalLauncher, StaticPool
from autotune.launch._hostlist import srun_mapping_args

HOSTS = ["n1", "n2", "n3", "n4", "n5"]


def spec(**kw):
    base = dict(nodes=2, ppn=4, program=("python", "-m", "kernel"), env=(("UCX_TLS", "rc"),),
                mca=(("pml", "ucx"),), mpirun_args=("--map-by", "core", "--bind-to", "core"))
    base.update(kw)
    return LaunchSpec(**base)


def test_parallel_groups_are_disjoint_slices_in_order():
    pool = StaticPool(HostListLauncher("hostfile", HOSTS, mpirun="/usr/bin/mpirun"), nodes=2, parallel=2)
    first, second = pool.acquire(), pool.acquire()
    assert (first.hosts(), second.hosts()) == (("n1", "n2"), ("n3", "n4"))
    argv = second.command(spec()).argv
    assert argv[argv.index("--host") + 1] == "n3:4,n4:4"
    with pytest.raises(NoNodes):
        pool.acquire(timeout=0.05)  # both held
    pool.release(first)
    assert pool.acquire(timeout=0.05).hosts() == ("n1", "n2")


def test_parallel_needs_enough_hosts():
    with pytest.raises(InputError, match="--parallel 3 with --nodes 2 needs 6 hosts"):
        StaticPool(HostListLauncher("hostfile", HOSTS), nodes=2, parallel=3)
    with pytest.raises(InputError, match="the local launcher has 1"):
        StaticPool(LocalLauncher(), nodes=1, parallel=2)


def test_cancel_all_reaches_every_group():
    pool = StaticPool(HostListLauncher("hostfile", HOSTS), nodes=1, parallel=3)
    groups = [pool.acquire() for _ in range(3)]
    pool.cancel_all()
    assert all(isinstance(g.cancel, threading.Event) and g.cancel.is_set() for g in groups)


def test_srun_launch_puts_mca_in_the_environment_and_translates_mapping():
    launcher = HostListLauncher("slurm", HOSTS, site_mca=(("btl_tcp_if_include", "ib0"),),
                                method="srun", srun="/usr/bin/srun")
    command = launcher.on_hosts(("n2", "n3")).command(spec())
    assert command.argv[:9] == ("/usr/bin/srun", "--nodes=2", "--ntasks=8", "--ntasks-per-node=4",
                                "--nodelist=n2,n3", "--mpi=pmix", "--kill-on-bad-exit=1",
                                "--export=ALL", "--distribution=block:block")
    assert command.argv[9:] == ("--cpu-bind=cores", "python", "-m", "kernel")
    assert dict(command.env) == {"OMPI_MCA_btl_tcp_if_include": "ib0", "OMPI_MCA_pml": "ucx",
                                 "UCX_TLS": "rc"}
    assert command.hosts == ("n2", "n3")


def test_srun_refuses_what_it_cannot_express():
    assert srun_mapping_args(("--cpu-bind=cores", "--core-spec", "2")) == ["--cpu-bind=cores",
                                                                          "--core-spec=2"]
    with pytest.raises(InputError, match="--report-bindings has no srun equivalent"):
        srun_mapping_args(("--report-bindings",))
    with pytest.raises(InputError, match="--map-by ppr:2:socket has no srun equivalent"):
        srun_mapping_args(("--map-by", "ppr:2:socket"))


@pytest.mark.parametrize("args, message", [
    (["--parallel", "2"], "--parallel 2 with --nodes 1 needs 2 hosts; the local launcher has 1"),
    (["--launch-with", "srun"], "--launch-with srun needs the slurm launcher (this is local)"),
    (["--launcher", "ray", "--ray-resource", "bad name"], "--ray-resource 'bad name': not a resource name"),
    (["--launcher", "local", "--ray-address", "h:1"], "--ray-address is for --launcher ray, not local"),
])
def test_cli_refuses_impossible_placements(autotune_cli, args, message):
    proc = autotune_cli("start", "--collective", "allreduce", "--ppn", "1", "--trials", "1",
                        "--foreground", *args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr


@pytest.mark.parametrize("address, code, message", [
    ("127.0.0.1:1", 1, "no Ray cluster answers at 127.0.0.1:1"),
    ("ray://head:10001", 2, "not a client URL"),
    ("nonsense", 2, "expected HOST:PORT"),
])
def test_cli_says_when_there_is_no_ray_cluster(autotune_cli, address, code, message):
    proc = autotune_cli("start", "--collective", "allreduce", "--ppn", "1", "--trials", "1",
                        "--foreground", "--ray-address", address, timeout=60)
    assert proc.returncode == code, proc.stderr
    assert "launcher" not in proc.stderr and message in proc.stderr
