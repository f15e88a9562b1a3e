from pathlib import Path

import pytest

from autotune.errors import InputError
from autotune.probe import Capabilities, NumaLayout
from autotune.space import TrialContext, load_space, resolve
from autotune.warmstart import load_warm_start, select, to_params

CAPS = Capabilities(mpi_family="openmpi", mpi_version="4.1.4",
                    components={"coll": ["tuned", "hcoll"], "pml": ["ucx"]},
                    enumerators={"coll_tuned_allreduce_algorithm": [0, 1, 2]},
                    ucx_transports={"self": ["memory0"], "rc_mlx5": ["mlx5_0:1"], "ud_verbs": ["mlx5_0:1"]},
                    ucx_features=["split-thresholds"], numa=NumaLayout(2, 4, 72))


def test_shipped_file_has_every_published_winner():
    configs = load_warm_start("seed000-winners")
    assert len(configs) == 48 * 3  # 48 cases x (no component, ucc, hcoll)
    rows = Path(__file__).resolve().parents[2] / "shared/fixtures/seed000_best_configs.csv"
    if rows.exists():
        assert len(rows.read_text().strip().splitlines()) - 1 == 48


def test_select_exact_then_nearest_ppn():
    configs = load_warm_start("seed000-winners")
    exact = select(configs, "allreduce", 8, 36)
    assert len(exact) == 3 and all(c.ppn == 36 for c in exact)
    nearest = select(configs, "allreduce", 8, 30)
    assert {c.ppn for c in nearest} == {32}
    assert select(configs, "allreduce", 3, 36) == []


def test_winner_maps_onto_the_resolved_space():
    ctx = TrialContext("alltoall", 8)
    resolved = resolve(load_space("openmpi-ucx+openmpi-tuned"), CAPS, ctx)
    config = next(c for c in select(load_warm_start("seed000-winners"), "alltoall", 8, 36)
                  if "hcoll" in c.note)
    warm = to_params(config, resolved.space, ctx, resolved.context_values)
    assert warm.params["UCX_TLS"] == config.params["UCX_TLS"]
    assert warm.params["UCX_RNDV_THRESH_INTER"] == "128kb"
    assert warm.params["UCX_ZCOPY_THRESH"] == "128kb"
    assert warm.params["coll_hcoll_enable"] is True
    assert warm.params["NPS"] == 2  # this allocation's, whatever the winner ran on
    assert "coll_ucc_enable (not searchable here)" in warm.dropped  # no ucc component
    env = dict(resolved.space.settings(warm.params, ctx).env)
    assert env["UCX_RNDV_THRESH"].startswith("intra:") and env["UCX_RNDV_THRESH"].endswith(",inter:128kb")


def test_bad_warm_start_files(tmp_path):
    with pytest.raises(InputError, match="not found"):
        load_warm_start("nope")
    path = tmp_path / "w.yaml"
    path.write_text("configs:\n  - params: {UCX_TLS: all}\n")
    with pytest.raises(InputError, match="match: needs"):
        load_warm_start(str(path))


def test_sampler_pins_allocation_context_whatever_the_history():
    """Trials ran on NPS=1 nodes; on an NPS=2 allocation the sampler proposes NPS=2 only."""
    import optuna

    from autotune.strategy import TpeStrategy

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    ctx = TrialContext("allreduce", 1)
    space = resolve(load_space("openmpi-ucx+openmpi-tuned"), CAPS, ctx).space
    study = optuna.create_study(sampler=TpeStrategy(0).sampler())
    for _ in range(12):
        trial = study.ask({"NPS": optuna.distributions.CategoricalDistribution([1, 2, 4])})
        study.tell(trial, 0.0) if trial.params["NPS"] == 1 else study.tell(trial, 1.0)
    study.sampler = TpeStrategy(1).sampler({"NPS": 2})
    for _ in range(5):
        trial = study.ask()
        assert space.suggest(trial, ctx)["NPS"] == 2
        study.tell(trial, 0.5)
