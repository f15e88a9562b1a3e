"""Independent verification: the exported best against the untuned stack, measured with another
benchmark than the search used (IMB when the search used the kernel), on the same nodes.

Why: the search and its confirmation keep the luckiest of many noisy draws of one benchmark. A
claim that only that benchmark, or that luck, sees must not reach the export unchallenged (issue
12: a "1.342x (1.011x..1.726x)" claim measured 0.83x with IMB). Each round measures the default
and the best in random order, size block by size block as the study's plan does; per size the
log-ratio of t_max, per round the weighted score; Student-t intervals over the rounds.
"""

from __future__ import annotations

import os
import random
import socket
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import optuna

from . import objective
from .benchmarks import REGISTRY as BENCHMARK_KINDS
from .benchmarks import Benchmark, kind_of_stored, make_benchmark
from .errors import AutotuneError, EnvironmentProblem, InputError
from .measure import LaunchFailed, MeasurementPlan, Measurer, PlannedLaunch
from .space import LaunchSettings
from .stats import mean_interval
from .storage import (VERIFICATION_ATTR, StoredVerification, StudyConfig, TrialRecord,
                      VerifiedSize, load_baselines, stored_config, stored_confirmation,
                      stored_verification)

if TYPE_CHECKING:
    from .baseline import Placement
    from .events import Events
    from .export import BestConfig

NOTHING_TO_VERIFY = "nothing to verify: the study recommends the untuned stack"
MIN_ROUNDS = 2  # one round gives no interval
MAX_FAILED_LAUNCHES = 3  # a configuration that keeps failing under this benchmark: stop
ESTIMATE_MARGIN = 1.5  # the other benchmark's launches may take longer than the search's


class NothingToVerify(AutotuneError):
    """The exported best is the untuned stack: there is no claim to check."""

    exit_code = 0


class VerificationFailed(AutotuneError):
    """The check gave no figure (launches kept failing, too few rounds)."""


# ------------------------------------------------------------------ which benchmark


def search_benchmark(config: StudyConfig) -> str:
    """The name of what the search measured with (older studies stored nothing: the default)."""
    return kind_of_stored(config.benchmark)


@dataclass(frozen=True)
class BenchmarkChoice:
    benchmark: Benchmark
    independent: bool  # not the benchmark the search used
    note: str = ""  # what the user should know about the choice


def _found(name: str, imb_dir: str | None, collective: str | None) -> Benchmark | None:
    """The benchmark `name`, checked usable here (IMB from `imb_dir`, else PATH); None when it is
    not there, unless its location was given (a wrong folder is an error, not a fallback)."""
    given = imb_dir if "imb_dir" in BENCHMARK_KINDS[name].options else None
    bench = make_benchmark(name, imb_dir=given, collective=collective)
    try:
        bench.check()
    except EnvironmentProblem:
        if given:
            raise
        return None
    return bench


def choose_benchmark(search: str, requested: str | None = None, imb_dir: str | None = None,
                     *, allow_same: bool = True,
                     collective: str | None = None) -> BenchmarkChoice | None:
    """The benchmark of the check: `requested`, else the search benchmark's verification partner
    (the registry's; IMB via `imb_dir` or PATH). Without the partner a study is checked with its
    own benchmark again (not independent, said in the note) when `allow_same`, else there is no
    check (None)."""
    if requested:
        takes_dir = "imb_dir" in BENCHMARK_KINDS[requested].options
        bench = make_benchmark(requested, imb_dir=imb_dir if takes_dir else None,
                               collective=collective)
        bench.check()
        same = requested == search
        note = (f"the search used {bench.describe()} too: this check is not independent"
                if same else "")
        return BenchmarkChoice(bench, not same, note)
    partner = BENCHMARK_KINDS[search].partner
    found = _found(partner, imb_dir, collective)
    if found is not None:
        return BenchmarkChoice(found, True)
    if not allow_same:
        return None
    own = make_benchmark(search, collective=collective)
    missing = BENCHMARK_KINDS[partner]
    where = f" ({missing.where})" if missing.where else ""
    return BenchmarkChoice(own, False,
                           f"{missing.label} not found{where}: checked with "
                           f"{BENCHMARK_KINDS[search].label}, the search's own benchmark, so the "
                           "check is not independent")


# ------------------------------------------------------------------ what is compared


@dataclass(frozen=True)
class Arm:
    """One side of the comparison: the settings a launch applies and the params it records."""

    settings: LaunchSettings
    params: dict[str, Any]
    is_default: bool


def _settings(env: dict[str, str], mca: dict[str, str], args: tuple[str, ...]) -> LaunchSettings:
    return LaunchSettings(env=tuple(env.items()), mca=tuple(mca.items()), mpirun_args=tuple(args))


def arms_of(study: optuna.Study, best: BestConfig) -> tuple[Arm, Arm]:
    """(default, best): the default trial's stored settings (else the study's reference, the
    untuned stack as stored), and the exported best's exactly as export writes them."""
    default = None
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)):
        record = TrialRecord.from_trial(trial)
        if record.is_default:
            default = Arm(_settings(record.settings.env, record.settings.mca,
                                    record.settings.mpirun_args), dict(record.params), True)
            break
    if default is None:
        config = best.config
        if config is None or not config.reference:
            raise InputError(f"study {study.study_name!r} has no measured default configuration "
                             "to compare with")
        from .storage import StoredSettings

        ref = StoredSettings.from_dict(config.reference, "study config: reference")
        default = Arm(_settings(ref.env, ref.mca, ref.mpirun_args), {}, True)
    return default, Arm(_settings(best.env, best.mca, best.mpirun_args), dict(best.params), False)


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


def measure_rounds(measurer: Measurer, default: Arm, best: Arm, weights: dict[int, float],
                   rounds: int, rng: random.Random, *, deadline: float | None = None,
                   on_round: Callable[[int, int], None] | None = None) -> Rounds:
    """`rounds` interleaved rounds; a round counts only when every size block gave a pair. A
    launch that fails loses its pair; a stop request ends it all (LaunchFailed `interrupted`)."""
    out = Rounds()
    blocks = measurer.plan.blocks()
    round_seconds = 0.0
    for index in range(rounds):
        if deadline is not None and index and time.time() + round_seconds > deadline:
            out.stopped = f"the time budget ended it after {index} rounds"
            break
        t0 = time.monotonic()
        ratios: dict[int, float] = {}
        complete = True
        for block_index, block in enumerate(blocks):
            planned = PlannedLaunch(index=-1, block=block_index, rep=index, sizes=block)
            order = [default, best]
            rng.shuffle(order)
            times: dict[bool, dict[int, float]] = {}
            for arm in order:
                try:
                    record = measurer.run_launch(arm.settings, planned, rng.randrange(2**31),
                                                 params=arm.params, is_default=arm.is_default)
                except LaunchFailed as exc:
                    if exc.reason == "interrupted":
                        raise
                    if exc.reason == "wrong-result" and not arm.is_default:
                        out.wrong_result = str(exc)[:300]
                        return out
                    which = "the untuned stack" if arm.is_default else "the best"
                    out.failures.append(f"{which}: {exc}")
                    break
                times[arm.is_default] = record.t_max_us
                if not arm.is_default and not out.argv:
                    out.argv = tuple(record.argv)
            if len(times) < 2:
                complete = False
                if len(out.failures) >= MAX_FAILED_LAUNCHES:
                    out.stopped = f"{len(out.failures)} launches failed"
                    return out
                continue
            for size, t_us in times[False].items():
                ratio = objective.log_ratio(t_us, times[True][size])
                ratios[size] = ratio
                out.per_size.setdefault(size, []).append(ratio)
        if complete and ratios:
            out.scores.append(objective.weighted_score(ratios, weights))
        round_seconds = time.monotonic() - t0
        if on_round is not None:
            on_round(index + 1, rounds)
    return out


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


def summarize(measured: Rounds, *, benchmark: str, independent: bool, trial: int, rounds: int,
              search: tuple[float | None, tuple[float, float] | None]) -> StoredVerification:
    """The stored result: per-size and weighted speedups with intervals, and the agreement."""
    base = StoredVerification(benchmark=benchmark, independent=independent, trial=trial,
                              rounds=rounds, rounds_measured=len(measured.scores),
                              round_scores=tuple(measured.scores), search_speedup=search[0],
                              search_interval=search[1], finished=time.time(),
                              argv=measured.argv)
    if measured.wrong_result:  # whatever the speed, a wrong answer is never recommended
        return replace(base, failed=f"wrong-result: {measured.wrong_result}"[:500], agrees=False)
    if len(measured.scores) < MIN_ROUNDS:
        why = measured.stopped or "too few rounds"
        last = f"; last failure: {measured.failures[-1]}" if measured.failures else ""
        return replace(base, failed=f"{len(measured.scores)} of {rounds} rounds measured "
                                    f"({why}){last}"[:500])
    sizes = []
    for size, ratios in sorted(measured.per_size.items()):
        if len(ratios) < MIN_ROUNDS:
            continue
        speed, low, high = mean_interval(ratios).speedup()
        sizes.append(VerifiedSize(size=size, speedup=speed, speedup_interval=(low, high)))
    speed, low, high = mean_interval(measured.scores).speedup()
    return replace(base, speedup=speed, speedup_interval=(low, high), sizes=tuple(sizes),
                   agrees=agreement((low, high), search[1], search[0]))


def verify_on(study: optuna.Study, measurer: Measurer, choice: BenchmarkChoice, rounds: int,
              seed: int | None = None, *, deadline: float | None = None,
              on_round: Callable[[int, int], None] | None = None) -> StoredVerification:
    """Check the study's exported best against the untuned stack with `measurer` (bound to the
    nodes, running `choice.benchmark`), store the result in the study and return it."""
    from .export import best_config, check_exportable

    best = best_config(study)
    if best.is_default:
        raise NothingToVerify(NOTHING_TO_VERIFY)
    check_exportable(best)  # what is launched is exactly what export would write
    config = best.config or stored_config(study)
    if config is None:
        raise InputError(f"study {study.study_name!r} has no stored configuration")
    default, candidate = arms_of(study, best)
    measured = measure_rounds(measurer, default, candidate, config.weights, rounds,
                              random.Random(seed), deadline=deadline, on_round=on_round)
    result = summarize(measured, benchmark=choice.benchmark.describe(),
                       independent=choice.independent, trial=best.trial, rounds=rounds,
                       search=search_figure(study, best))
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


def plan_of(config: StudyConfig) -> MeasurementPlan:
    return MeasurementPlan(collective=config.collective, nodes=config.nodes, ppn=config.ppn,
                           sizes=config.sizes, repetitions=config.repetitions,
                           stages=config.stages, time_per_size=config.time_per_size,
                           objective=config.objective)


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
            from .export import best_config

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


# ------------------------------------------------------------------ `autotune verify`


@dataclass(frozen=True)
class VerifyRequest:
    study: optuna.Study
    storage_url: str
    benchmark: str | None = None  # imb | mpi4py; None: the other one than the search's
    imb_dir: str | None = None
    rounds: int = 20
    seed: int | None = None
    launcher: str = "auto"  # where and how to launch: as `autotune start` was told
    hostfile: str | None = None
    launcher_mca: tuple[tuple[str, str], ...] = ()
    oversubscribe: bool = False


def run_verify(request: VerifyRequest, *, on_start: Callable[[str], None] | None = None,
               on_round: Callable[[int, int], None] | None = None) -> StoredVerification:
    """`autotune verify`: refuse while the study's daemon runs (and hold its lock meanwhile),
    put the nodes together as `start` does, and check the exported best (verify_on)."""
    from .daemon import Owner, StudyLock
    from .export import best_config
    from .launch import check_launch_tool, make_pool, pick_launcher
    from .probe import probe_capabilities
    from .options import StartOptions

    study = request.study
    config = stored_config(study)
    if config is None:
        raise InputError(f"study {study.study_name!r} has no stored configuration (not made by "
                         "`autotune start`)")
    if best_config(study).is_default:
        raise NothingToVerify(NOTHING_TO_VERIFY)
    # IMB from --imb-dir or PATH, never from a path stored in the study: a shared storage is
    # written by others, and this command would run what it names
    choice = choose_benchmark(search_benchmark(config), request.benchmark, request.imb_dir,
                              collective=config.collective)
    assert choice is not None
    lock = StudyLock.of(request.storage_url, study.study_name)
    lock.acquire(Owner(pid=os.getpid(), host=socket.gethostname(), started=time.time(),
                       study=study.study_name, log=str(lock.log)))
    try:
        options = StartOptions(collective=config.collective, nodes=config.nodes, ppn=config.ppn,
                               launcher=request.launcher, hostfile=request.hostfile,
                               launcher_mca=request.launcher_mca,
                               oversubscribe=request.oversubscribe)
        caps = probe_capabilities()
        launcher, why = pick_launcher(options)
        check_launch_tool(options, caps, launcher)
        pool, note = make_pool(options, caps, launcher, why)
        try:
            if on_start is not None:
                for line in (note, choice.note):
                    if line:
                        on_start(f"note: {line}")
                on_start(f"checking trial {best_config(study).trial} against the untuned stack "
                         f"with {choice.benchmark.describe()}: {request.rounds} interleaved "
                         f"rounds of {len(plan_of(config).blocks())} size block(s)")
            group = pool.acquire()
            try:
                measurer = Measurer(plan_of(config), None, choice.benchmark,
                                    oversubscribe=request.oversubscribe).on(group)
                return verify_on(study, measurer, choice, request.rounds, request.seed,
                                 on_round=on_round)
            finally:
                pool.release(group)
        finally:
            pool.close()
    finally:
        lock.release()
