"""Independent verification: the exported best against the untuned stack, measured with another
benchmark than the search used (IMB when the search used the kernel), on the same nodes.

Why: the search and its confirmation keep the luckiest of many noisy draws of one benchmark. A
claim that only that benchmark, or that luck, sees must not reach the export unchallenged (issue
12: a "1.342x (1.011x..1.726x)" claim measured 0.83x with IMB). What is measured is what the
export deploys: the best configuration's settings, or, where per-size rules were adopted, the
rules file `export --format ompi-rules` writes with the configuration's other settings. The
rounds are the endgame's engine (rounds.py): the default, then the best, size block by size
block as the study's plan does; per size the log-ratio of t_max, per round the weighted
score; intervals of the rounds' trimmed mean, as the confirmation's (stats.trimmed_interval),
unless the plain mean is not faster (`vouching_interval`).
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import optuna

from ..errors import AutotuneError, InputError
from ..measure import MeasurementPlan, Measurer
from ..space import LaunchSettings
from ..stats import Interval, mean_interval, trimmed_interval, with_systematic
from ..storage import (VERIFICATION_ATTR, StoredVerification, StudyConfig, TrialRecord,
                       VerifiedSize, load_baselines, stored_config, stored_confirmation,
                       stored_verification)
from .partner import BenchmarkChoice
from .rounds import Arm, RoundsEngine, per_size_ratios, round_scores
from .stage import rules_file_name

if TYPE_CHECKING:
    from ..baseline import Placement
    from ..events import Events
    from ..export import BestConfig

NOTHING_TO_VERIFY = "nothing to verify: the study recommends the untuned stack"
MIN_ROUNDS = 2  # one round gives no interval
ESTIMATE_MARGIN = 1.5  # the other benchmark's launches may take longer than the search's


class NothingToVerify(AutotuneError):
    """The exported best is the untuned stack: there is no claim to check."""

    exit_code = 0


class VerificationFailed(AutotuneError):
    """The check gave no figure (launches kept failing, too few rounds)."""


# ------------------------------------------------------------------ what is compared


def _settings(env: dict[str, str], mca: dict[str, str], args: tuple[str, ...]) -> LaunchSettings:
    return LaunchSettings(env=tuple(env.items()), mca=tuple(mca.items()), mpirun_args=tuple(args))


def default_arm(study: optuna.Study, best: BestConfig) -> Arm:
    """The untuned stack: the default trial's stored settings, else the study's reference as
    stored."""
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)):
        record = TrialRecord.from_trial(trial)
        if record.is_default:
            return Arm("the untuned stack", _settings(record.settings.env, record.settings.mca,
                                                      record.settings.mpirun_args),
                       dict(record.params), is_default=True)
    config = best.config
    if config is None or not config.reference:
        raise InputError(f"study {study.study_name!r} has no measured default configuration "
                         "to compare with")
    from ..storage import StoredSettings

    ref = StoredSettings.from_dict(config.reference, "study config: reference")
    return Arm("the untuned stack", _settings(ref.env, ref.mca, ref.mpirun_args), {},
               is_default=True)


def deployed_arm(study: optuna.Study, best: BestConfig, rules_dir: Path) -> tuple[Arm, str]:
    """The exported best as the export deploys it, and what that is in words ("": the
    configuration's settings). With adopted per-size rules that is the rules file `export
    --format ompi-rules` writes (put in `rules_dir`, which every node must read) together with
    the configuration's other settings, not the single configuration the rules were built on."""
    from ..export import deployment_with_rules
    from ..files import write_output_atomically

    path = (rules_dir / rules_file_name(study.study_name, "exported")).resolve()
    deployment = deployment_with_rules(best, str(path))
    if deployment is None:
        return Arm("the best", _settings(best.env, best.mca, best.mpirun_args),
                   dict(best.params)), ""
    text, mca = deployment
    rules_dir.mkdir(parents=True, exist_ok=True)
    write_output_atomically(path, text, "per-size rules file")
    assert best.rules is not None
    bands = len(best.rules.bands)
    return (Arm("the best", _settings(best.env, mca, best.mpirun_args), dict(best.params)),
            f"per-size rules ({bands} bands, {path.name}) with the configuration's other "
            "settings, as `autotune export --format ompi-rules` deploys them")


# ------------------------------------------------------------------ measuring


@dataclass
class Rounds:
    """What the rounds measured: per size the log-ratios best/default, per round the score."""

    per_size: dict[int, list[float]] = field(default_factory=dict)
    scores: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    argv: tuple[str, ...] = ()
    stopped: str = ""  # why fewer rounds than asked were measured
    wrong_result: str = ""  # the best returned a wrong result: never to be recommended
    best_failed: str = ""  # the best crashed, hung or gave unreadable output: not to deploy


def measure_rounds(measurer: Measurer, default: Arm, best: Arm, weights: dict[int, float],
                   rounds: int, rng: random.Random, *, deadline: float | None = None,
                   on_round: Callable[[int, int], None] | None = None) -> Rounds:
    """`rounds` interleaved rounds of the two arms (the endgame's engine and failure policy); a
    round counts only when every weighted size gave a pair; a stop request ends it all."""
    engine = RoundsEngine(measurer, rng)
    engine.run([default, best], rounds, deadline=deadline, on_round=on_round)
    _, scores = round_scores(best, default, weights)
    failures = [*engine.lost, *([f"{best.name}: {best.failed}"] if best.failed else [])]
    return Rounds(per_size=per_size_ratios(best, default, measurer.plan.sizes), scores=scores,
                  failures=failures, argv=best.argv, stopped=engine.stopped,
                  wrong_result=best.failed.removeprefix("wrong-result: ")
                  if best.failed.startswith("wrong-result") else "", best_failed=best.failed)


def agreement(speedup_interval: tuple[float, float],
              search_interval: tuple[float, float] | None,
              search_speedup: float | None = None) -> bool:
    """Whether the check leaves the recommendation standing. It does not when even its upper
    bound is below 1 (slower than the untuned stack), nor when it disagrees with the search
    beyond both intervals (its whole interval below the search's, or below the search's figure
    when that has no interval) without itself proving a gain. A check that proves a smaller gain
    than claimed keeps the configuration recommended (describe() says the gain is smaller)."""
    low, high = speedup_interval
    if high < 1.0:
        return False
    floor = search_interval[0] if search_interval is not None else search_speedup
    return not (floor is not None and high < floor and low <= 1.0)


def search_figure(study: optuna.Study, best: BestConfig
                  ) -> tuple[float | None, tuple[float, float] | None]:
    """The search's claim for the best: the confirmation's speedup and interval when it
    confirmed this trial, else the search's own (trial) speedup without an interval."""
    confirmation = stored_confirmation(study)
    chosen = confirmation.best if confirmation is not None else None
    if chosen is not None and chosen.trial == best.trial:
        return chosen.speedup, chosen.speedup_interval
    return (best.speedup or None), None


def vouching_interval(values: list[float]) -> Interval:
    """The interval the check reports: the trimmed mean's, as the confirmation judges, except
    where it reads faster and the plain mean does not. That is a slow tail of the configuration's
    own (a transport that stalls now and then), which trimming would cut: the plain mean's
    interval is reported then, so the check never vouches for a gain its rounds lack on average."""
    trimmed = trimmed_interval(values)
    if trimmed.mean < 0 <= statistics.fmean(values):
        return mean_interval(values)
    return trimmed


def summarize(measured: Rounds, *, benchmark: str, independent: bool, trial: int, rounds: int,
              search: tuple[float | None, tuple[float, float] | None],
              deployed: str = "", systematic: float = 0.0) -> StoredVerification:
    """The stored result: per-size and weighted speedups with intervals, and the agreement.
    `systematic`: the check's benchmark's uncertainty against IMB-MPI1 (the kernel's, when it
    checks an IMB search), carried by the weighted interval as a claim's is, so the kernel's
    known bias alone cannot make the check disagree."""
    base = StoredVerification(benchmark=benchmark, independent=independent, trial=trial,
                              rounds=rounds, rounds_measured=len(measured.scores),
                              round_scores=tuple(measured.scores), search_speedup=search[0],
                              search_interval=search[1], finished=time.time(),
                              argv=measured.argv, measured=deployed, systematic=systematic)
    if measured.wrong_result:  # whatever the speed, a wrong answer is never recommended
        return replace(base, failed=f"wrong-result: {measured.wrong_result}"[:500], agrees=False)
    if measured.best_failed:  # rounds before a crash or a hang do not vouch for the rest
        return replace(base, failed=f"the best failed: {measured.best_failed}"[:500],
                       agrees=False)
    if len(measured.scores) < MIN_ROUNDS:
        why = measured.stopped or "too few rounds"
        last = f"; last failure: {measured.failures[-1]}" if measured.failures else ""
        return replace(base, failed=f"{len(measured.scores)} of {rounds} rounds measured "
                                    f"({why}){last}"[:500])
    sizes = []
    for size, ratios in sorted(measured.per_size.items()):
        if len(ratios) < MIN_ROUNDS:
            continue
        speed, low, high = vouching_interval(ratios).speedup()
        sizes.append(VerifiedSize(size=size, speedup=speed, speedup_interval=(low, high)))
    speed, low, high = with_systematic(vouching_interval(measured.scores), systematic).speedup()
    return replace(base, speedup=speed, speedup_interval=(low, high), sizes=tuple(sizes),
                   agrees=agreement((low, high), search[1], search[0]))


def verify_on(study: optuna.Study, measurer: Measurer, choice: BenchmarkChoice, rounds: int,
              seed: int | None = None, *, deadline: float | None = None,
              on_round: Callable[[int, int], None] | None = None,
              rules_dir: Path | None = None) -> StoredVerification:
    """Check the study's exported best, as the export deploys it, against the untuned stack with
    `measurer` (bound to the nodes, running `choice.benchmark`), store the result in the study
    and return it. An adopted per-size rules file goes in `rules_dir` (default: the rules
    folder of AUTOTUNE_HOME, where the per-size stage puts its own)."""
    from ..export import best_config, check_exportable
    from ..files import autotune_home

    best = best_config(study)
    if best.is_default:
        raise NothingToVerify(NOTHING_TO_VERIFY)
    check_exportable(best)  # what is launched is exactly what export would write
    config = best.config or stored_config(study)
    if config is None:
        raise InputError(f"study {study.study_name!r} has no stored configuration")
    default = default_arm(study, best)
    candidate, deployed = deployed_arm(study, best, rules_dir or autotune_home() / "rules")
    measured = measure_rounds(measurer, default, candidate, config.weights, rounds,
                              random.Random(seed), deadline=deadline, on_round=on_round)
    result = summarize(measured, benchmark=choice.benchmark.describe(),
                       independent=choice.independent, trial=best.trial, rounds=rounds,
                       search=search_figure(study, best), deployed=deployed,
                       systematic=choice.benchmark.disagreement(config.collective).systematic)
    store(study, result)
    return result


def store(study: optuna.Study, result: StoredVerification) -> None:
    """Keep the check that says most about the trial: a failed check (unless it found a wrong
    result) or one with the search's own benchmark never replaces a measured, independent one."""
    previous = stored_verification(study)
    found_wrong = bool(result.failed) and result.agrees is False
    if (previous is not None and previous.trial == result.trial and not previous.failed
            and not found_wrong):
        if result.failed or (previous.independent and not result.independent):
            return
    study.set_user_attr(VERIFICATION_ATTR, result.to_dict())


def plan_of(config: StudyConfig, timeout_floor: float | None = None) -> MeasurementPlan:
    """The study's measurement plan; `timeout_floor`: seconds a launch may take at least (an
    application that runs longer than the default's minute needs more)."""
    more = {} if timeout_floor is None else {"timeout_floor": timeout_floor}
    return MeasurementPlan(collective=config.collective, nodes=config.nodes, ppn=config.ppn,
                           sizes=config.sizes, repetitions=config.repetitions,
                           stages=config.stages, time_per_size=config.time_per_size,
                           objective=config.objective, **more)


def estimate_seconds(study: optuna.Study, plan: MeasurementPlan, rounds: int) -> float | None:
    """How long the rounds take, from the study's default launches per size block (their median
    duration, with a margin for the other benchmark); None before any was measured."""
    by_block: dict[int, list[float]] = {}
    for launch in load_baselines(study)[-50:]:
        by_block.setdefault(launch.block, []).append(launch.seconds)
    blocks = plan.blocks()
    if any(not by_block.get(b) for b in range(len(blocks))):
        return None
    per_round = sum(2 * statistics.median(by_block[b]) for b in range(len(blocks)))
    return per_round * rounds * ESTIMATE_MARGIN


# ------------------------------------------------------------------ at the end of a study


@dataclass
class EndOfStudyVerifier:
    """What the controller calls once its confirmation named a winner, on the node group it
    holds. It never ends the run badly: a failure is stored with its reason and told."""

    study: optuna.Study
    choice: BenchmarkChoice
    rounds: int = 20
    seed: int | None = None
    events: Events | None = None

    def __call__(self, placed: Placement, deadline: float | None) -> StoredVerification | None:
        events = self.events
        label = self.choice.benchmark.describe().split(" (", 1)[0]
        measurer = Measurer(placed.measurer.plan, placed.group, self.choice.benchmark,
                            oversubscribe=placed.measurer.oversubscribe,
                            executor=placed.measurer.executor)
        needed = estimate_seconds(self.study, measurer.plan, self.rounds)
        if deadline is not None and (needed is None or time.time() + needed > deadline):
            if events is not None:
                events.verified(None, f"independent check ({label}, {self.rounds} rounds) "
                                "skipped: not enough time left")
            return None
        if events is not None:
            events.verifying(label, self.rounds)
        try:
            result = verify_on(self.study, measurer, self.choice, self.rounds, self.seed,
                               deadline=deadline)
        except NothingToVerify:
            return None
        except Exception as exc:  # noqa: BLE001 - the search's result stands whatever happens here
            result = self._failed(exc)
        if events is not None:
            events.verified(result, "")
        return result

    def _failed(self, exc: Exception) -> StoredVerification | None:
        reason = (str(exc).strip().splitlines() or [exc.__class__.__name__])[0][:300]
        try:
            from ..export import best_config

            best = best_config(self.study)
            result = StoredVerification(benchmark=self.choice.benchmark.describe(),
                                        independent=self.choice.independent, trial=best.trial,
                                        rounds=self.rounds, finished=time.time(), failed=reason)
            store(self.study, result)
            return result
        except Exception:  # noqa: BLE001 - the storage itself failed: say it, store nothing
            return StoredVerification(benchmark=self.choice.benchmark.describe(),
                                      independent=self.choice.independent, trial=-1,
                                      rounds=self.rounds, failed=reason)


