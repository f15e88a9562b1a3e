"""The launcher registry: what each backend needs on PATH, what it builds, and the checks on the
site options (the auto choice itself is in tests/test_session.py)."""
from types import SimpleNamespace

import pytest

from autotune.errors import EnvironmentProblem, InputError
from autotune.launch import (BACKENDS, HostListLauncher, LocalLauncher, StaticPool,
                             check_launch_tool, make_launcher, make_pool, pick_launcher,
                             ranks_per_node)

OPEN_MPI = SimpleNamespace(mpi_family="openmpi")
MPICH = SimpleNamespace(mpi_family="mpich")


def options(**kw):
    """Any object with the options' attributes will do (session.StartOptions in real runs)."""
    base = dict(launcher="auto", nodes=1, ppn=None, parallel=1, hostfile=None, launcher_mca=(),
                launch_with="mpirun", ray_address=None, ray_resource="mpi_node", ray_head_grace=30.0)
    base.update(kw)
    return SimpleNamespace(**base)


@pytest.fixture
def no_allocation(monkeypatch):
    for name in ("SLURM_JOB_NODELIST", "RAY_ADDRESS"):
        monkeypatch.delenv(name, raising=False)


def test_registry_names():
    assert sorted(BACKENDS) == ["hostfile", "local", "ray", "slurm"]


@pytest.mark.parametrize("choice, kw, caps, tool", [
    ("local", {}, OPEN_MPI, "mpirun"),
    ("local", {}, MPICH, "mpiexec"),
    ("hostfile", {}, OPEN_MPI, "mpirun"),
    ("hostfile", {}, MPICH, "mpiexec"),  # MPICH's own, not Open MPI's mpirun
    ("slurm", {}, OPEN_MPI, "srun"),
    ("slurm", {"launch_with": "mpirun"}, OPEN_MPI, "mpirun"),
    ("slurm", {"launch_with": "mpirun"}, MPICH, "mpiexec"),
])
def test_the_launch_tool_is_refused_up_front(monkeypatch, tmp_path, choice, kw, caps, tool):
    monkeypatch.setenv("PATH", str(tmp_path))
    kw = {"launch_with": "srun", **kw} if choice == "slurm" else kw
    with pytest.raises(EnvironmentProblem, match=f"^{tool} not found on PATH: "):
        check_launch_tool(options(**kw), caps, choice)


def test_ray_needs_no_tool_here(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    check_launch_tool(options(), OPEN_MPI, "ray")


def test_local_launcher_follows_the_mpi_family(no_allocation):
    launcher, note = make_launcher(options(), MPICH, "local", "no allocation found")
    assert isinstance(launcher, LocalLauncher) and launcher.family == "mpich"
    assert note.startswith("launcher: mpich (no allocation found; hosts ")
    launcher, note = make_launcher(options(), OPEN_MPI, "local", "why")
    assert launcher.family == "openmpi" and note.startswith("launcher: local (why; hosts ")


def test_host_list_launchers(monkeypatch, tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("n1\nn2\nn3\nn4\nn5\n")
    launcher, note = make_launcher(options(hostfile=str(hostfile)), OPEN_MPI, "hostfile", "--hostfile given")
    assert isinstance(launcher, HostListLauncher) and launcher.name == "hostfile"
    assert note == "launcher: hostfile (--hostfile given; hosts n1, n2, n3, n4, ... (5 hosts))"
    monkeypatch.setenv("SLURM_JOB_NODELIST", "c[1-2]")
    monkeypatch.setenv("PATH", str(tmp_path))  # no scontrol: our own expansion
    launcher, note = make_launcher(options(launch_with="srun"), OPEN_MPI, "slurm", "SLURM_JOB_NODELIST is set")
    assert launcher.hosts() == ("c1", "c2") and launcher.method == "srun"
    assert note == "launcher: slurm (SLURM_JOB_NODELIST is set; hosts c1, c2, srun)"
    pool, _ = make_pool(options(nodes=1, parallel=2, launch_with="srun"), OPEN_MPI, "slurm", "x")
    assert isinstance(pool, StaticPool) and pool.hosts() == ("c1", "c2")


@pytest.mark.parametrize("choice, kw, message", [
    ("hostfile", {}, "--launcher hostfile needs --hostfile FILE"),
    ("slurm", {}, "--launcher slurm outside a Slurm allocation"),
])
def test_host_lists_must_exist(no_allocation, choice, kw, message):
    with pytest.raises(InputError, match=message):
        make_launcher(options(**kw), OPEN_MPI, choice, "--launcher")


@pytest.mark.parametrize("choice, kw, message", [
    ("local", {"launcher_mca": (("plm_rsh_agent", "ssh;id"),)}, "invalid name or value"),
    ("local", {"launcher_mca": (("Bad", "x"),)}, "invalid name or value"),
    ("local", {"launch_with": "srun"}, r"--launch-with srun needs the slurm launcher \(this is local\)"),
    ("ray", {"launch_with": "srun"}, r"needs the slurm launcher \(this is ray\)"),
    ("ray", {"ray_resource": "bad name"}, "--ray-resource 'bad name': not a resource name"),
])
def test_site_options_are_checked_before_building(no_allocation, choice, kw, message):
    with pytest.raises(InputError, match=message):
        make_pool(options(**kw), OPEN_MPI, choice, "--launcher")


def test_unknown_launcher_name():
    with pytest.raises(InputError, match="unknown launcher 'pbs'"):
        pick_launcher(options(launcher="pbs"))


@pytest.mark.parametrize("kw, env, needs_ppn", [
    ({}, {}, False),
    ({}, {"SLURM_JOB_NODELIST": "n1"}, False),  # this machine is the job's first node
    ({}, {"RAY_ADDRESS": "h:1"}, True),
    ({"launcher": "hostfile"}, {}, True),
])
def test_ppn_defaults_to_the_cores_here_only_where_this_is_a_node(monkeypatch, no_allocation, kw,
                                                                    env, needs_ppn):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if needs_ppn:
        with pytest.raises(InputError, match="--ppn is required"):
            ranks_per_node(options(**kw))
    else:
        assert ranks_per_node(options(**kw)) >= 1
    assert ranks_per_node(options(ppn=7, **kw)) == 7
