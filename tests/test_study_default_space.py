"""A real study over openmpi-ucx+openmpi-tuned on this machine: what cannot work here is removed
and reported before anything runs, UCX knobs are proven live, NPS is read and pinned."""
import optuna
import pytest

pytestmark = pytest.mark.mpi


def test_real_study_over_the_full_open_mpi_space(autotune_cli, tmp_path):
    proc = autotune_cli("start", "--collective", "allreduce", "--ppn", "2", "--trials", "3",
                        "--sizes", "8:4k", "--repetitions", "3", "--stages", "1",
                        "--time-per-size", "0.005", "--seed", "1", "--warm-start", "seed000-winners",
                        "--foreground", check=True)
    err = proc.stderr
    assert "space openmpi-ucx+openmpi-tuned" in err
    assert "UCX_TLS=self,sm,rc: no UCX rc transport" in err
    assert "UCX_TLS=self,sm,dc: no UCX dc transport" in err
    assert "coll_hcoll_enable: Open MPI 4.1.4 has no coll/hcoll component" in err
    assert "coll_ucc_enable: Open MPI 4.1.4 has no coll/ucc component" in err
    assert "UCX knobs are live" in err
    assert "allocation: NPS=1" in err
    assert "warm start: queued: seeds/000 winner, 1 node(s) x 8 ppn" in err

    storage = f"sqlite:///{tmp_path / 'home' / 'autotune.db'}"
    study = optuna.load_study(study_name="allreduce-1n2p-openmpi-ucx+openmpi-tuned", storage=storage)
    trials = study.trials
    assert len(trials) == 3
    assert trials[0].user_attrs["is_default"] and trials[0].params["NPS"] == 1
    assert trials[1].user_attrs.get("warm_start", "").startswith("seeds/000 winner")
    for trial in trials:
        assert trial.params["NPS"] == 1 and trial.user_attrs["context"] == {"NPS": 1}
        assert trial.params["UCX_TLS"] not in ("self,sm,rc", "self,sm,ud", "self,sm,dc")
        assert "coll_hcoll_enable" not in trial.params
        argv = trial.user_attrs["launches"][0]["argv"]
        assert argv[argv.index("pml") - 1] == "--mca" and "pml_ucx_devices" in argv
    removed = study.user_attrs["autotune.resolution"]["removed"]
    assert any("coll/hcoll" in r for r in removed)
