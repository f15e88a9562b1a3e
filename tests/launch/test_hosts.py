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


def test_host_list_launch_uses_the_first_nodes_with_ppn_each():
    launcher = HostListLauncher("hostfile", ["n1", "n2", "n3"], (("oob_tcp_if_include", "ib0"),),
                                mpirun="/usr/bin/mpirun")
    command = launcher.command(LaunchSpec(nodes=2, ppn=4, program=("bench",)))
    argv = list(command.argv)
    assert argv[argv.index("-np") + 1] == "8"
    assert argv[argv.index("--host") + 1] == "n1:4,n2:4"
    assert command.hosts == ("n1", "n2")
    assert ["--mca", "oob_tcp_if_include", "ib0"] == argv[argv.index("oob_tcp_if_include") - 1:argv.index("oob_tcp_if_include") + 2]
