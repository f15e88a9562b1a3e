"""The controller and a strategy on canned benchmark records: no mpirun, no MPI at all.

The executor is injected into the measurer; it reads the configuration from the launch it is
handed (data, not argv text) and answers with the kernel's own output format, so the real parser,
scoring, pruning and confirmation run on a landscape whose optimum is known.
"""

from __future__ import annotations

import json
import math
import random
import time

import optuna
import pytest

from autotune.benchmarks import Mpi4pyBenchmark
from autotune.benchmarks._mpi4py import PREFIX
from autotune.controller import Controller
from autotune.export import EXPORTERS, best_config
from autotune.launch import Command, LocalLauncher, RunResult, StaticPool
from autotune.measure import MeasurementPlan, Measurer
from autotune.objective import uniform_weights
from autotune.probe import Capabilities, HostInfo
from autotune.space import TrialContext, resolve
from autotune.space._load import parse_space
from autotune.storage import StudyConfig
from autotune.strategy import TpeStrategy

SPACE = {
    "name": "canned", "stack": "openmpi", "description": "pml, UCX transports, an algorithm",
    "parameters": [
        {"name": "pml", "apply": "mca", "choices": ["unset", "ob1", "ucx"], "default": "unset",
         "unset_means": "probe",
         "choice_implies": {"ucx": {"pml_ucx_devices": "any", "pml_ucx_tls": "any"}}},
        {"name": "UCX_TLS", "apply": "env", "when": {"pml": ["ucx"]}, "default": "all",
         "choices": ["all", "self,sm", "self,tcp"]},
        {"name": "coll_tuned_allreduce_algorithm", "apply": "mca", "default": 0,
         "choices": [0, 1, 2, 3, 4], "implies": {"coll_tuned_use_dynamic_rules": 1}},
    ],
}
SIZES = (8, 64, 512, 4096, 32768)
# the planted optimum: pml ucx over shared memory with recursive doubling, 1.6x the default
BEST = {"pml": "ucx", "UCX_TLS": "self,sm", "coll_tuned_allreduce_algorithm": 3}


def factor(params: dict) -> float:
    """Time of a configuration relative to the untuned stack."""
    f = 1.0
    if params.get("pml") == "ucx":
        f *= {"all": 0.95, "self,sm": 0.8, "self,tcp": 3.0}[params.get("UCX_TLS", "all")]
    return f * {0: 1.0, 1: 1.4, 2: 1.1, 3: 0.78, 4: 1.2}[params.get("coll_tuned_allreduce_algorithm", 0)]


class CannedExecutor:
    """Serves a launch from the landscape, with 3% multiplicative noise; records what it saw."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.seen: list[Command] = []

    def __call__(self, command: Command, timeout: float) -> RunResult:
        self.seen.append(command)
        spec = command.spec
        params = dict(spec.params)
        lines = [PREFIX + json.dumps({"kind": "start", "time": time.time(), "ranks": spec.ranks,
                                      "hosts": ["canned"], "mpi_library": "canned"})]
        for size in spec.sizes:
            t = (2.0 + size / 1000.0) * factor(params) * math.exp(self.rng.gauss(0, 0.03))
            lines.append(PREFIX + json.dumps({"kind": "size", "size": size, "iters": 100,
                                              "t_max_us": t, "t_min_us": t * 0.9,
                                              "t_avg_us": t * 0.95}))
        lines.append(PREFIX + json.dumps({"kind": "done", "sizes": len(spec.sizes)}))
        return RunResult(argv=command.argv, returncode=0, stdout="\n".join(lines) + "\n",
                         stderr="", seconds=0.01, started=time.time())


@pytest.fixture
def no_mpi(monkeypatch, tmp_path):
    """Nothing MPI on PATH: the run must not need it."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))


# nodes without a Mellanox device: Open MPI runs ob1 on its own, so pml=ob1 is no separate choice
CAPS = Capabilities(mpi_family="openmpi", mpi_version="4.1.4", components={"pml": ["ob1", "ucx"]},
                    mca_defaults={"pml_ucx_devices": "mlx*"},
                    ucx_transports={"self": ["memory"], "sysv": ["memory"]})


def run_study(seed: int, trials: int, tmp_path, stages: int = 1):
    resolved = resolve(parse_space(SPACE, "canned"), CAPS, TrialContext("allreduce", 1))
    assert resolved.in_force == {"pml": "ob1"}
    space = resolved.space
    weights = uniform_weights(SIZES)
    config = StudyConfig(collective="allreduce", nodes=1, ppn=2, space=space.name, sizes=SIZES,
                         weights=weights, repetitions=3, stages=stages, time_per_size=0.01)
    plan = MeasurementPlan(collective="allreduce", nodes=1, ppn=2, sizes=SIZES, repetitions=3,
                           stages=stages, time_per_size=0.01)
    executor = CannedExecutor(seed)
    measurer = Measurer(plan, None, Mpi4pyBenchmark(), executor=executor)
    strategy = TpeStrategy(seed, prune=True, prune_after=2, p_threshold=0.1)
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'canned.db'}",
                                sampler=strategy.sampler(), pruner=strategy.pruner())
    host = HostInfo(host="canned", cpu_model="none", cores=2, mpi="none", ucx="", python="3")
    controller = Controller(study, space, config, measurer, host,
                            pool=StaticPool(LocalLauncher(), 1, 1), strategy=strategy, seed=seed,
                            confirm_top=2, confirm_rounds=4)
    summary = controller.run(trials)
    return study, summary, executor, space


def test_study_on_canned_records_needs_no_mpirun(no_mpi, tmp_path):
    study, summary, executor, space = run_study(seed=3, trials=25, tmp_path=tmp_path)
    trials = study.get_trials(deepcopy=False)
    # 20 configurations (5 algorithms under the untuned pml, 3 transports x 5 under pml ucx): each
    # is measured once; a re-proposed one is replaced by an unmeasured one; then the run is done
    measured = [t for t in trials if not t.user_attrs.get("skipped")]
    assert len(summary.outcomes) == len(measured) == 20
    assert len({tuple(sorted(t.params.items())) for t in measured}) == 20
    assert summary.stopped_because.startswith("done:")

    # trial 0 is the untuned stack: no setting at all
    first = trials[0]
    assert first.user_attrs["is_default"]
    assert first.user_attrs["settings"] == {"env": {}, "mca": {}, "mpirun_args": []}
    argv = executor.seen[0].argv
    assert not any(a.startswith(("pml", "UCX_", "coll_")) for a in argv)

    # the configuration travelled as data; default launches say so
    defaults = [c for c in executor.seen if c.spec.is_default]
    assert defaults and all(dict(c.spec.params) == first.params for c in defaults)
    for command in executor.seen:
        params = dict(command.spec.params)
        assert ("UCX_TLS" in params) == (params.get("pml") == "ucx")

    # UCX knobs only where pml ucx ran, with its companions in the settings
    for trial in trials:
        if trial.state != optuna.trial.TrialState.COMPLETE:
            continue
        mca = trial.user_attrs["settings"]["mca"]
        if trial.params.get("pml") == "ucx":
            assert mca["pml"] == "ucx" and mca["pml_ucx_devices"] == "any"
        else:
            assert "UCX_TLS" not in trial.params and "pml_ucx_devices" not in mca

    # the planted optimum is found and confirmed
    confirmation = summary.confirmation
    assert confirmation is not None and confirmation.best_trial is not None
    best = study.trials[confirmation.best_trial]
    assert best.params == BEST, best.params
    chosen = next(c for c in confirmation.candidates if c.trial == best.number)
    assert 1.4 < chosen.speedup < 1.9
    # timed by the kernel: its claim's interval holds the kernel's uncertainty against IMB-MPI1
    assert confirmation.systematic == Mpi4pyBenchmark().disagreement("allreduce").systematic > 0

    # its export sets the pml and the companions pml ucx needs where no device matches
    exported = EXPORTERS["env"].write(best_config(study))
    for line in ("export OMPI_MCA_pml=ucx", "export OMPI_MCA_pml_ucx_devices=any",
                 "export OMPI_MCA_pml_ucx_tls=any", "export UCX_TLS=self,sm",
                 "export OMPI_MCA_coll_tuned_allreduce_algorithm=3",
                 "export OMPI_MCA_coll_tuned_use_dynamic_rules=1"):
        assert line in exported.splitlines(), exported
    assert "uncertainty against IMB-MPI1" in exported, exported


def test_losers_are_pruned_on_canned_records(no_mpi, tmp_path):
    # 2 stages x 3 launches: the signed-rank test can reach p < 0.1 after 5 launches
    study, summary, _, _ = run_study(seed=5, trials=20, tmp_path=tmp_path, stages=2)
    pruned = [t for t in study.get_trials(deepcopy=False)
              if t.state == optuna.trial.TrialState.PRUNED]
    # pml ucx over TCP is 3x slower: whenever it is proposed after the first trials, it is pruned
    slow = [t for t in study.get_trials(deepcopy=False) if t.number > 3 and t.value is not None
            and t.value > 0.2 and t.state == optuna.trial.TrialState.COMPLETE]
    assert pruned and not slow, [(t.number, t.params, t.value) for t in slow]
    assert all(o.launches < 6 for o in summary.outcomes if o.state == "PRUNED")


def test_the_search_runs_its_linear_algebra_on_one_thread(no_mpi, tmp_path, monkeypatch):
    """While a run measures, BLAS runs on one thread (a process-wide setting): the benchmark's
    ranks need the cores, and OpenBLAS's thread pool is not safe against a fork() from another
    trial's thread."""
    from threadpoolctl import threadpool_info

    seen: list[set[int]] = []
    serve = CannedExecutor.__call__

    def observed(self, command, timeout):
        blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
        seen.append({pool["num_threads"] for pool in blas})
        return serve(self, command, timeout)

    monkeypatch.setattr(CannedExecutor, "__call__", observed)
    run_study(seed=1, trials=3, tmp_path=tmp_path)
    assert seen and all(threads == {1} for threads in seen), seen
