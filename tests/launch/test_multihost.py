"""Real studies across two "hosts" (network namespaces on this machine) through the hostfile and
the Slurm launchers: the recorded argv names both hosts, and the benchmark ran on both."""
import shutil
from pathlib import Path

import optuna
import pytest

from tests import multihost

pytestmark = [pytest.mark.mpi, pytest.mark.multihost]
STUDY = "allreduce-2n1p-openmpi-ucx+openmpi-tuned"


@pytest.fixture(scope="module")
def testbed(tmp_path_factory):
    try:
        bed = multihost.create(tmp_path_factory.mktemp("bed"))
    except RuntimeError as exc:
        pytest.skip(f"multi-host test bed unavailable here: {exc}")
    yield bed
    multihost.destroy()


def run_study(autotune_cli, testbed, *args, extra_env=None):
    return autotune_cli("start", "--collective", "allreduce", "--nodes", "2", "--ppn", "1",
                        "--trials", "2", "--sizes", "8:64", "--repetitions", "3", "--stages", "1",
                        "--time-per-size", "0.003", "--confirm", "0", "--no-check-live", "--seed", "1",
                        *testbed.launcher_args(), *args, "--foreground", check=True,
                        extra_env=extra_env)


def check_ran_on_both(tmp_path, testbed):
    study = optuna.load_study(study_name=STUDY, storage=f"sqlite:///{tmp_path / 'home' / 'autotune.db'}")
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert done
    for trial in done:
        launch = trial.user_attrs["launches"][0]
        argv = launch["argv"]
        assert argv[argv.index("--host") + 1] == f"{testbed.hosts[0]}:1,{testbed.hosts[1]}:1"
        assert len(set(launch["hosts"])) == 2  # two host names, reported by the ranks themselves
        if trial.params["pml"] != "ucx":  # UCX knobs are asked for only under pml ucx
            assert not any(name.startswith("UCX_") for name in trial.params)
            continue
        # on-node-only transport sets cannot connect two hosts: they leave multi-node studies
        assert trial.params["UCX_TLS"] not in ("sm", "self,sm", "self,posix,cma", "self,sysv,cma")
        # one threshold, or the intra/inter pair where UCX accepts it (1.13 does not), never both
        assert ("UCX_RNDV_THRESH" in trial.params) != ("UCX_RNDV_THRESH_INTER" in trial.params)
    removed = study.user_attrs["autotune.resolution"]["removed"]
    for tls in ("sm", "self,sm", "self,posix,cma", "self,sysv,cma"):
        assert f"UCX_TLS={tls}: single-node only; this study runs on 2 node(s)" in removed
    assert study.user_attrs["autotune.fingerprint"]["hosts"] == testbed.hosts


def test_study_across_two_hosts_with_a_hostfile(testbed, autotune_cli, tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("".join(f"{h} slots=1\n" for h in testbed.hosts))
    proc = run_study(autotune_cli, testbed, "--hostfile", str(hostfile))
    assert "launcher: hostfile (--hostfile given" in proc.stderr
    # MPI, UCX and cores come from the first node (its own host name), not from this machine
    assert f"nodes probed on {testbed.tag}h1: Open MPI" in proc.stderr
    check_ran_on_both(tmp_path, testbed)


def test_study_across_two_hosts_in_a_slurm_allocation(testbed, autotune_cli, tmp_path):
    first, second = testbed.hosts
    nodelist = f"{first[:-1]}[{first[-1]}-{second[-1]}]"  # compressed, as Slurm writes it
    proc = run_study(autotune_cli, testbed, extra_env={"SLURM_JOB_NODELIST": nodelist})
    assert "launcher: slurm (SLURM_JOB_NODELIST is set" in proc.stderr
    assert f"nodes probed on {testbed.tag}h1: Open MPI" in proc.stderr
    check_ran_on_both(tmp_path, testbed)


def test_a_node_that_cannot_be_reached_is_a_clear_error(testbed, autotune_cli, tmp_path):
    hostfile = tmp_path / "hosts"
    dead = testbed.hosts[0].rsplit(".", 1)[0] + ".99"  # on the bed's subnet, but no host there
    hostfile.write_text(f"{dead} slots=1\n{testbed.hosts[0]} slots=1\n")
    proc = autotune_cli("start", "--collective", "allreduce", "--nodes", "2", "--ppn", "1",
                        "--trials", "1", "--hostfile", str(hostfile), *testbed.launcher_args(),
                        "--foreground", timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert f"cannot probe node {dead}" in proc.stderr and "Traceback" not in proc.stderr


def test_parallel_trials_on_the_two_hosts(testbed, autotune_cli, tmp_path):
    """--parallel 2 with --nodes 1: two trials at once, each on its own host."""
    hostfile = tmp_path / "hosts"
    hostfile.write_text("".join(f"{h} slots=1\n" for h in testbed.hosts))
    autotune_cli("start", "--collective", "allreduce", "--nodes", "1", "--ppn", "1", "--trials", "4",
                 "--sizes", "8:64", "--repetitions", "3", "--stages", "1", "--time-per-size", "0.02",
                 "--confirm", "0", "--no-check-live", "--seed", "1", "--hostfile", str(hostfile),
                 "--parallel", "2", *testbed.launcher_args(), "--foreground", check=True)
    study = optuna.load_study(study_name="allreduce-1n1p-openmpi-ucx+openmpi-tuned",
                              storage=f"sqlite:///{tmp_path / 'home' / 'autotune.db'}")
    trials = [t for t in study.trials if t.state != optuna.trial.TrialState.WAITING]
    assert {tuple(t.user_attrs["nodes"]) for t in trials} == {(h,) for h in testbed.hosts}
    overlaps = [(a, b) for i, a in enumerate(trials) for b in trials[i + 1:]
                if a.datetime_start < b.datetime_complete and b.datetime_start < a.datetime_complete]
    assert overlaps
    for a, b in overlaps:
        assert a.user_attrs["nodes"] != b.user_attrs["nodes"]
        # every launch of a trial, its default launches included, stayed on the trial's host
        for t in (a, b):
            assert all(launch["argv"][launch["argv"].index("--host") + 1] == f"{t.user_attrs['nodes'][0]}:1"
                       for launch in t.user_attrs["launches"])


def test_campaign_across_two_hosts_leaves_four_nodes_waiting(testbed, autotune_cli, tmp_path):
    """A campaign launches each case on its own node count from one hostfile; the 4-node case
    waits for a larger allocation, said plainly, and the status says so too."""
    import json

    hostfile = tmp_path / "hosts"
    hostfile.write_text("".join(f"{h} slots=1\n" for h in testbed.hosts))
    proc = autotune_cli("campaign", "--collectives", "allreduce", "--nodes", "1,2,4", "--ppn", "1",
                        "--trials", "2", "--sizes", "8:64", "--repetitions", "3", "--stages", "1",
                        "--time-per-size", "0.003", "--confirm", "0", "--no-check-live",
                        "--no-verify", "--no-per-size", "--seed", "1", "--name", "bed",
                        "--hostfile", str(hostfile), *testbed.launcher_args(), "--foreground",
                        check=True, timeout=600)
    assert "case allreduce-4n1p waits: needs 4 nodes, this allocation has 2" in proc.stderr
    status = json.loads(autotune_cli("campaign", "status", "--format", "json", check=True).stdout)
    assert {c["case"]: c["state"] for c in status["cases"]} == {
        "allreduce-1n1p": "done", "allreduce-2n1p": "done", "allreduce-4n1p": "waiting"}
    store = f"sqlite:///{tmp_path / 'home' / 'autotune.db'}"
    for nodes in (1, 2):
        study = optuna.load_study(study_name=f"bed.allreduce-{nodes}n1p", storage=store)
        done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
        assert done
        for trial in done:
            launch = trial.user_attrs["launches"][0]
            assert set(launch["hosts"]) == {f"{testbed.tag}h{i}" for i in range(1, nodes + 1)}


@pytest.mark.parametrize("benchmark", ["mpi4py", "imb"])
def test_mpich_across_two_hosts_with_hydra(testbed, autotune_cli, tmp_path, benchmark):
    """MPICH's mpiexec over the same two hosts, told how to reach them the way a site tells Hydra
    (HYDRA_LAUNCHER_EXEC, HYDRA_IFACE), from a hostfile in Hydra's host:N form; the node probe
    finds MPICH there and every launch names both hosts."""
    from tests.launch.test_mpich import IMB_MPICH

    if not shutil.which("mpiexec.mpich"):
        pytest.fail("MPICH is not installed: bash scripts/install.sh --test installs it")
    hostfile = tmp_path / "hosts"
    hostfile.write_text("".join(f"{h}:1\n" for h in testbed.hosts))
    Path(testbed.calls).unlink(missing_ok=True)
    extra = ["--benchmark", "imb", "--imb-dir", str(IMB_MPICH)] if benchmark == "imb" else []
    proc = autotune_cli("start", "--collective", "allreduce", "--nodes", "2", "--ppn", "1",
                        "--space", "mpich", "--trials", "3", "--sizes", "8:4k", "--repetitions",
                        "3", "--stages", "1", "--time-per-size", "0.003", "--confirm", "0",
                        "--no-verify", "--no-per-size", "--seed", "1", "--hostfile",
                        str(hostfile), *extra, "--foreground", check=True,
                        extra_env=testbed.hydra_env())
    assert f"nodes probed on {testbed.tag}h1: MPICH" in proc.stderr
    study = optuna.load_study(study_name="allreduce-2n1p-mpich",
                              storage=f"sqlite:///{tmp_path / 'home' / 'autotune.db'}")
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert done
    for trial in done:
        for launch in trial.user_attrs["launches"]:
            argv = launch["argv"]
            assert argv[0].endswith("mpiexec.mpich") and "--mca" not in argv
            assert argv[argv.index("-hosts") + 1] == ",".join(testbed.hosts)
            assert argv[argv.index("-ppn") + 1] == "1"
            if benchmark == "mpi4py":  # the ranks say where they ran
                assert set(launch["hosts"]) == {f"{testbed.tag}h1", f"{testbed.tag}h2"}
    reached = Path(testbed.calls).read_text().split()
    assert set(reached) == set(testbed.hosts)  # Hydra started a proxy on each host
    assert any(name.startswith("MPIR_CVAR_") for t in done for name in t.params)
