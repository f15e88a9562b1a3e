"""A real study over openmpi-ucx+openmpi-tuned on this machine: the reference is the untuned
stack (no setting at all), the pml is a knob, UCX knobs run only under pml ucx and are proven
live there; what cannot work here is removed and reported before anything runs; NPS is pinned."""
import optuna
import pytest

pytestmark = pytest.mark.mpi

TUNED_FLAGS = ("--mca", "-x")  # every tuned setting reaches mpirun as one of these


def test_real_study_over_the_full_open_mpi_space(autotune_cli, tmp_path):
    proc = autotune_cli("start", "--collective", "allreduce", "--ppn", "2", "--trials", "4",
                        "--sizes", "8:4k", "--repetitions", "3", "--stages", "1",
                        "--time-per-size", "0.005", "--seed", "1", "--warm-start", "seed000-winners",
                        "--confirm", "0", "--foreground", check=True)
    err = proc.stderr
    assert "space openmpi-ucx+openmpi-tuned" in err
    assert "UCX_TLS=self,sm,rc: no UCX rc transport" in err
    assert "coll_hcoll_enable: Open MPI 4.1.4 has no coll/hcoll component" in err
    assert "pml: the untuned stack runs ob1 here" in err
    assert "UCX knobs are live" in err
    assert "allocation: NPS=1" in err
    assert "warm start: queued: seeds/000 winner, 1 node(s) x 8 ppn" in err

    storage = f"sqlite:///{tmp_path / 'home' / 'autotune.db'}"
    study = optuna.load_study(study_name="allreduce-1n2p-openmpi-ucx+openmpi-tuned", storage=storage)
    trials = study.trials
    assert len(trials) == 4

    # trial 0: the stack as the user runs it, not a forced pml ucx
    default = trials[0]
    assert default.user_attrs["is_default"] and default.params["pml"] == "unset"
    assert default.user_attrs["settings"] == {"env": {}, "mca": {}, "mpirun_args": []}
    for launch in default.user_attrs["launches"]:
        assert not set(TUNED_FLAGS) & set(launch["argv"]), launch["argv"]

    # the seeds' winners ran pml ucx: the warm start chooses it, with its companions
    warm = trials[1]
    assert warm.user_attrs.get("warm_start", "").startswith("seeds/000 winner")
    assert warm.params["pml"] == "ucx" and "UCX_RNDV_THRESH" in warm.params
    argv = warm.user_attrs["launches"][0]["argv"]
    for name, value in (("pml", "ucx"), ("pml_ucx_devices", "any"), ("pml_ucx_tls", "any")):
        assert argv[argv.index(name) - 1:argv.index(name) + 2] == ["--mca", name, value]

    for trial in trials:
        assert trial.params["NPS"] == 1 and trial.user_attrs["context"] == {"NPS": 1}
        assert "coll_hcoll_enable" not in trial.params
        ucx = [name for name in trial.params if name.startswith("UCX_")]
        assert bool(ucx) == (trial.params["pml"] == "ucx"), trial.params
        assert trial.params.get("UCX_TLS") not in ("self,sm,rc", "self,sm,ud", "self,sm,dc")
    removed = study.user_attrs["autotune.resolution"]["removed"]
    assert any("coll/hcoll" in r for r in removed)
