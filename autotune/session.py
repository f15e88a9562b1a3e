"""Everything `autotune start` does before the first trial: probe the machine, resolve the space
against it, validate the request, create or resume the study, prove UCX knobs are live, warm start.
The CLI only parses arguments and prints what this returns."""

from __future__ import annotations

import datetime as dt
import math
import os
import re
import socket
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import optuna

from .benchmarks import (APP_RUN, AUTO_BENCHMARK, REDUCTION_ELEMENT_BYTES, REDUCTIONS, Benchmark,
                         Mpi4pyBenchmark, auto_benchmark, configured_benchmark, find_benchmark,
                         kind_of_stored)
from .benchmarks import REGISTRY as BENCHMARK_KINDS
from .checks import (check_cores, check_host_count, check_kernel_mpi, check_site_settings,
                     nbc_notes, probe_nodes, ucx_trial_params)
from .controller import Controller
from .daemon import Owner, StudyLock
from .errors import AutotuneError, InputError
from .events import Events
from .launch import (NodePool, check_site_mca, make_launcher, make_pool, mpi4py_for_mpich,
                     pick_launcher, ranks_per_node, slurm_end_time)
from .launch import check_launch_tool as _check_launch_tool
from .measure import MeasurementPlan, Measurer, check_app_metric, check_ucx_live
from .objective import check_objective, load_weights, normalize_weights, uniform_weights
from .options import StartOptions
from .probe import Capabilities, HostInfo, probe_capabilities, probe_host
from .space import Removal, SearchSpace, TrialContext, family_of, load_space, resolve
from .storage import (CONFIG_ATTR, FINGERPRINT_ATTR, RESOLUTION_ATTR, StoredSettings, StudyConfig,
                      autotune_home, default_storage_url, enqueue_default, open_storage,
                      recover_abandoned, stored_config)
from .strategy import Strategy, make_strategy
from .units import describe_sizes, parse_size_range
from .warmstart import enqueue_warm_start, load_warm_start

STUDY_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,127}")
SLURM_END_MARGIN = 120.0  # stop launching this long before the job's end (Slurm sends SIGTERM),
# or a quarter of what is left of a shorter job; AUTOTUNE_JOB_END_MARGIN (seconds) sets it: the
# lead of the job's --signal, so that no trial or confirmation starts that the signal would cut
JOB_END_MARGIN_ENV = "AUTOTUNE_JOB_END_MARGIN"
EXIT_JOB_TIME_UP = 75  # sysexits EX_TEMPFAIL: the job's end stopped the run early; requeue to resume
DEFAULT_SIZES = "8:1m"


STOP_SIGNAL_SLACK = 120.0  # Slurm sends --signal up to a minute early; more, to be sure


_job_end_seen: dict[str, float | None] = {}


def job_end() -> float | None:
    """The Slurm job's end, read when a session starts and remembered for its stop (squeue may
    no longer answer then)."""
    _job_end_seen["end"] = slurm_end_time()
    return _job_end_seen["end"]


def exit_code_for_stop() -> int:
    """A stop signal near the end of a Slurm job (within its margin and Slurm's early minute) is
    the time limit arriving before the study ended: exit 75 so the job script requeues and
    resumes. A stop earlier in the job (`autotune stop`, scancel) or outside Slurm is a clean 0,
    and the job ends."""
    end = _job_end_seen["end"] if "end" in _job_end_seen else slurm_end_time()
    if end is None:
        return 0
    near = time.time() >= end - job_end_margin(end) - STOP_SIGNAL_SLACK
    return EXIT_JOB_TIME_UP if near else 0


@dataclass(frozen=True)
class SizesChoice:
    sizes: tuple[int, ...]
    weights: dict[int, float]
    weights_source: str
    dropped: tuple[int, ...]


@dataclass
class Session:
    study: optuna.Study
    space: SearchSpace  # resolved against this machine
    config: StudyConfig
    plan: MeasurementPlan
    measurer: Measurer
    pool: NodePool
    strategy: Strategy
    host: HostInfo
    caps: Capabilities
    removed: tuple[Removal, ...]
    context_values: dict[str, Any]
    space_name: str
    resumed_trials: int
    notes: list[str] = field(default_factory=list)
    warm_started: list[str] = field(default_factory=list)
    ucx_live_checked: bool = False
    recovered: list[int] = field(default_factory=list)
    fingerprint: dict[str, Any] = field(default_factory=dict)
    lock: StudyLock | None = None
    deadline: float | None = None
    deadline_is_job_end: bool = False  # the deadline is the Slurm job's end, not --time-budget
    search_deadline: float | None = None  # trials end by this, the confirmation by `deadline`
    verify_choice: Any = None  # verify.BenchmarkChoice of the end-of-study check, or None

    def controller(self, options: StartOptions, events: Events | None) -> Controller:
        return Controller(self.study, self.space, self.config, self.measurer, self.host,
                          pool=self.pool, strategy=self.strategy, parallel=options.parallel,
                          baseline_every=options.baseline_every,
                          seed=options.seed, events=events, context_values=self.context_values,
                          fingerprint=self.fingerprint,
                          infra_pause_seconds=options.infra_pause,
                          confirm_top=options.confirm_top, confirm_rounds=options.confirm_rounds,
                          confirm_max_rounds=options.confirm_max_rounds,
                          confirm_confidence=options.confirm_confidence,
                          verifier=self.verifier(options, events),
                          per_size=self.per_size_stage(options, events))

    def per_size_stage(self, options: StartOptions, events: Events | None) -> Any:
        """Per-size algorithm rules, when asked for and the space tunes this collective's
        coll_tuned algorithm; else None."""
        from .endgame import stage

        config = self.config
        if (not options.per_size or options.confirm_top <= 0  # --confirm 0: nothing after the search
                or not self.measurer.benchmark.sized  # an application: no sizes to split
                or config.nodes * config.ppn < 2  # one rank: coll/self runs it, not coll_tuned
                or not stage.applies(self.space, config.collective, config.nodes)):
            return None
        ctx = TrialContext(config.collective, config.nodes)
        defaults = self.space.defaults(ctx, self.context_values)
        benchmark = self.measurer.benchmark
        imb = None
        if benchmark.name != "imb":  # the bands are checked with IMB where it is found
            imb = find_benchmark("imb", options, config.collective, self.caps.mpi_family)
        return stage.PerSizeStage(
            self.study, self.space, collective=config.collective, nodes=config.nodes,
            ppn=config.ppn, weights=config.weights, default_params=defaults,
            default_settings=self.space.settings(defaults, ctx),
            rules_dir=autotune_home() / "rules", rounds=options.per_size_rounds,
            seed=options.seed, events=events,
            disagreement=benchmark.disagreement(config.collective),
            imb_check=imb if imb is not None and imb.times(config.collective) else None)

    def verifier(self, options: StartOptions, events: Events | None) -> Any:
        """The independent check run when the confirmation names a winner, or None."""
        if self.verify_choice is None:
            return None
        from .endgame.verify import EndOfStudyVerifier

        return EndOfStudyVerifier(self.study, self.verify_choice, rounds=options.verify_rounds,
                                  seed=options.seed, events=events)


def choose_sizes(collective: str, sizes: tuple[int, ...] | None,
                 weights_file: str | None) -> SizesChoice:
    """Sizes to measure and their weights, from --sizes and/or an application weights file."""
    if weights_file:
        file_weights = load_weights(weights_file)
        candidates = sizes if sizes is not None else tuple(sorted(file_weights))
        weights = {s: file_weights.get(s, 0.0) for s in candidates}
        source = f"from {Path(weights_file).name}"
    else:
        candidates = sizes if sizes is not None else parse_size_range(DEFAULT_SIZES)
        weights = uniform_weights(candidates)
        source = "uniform over log2(size)"
    dropped: tuple[int, ...] = ()
    if collective in REDUCTIONS:  # whole float32 elements only
        dropped = tuple(s for s in candidates if s % REDUCTION_ELEMENT_BYTES)
        weights = {s: w for s, w in weights.items() if not s % REDUCTION_ELEMENT_BYTES}
    weights = {s: w for s, w in weights.items() if w > 0}
    if not weights:
        raise InputError("no message size left to measure: check --sizes against the weights file"
                         + (" (reductions need multiples of 4 B)" if dropped else ""))
    return SizesChoice(sizes=tuple(sorted(weights)), weights=normalize_weights(weights),
                       weights_source=source, dropped=dropped)


def app_sizes(options: StartOptions) -> SizesChoice:
    """An application study measures no message size: one value per launch, under APP_RUN."""
    if options.sizes is not None or options.weights_file:
        raise InputError("--sizes/--weights: --benchmark app measures the program's own metric, "
                         "not message sizes")
    if options.objective != "latency":
        raise InputError(f"--objective {options.objective}: --benchmark app scores its metric")
    return SizesChoice(sizes=(APP_RUN,), weights={APP_RUN: 1.0},
                       weights_source="one value per launch (the application's metric)",
                       dropped=())


def _short(value: Any) -> str:
    if isinstance(value, tuple) and value and all(isinstance(v, int) for v in value):
        return describe_sizes(value)
    if isinstance(value, dict) and not value:
        return "not recorded (a study from before the untuned stack was the reference)"
    if isinstance(value, dict) and "env" in value:
        count = sum(len(value.get(k) or ()) for k in ("env", "mca", "mpirun_args"))
        return "the untuned stack" if not count else f"{count} forced setting(s)"
    if isinstance(value, dict):
        return f"{len(value)} weights"
    return repr(value)


def study_identity(options: StartOptions) -> tuple[str, str]:
    """(study name, storage URL) that `start` with these options works on."""
    space = load_space(options.space)
    ppn = ranks_per_node(options)
    name = options.study_name or f"{options.collective}-{options.nodes}n{ppn}p-{space.name}"
    if options.benchmark == "app" and options.app_command and not options.study_name:
        program = re.sub(r"[^A-Za-z0-9_.+-]", "_", Path(options.app_command[0]).name)[:40]
        name += f"-app-{program}"  # beside the kernel's study of the same case, not in it
    if not STUDY_NAME_RE.fullmatch(name):
        raise InputError(f"invalid study name {name!r}: use letters, digits and . _ + - "
                         "(at most 128 characters)")
    return name, options.storage or default_storage_url()


FINGERPRINT_STRICT = ("cpu_model", "mpi", "ucx")  # a change makes earlier scores incomparable
METHOD_KEY = "benchmark_method"  # likewise; absent from studies begun before it was recorded


def fingerprint_of(caps: Capabilities, host: HostInfo, config: StudyConfig,
                   pool: NodePool, benchmark: Benchmark) -> dict[str, Any]:
    """What a study's scores depend on; `hosts` and `node_names` are every node trials may use."""
    return {"nodes": config.nodes, "ppn": config.ppn, "collective": config.collective,
            "space": config.space, "cpu_model": host.cpu_model, "mpi": caps.mpi,
            "ucx": caps.ucx_version, "nps": caps.numa.nps, "hosts": list(pool.hosts()),
            "node_names": list(pool.host_names()), METHOD_KEY: benchmark.method}


def check_comparable(name: str, earlier: dict[str, Any], now: dict[str, Any]) -> None:
    """InputError when a stored study's scores cannot be compared with a run here: another
    machine (CPU, MPI, UCX), or another method of the benchmark (a study begun by an autotune
    whose kernel timed differently records none: its scores would mix two readings)."""
    changed = [k for k in FINGERPRINT_STRICT if earlier.get(k) != now.get(k)]
    if changed:
        shown = "; ".join(f"{k}: {earlier.get(k)!r} then, {now.get(k)!r} now" for k in changed)
        raise InputError(f"study {name!r} ran on a different machine ({shown}); its scores are not "
                         "comparable with runs here. --new-study starts a fresh study, --force "
                         "continues anyway")
    then, method = earlier.get(METHOD_KEY, ""), now.get(METHOD_KEY, "")
    if then != method:
        shown = f"{then!r} then" if then else "none recorded then, by an earlier autotune"
        raise InputError(f"study {name!r} was measured with another method of its benchmark "
                         f"({shown}; {method!r} now); its scores are not comparable with runs "
                         "here. --new-study starts a fresh study, --force continues anyway")


def with_benchmark_chosen(options: StartOptions) -> StartOptions:
    """`--benchmark auto` made concrete: what the study of this name was measured with where one
    is stored (a resume keeps its benchmark; not with --new-study), else IMB where it is found,
    else the kernel (benchmarks.auto_benchmark says why)."""
    if options.benchmark != AUTO_BENCHMARK:
        return options
    stored = None if options.new_study else _stored_benchmark(options)
    return replace(options, benchmark=stored or auto_benchmark(
        options, options.collective, family_of(load_space(options.space).stack)))


def auto_note(name: str, benchmark: Benchmark, resumed: int) -> str:
    """What `--benchmark auto` chose, and why, for the run's notes."""
    if resumed:
        return f"benchmark: {benchmark.describe()}, as this study began (--benchmark auto)"
    if name == "imb":
        return (f"benchmark: {benchmark.describe()} (--benchmark auto: IMB where it is found; "
                "docs/method.md says why)")
    if name == "cbench":
        return (f"benchmark: {benchmark.describe()}, IMB-MPI1's method built with this MPI's "
                f"mpicc (--benchmark auto: IMB-MPI1 not found, {BENCHMARK_KINDS['imb'].where})")
    return (f"benchmark: the mpi4py kernel (--benchmark auto: IMB-MPI1 not found, "
            f"{BENCHMARK_KINDS['imb'].where}; no mpicc to build autotune's C benchmark)")


def _stored_benchmark(options: StartOptions) -> str | None:
    name, url = study_identity(options)
    storage = open_storage(url)
    if name not in optuna.get_all_study_names(storage):
        return None
    config = stored_config(optuna.load_study(study_name=name, storage=storage))
    return kind_of_stored(config.benchmark) if config is not None else None


def benchmark_of(options: StartOptions, family: str | None = None) -> Benchmark:
    """The configured benchmark, checked usable here (IMB found and executable, autotune's C
    benchmark built with the `family`'s mpicc, ...)."""
    benchmark = configured_benchmark(options.benchmark, options, collective=options.collective,
                                     family=family)
    benchmark.check()
    return benchmark


@dataclass(frozen=True)
class Checked:
    """A start request checked before anything is locked or launched (see preflight)."""

    space: SearchSpace  # as loaded, not yet resolved against the nodes
    sizes: SizesChoice
    benchmark: Benchmark
    caps: Capabilities  # of this machine; the nodes are probed later where they differ
    launcher: str
    why: str  # why that launcher
    ppn: int
    name: str
    storage_url: str
    verify_choice: Any = None  # verify.BenchmarkChoice of the end-of-study check, or None


def preflight(options: StartOptions) -> Checked:
    """Everything `start` can check without the lock, the nodes or a running MPI: the space,
    the sizes and weights, the warm start, the storage, the launcher, its tool, its hosts and
    site settings, the ranks per node here, the benchmark. A background `start` runs it before
    detaching, so bad input is one line at once (whatever fails later, once the run holds the
    study, is relayed as one line too); `prepare_session` starts from its result."""
    options = with_benchmark_chosen(options)
    space = load_space(options.space)
    check_site_settings(options, space)
    sizes = (app_sizes(options) if options.benchmark == "app"
             else choose_sizes(options.collective, options.sizes, options.weights_file))
    check_objective(options.collective, options.objective)
    if options.warm_start:
        load_warm_start(options.warm_start)
    name, storage_url = study_identity(options)
    open_storage(options.storage)
    caps = probe_capabilities(family_of(space.stack))
    choice, why = pick_launcher(options)
    _check_launch_tool(options, caps, choice)
    check_kernel_mpi(options.benchmark, caps)
    check_site_mca(options)
    if choice != "ray":  # a Ray cluster counts its nodes on connecting
        check_host_count(options, make_launcher(options, caps, choice, why)[0].hosts())
    ppn = ranks_per_node(options)
    if choice == "local":
        check_cores(options, ppn, probe_host(caps))
    return Checked(space=space, sizes=sizes, benchmark=benchmark_of(options, caps.mpi_family),
                   caps=caps,
                   launcher=choice, why=why, ppn=ppn, name=name, storage_url=storage_url,
                   verify_choice=verification_of(options))


def verification_of(options: StartOptions) -> Any:
    """The benchmark of the end-of-study check (verify.BenchmarkChoice): the other one than the
    search's where it is found (IMB via --imb-dir or PATH after the kernel), else None; with
    --verify and no IMB, one line before anything starts."""
    from .endgame.partner import choose_benchmark, missing_partner

    if options.benchmark == "app":  # checked with itself: the confirmation, `autotune verify`
        if options.verify == "yes":
            raise InputError("--verify: an application has no independent partner; the "
                             "confirmation re-measures it, and `autotune verify ... -- PROGRAM` "
                             "does again later")
        return None
    if options.verify == "no":
        return None
    choice = choose_benchmark(options.benchmark, located=options, allow_same=False,
                              collective=options.collective)
    if choice is None and options.verify == "yes":
        partners = " or ".join(BENCHMARK_KINDS[name].label
                               for name in BENCHMARK_KINDS[options.benchmark].partners)
        raise InputError(f"--verify: {missing_partner(options.benchmark)}; the independent "
                         f"check of a search with {BENCHMARK_KINDS[options.benchmark].label} "
                         f"runs {partners}")
    return choice


def prepare_session(options: StartOptions) -> Session:
    chosen_by = options.benchmark
    options = with_benchmark_chosen(options)
    checked = preflight(options)
    space, chosen, benchmark, caps = checked.space, checked.sizes, checked.benchmark, checked.caps
    choice, why, ppn, name = checked.launcher, checked.why, checked.ppn, checked.name
    if options.new_study:
        name = f"{name}-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"
    lock = StudyLock.of(checked.storage_url, name)
    lock.acquire(Owner(pid=os.getpid(), host=socket.gethostname(), started=time.time(), study=name,
                       log=str(lock.log)))
    pool = None
    try:
        pool, launcher_note = make_pool(options, caps, choice, why)
        notes = [launcher_note]
        if choice == "local":
            host = probe_host(caps)
        else:  # what counts is the nodes, not the machine autotune runs on
            caps, host = probe_nodes(pool, caps.mpi_family)
            notes.append(f"nodes probed on {host.host}: {host.mpi}, UCX {host.ucx or '-'}, "
                         f"{host.cores} cores, NPS {caps.numa.nps}, {host.cpu_model}")
        check_cores(options, ppn, host)
        ctx = TrialContext(options.collective, options.nodes)
        resolved = resolve(space, caps, ctx)
        if not benchmark.sized:  # an application: its metric must be there before any search
            notes.append(check_application(
                options, pool, benchmark, ppn, chosen.sizes, resolved.space.settings(
                    resolved.space.defaults(ctx, resolved.context_values), ctx)))
        config = StudyConfig(collective=options.collective, nodes=options.nodes, ppn=ppn,
                             space=space.name, sizes=chosen.sizes, weights=chosen.weights,
                             repetitions=options.repetitions, stages=options.stages,
                             time_per_size=options.time_per_size,
                             weights_source=chosen.weights_source, space_digest=space.digest,
                             benchmark=benchmark.describe(), objective=options.objective,
                             reference=StoredSettings.of(resolved.space.settings(
                                 resolved.space.defaults(ctx, resolved.context_values),
                                 ctx)).to_dict())
        session = _prepare_locked(options, space, chosen, pool, host, ppn, caps, ctx,
                                  resolved, config, name, lock, benchmark)
        if chosen_by == AUTO_BENCHMARK:
            notes.append(auto_note(options.benchmark, benchmark, session.resumed_trials))
        session.notes[:0] = notes
        session.verify_choice = checked.verify_choice
        if session.verify_choice is not None:
            session.notes.append(f"a confirmed winner is checked at the end with "
                                 f"{session.verify_choice.benchmark.describe()} against the "
                                 f"untuned stack ({options.verify_rounds} rounds)")
        elif options.benchmark == "app":
            session.notes.append("the application is its own check: the confirmation re-measures "
                                 "the best in interleaved rounds, and `autotune verify ... -- "
                                 "PROGRAM` does again later")
        elif options.verify == "auto":
            from .endgame.partner import missing_partner

            session.notes.append("no independent check at the end: "
                                 f"{missing_partner(options.benchmark)}")
        if options.parallel > 1:
            session.notes.insert(len(notes), f"{options.parallel} trials at once on disjoint node "
                                 "groups: they may disturb each other through a shared network")
        return session
    except BaseException:
        if pool is not None:
            pool.close()
        lock.release()
        raise


def plan_for(options: StartOptions, ppn: int, sizes: tuple[int, ...]) -> MeasurementPlan:
    return MeasurementPlan(collective=options.collective, nodes=options.nodes, ppn=ppn,
                           sizes=sizes, repetitions=options.repetitions,
                           stages=options.stages, time_per_size=options.time_per_size,
                           timeout_floor=options.timeout_floor, objective=options.objective)


def check_application(options: StartOptions, pool: NodePool, benchmark: Benchmark, ppn: int,
                      sizes: tuple[int, ...], settings: Any) -> str:
    """An application's metric on the untuned stack's first launch, before anything is stored
    (a wrong regex leaves no study behind that the corrected command would then clash with);
    the note that says what it gave."""
    measurer = Measurer(plan_for(options, ppn, sizes), None, benchmark,
                        oversubscribe=options.oversubscribe)
    group = pool.acquire()
    try:
        record = check_app_metric(measurer.on(group), settings)
    finally:
        pool.release(group)
    value = next(iter(record.t_max_us.values()))
    shown = 1.0 / value if options.higher_is_better else value  # a rate is scored reciprocal
    return (f"the untuned stack's launch of the application gave {shown:g} in "
            f"{record.seconds:.1f} s ({benchmark.describe()})")


def _prepare_locked(options, space, chosen, pool, host, ppn, caps, ctx, resolved, config,
                    name, lock, benchmark) -> Session:
    plan = plan_for(options, ppn, chosen.sizes)
    store = open_storage(options.storage)
    strategy = make_strategy(options.strategy, seed=options.seed, prune=options.prune,
                             options=options)
    try:
        study = optuna.create_study(study_name=name, storage=store, direction="minimize",
                                    sampler=strategy.sampler(resolved.context_values),
                                    pruner=strategy.pruner(), load_if_exists=True)
    except Exception as exc:  # noqa: BLE001 - storage backends raise many types
        raise AutotuneError(f"cannot create study {name!r}: {exc}") from None
    notes = strategy.notes(options.repetitions * len(plan.blocks()))
    previous = stored_config(study)
    if previous is None:
        study.set_user_attr(CONFIG_ATTR, config.to_dict())
    else:
        if previous.space_digest and previous.space_digest != config.space_digest:
            notes.append(f"the search space {space.name} changed since this study began; "
                         "trials stay comparable only if the changed knobs did not")
        diff = previous.differences(config)
        if diff:
            shown = "; ".join(f"{k}: stored {_short(getattr(previous, k))}, now "
                              f"{_short(getattr(config, k))}" for k in diff[:2])
            raise InputError(f"study {name!r} was created with different {', '.join(diff)} "
                             f"({shown}); use --study NAME for a new study")
    fingerprint = fingerprint_of(caps, host, config, pool, benchmark)
    earlier = study.user_attrs.get(FINGERPRINT_ATTR)
    if earlier and not options.force:
        check_comparable(name, earlier, fingerprint)
    study.set_user_attr(FINGERPRINT_ATTR, fingerprint)
    recovered = recover_abandoned(study)
    checker, checker_note = result_checker(benchmark, caps, options.collective)
    measurer = Measurer(plan, None, benchmark, oversubscribe=options.oversubscribe,
                        checker=checker)  # per group
    session = Session(study=study, space=resolved.space, config=config, plan=plan,
                      measurer=measurer, pool=pool, strategy=strategy, host=host,
                      caps=caps, removed=resolved.removed, context_values=resolved.context_values,
                      space_name=space.name, resumed_trials=len(study.trials), recovered=recovered,
                      fingerprint=fingerprint, lock=lock)
    if checker_note:
        notes.append(checker_note)
    if recovered:
        notes.append(f"recovered trials {', '.join(map(str, recovered))} left running by a process "
                     "that died: marked failed, their parameters queued again")
    deadlines = []
    if options.time_budget:
        deadlines.append(time.time() + options.time_budget)
    slurm_end = job_end()
    if slurm_end:
        deadlines.append(slurm_end - job_end_margin(slurm_end))
    session.deadline = min(deadlines) if deadlines else None
    session.deadline_is_job_end = bool(slurm_end) and session.deadline == deadlines[-1]
    session.notes.extend(notes)
    if chosen.dropped:
        session.notes.append(f"{options.collective} reduces float32 elements; sizes that are not a "
                             f"multiple of 4 B dropped: {', '.join(map(str, chosen.dropped))}")
    study.set_user_attr(RESOLUTION_ATTR, {
        "removed": [str(r) for r in resolved.removed], "context": resolved.context_values,
        "mpi": caps.mpi, "ucx": caps.ucx_version, "host": caps.host})
    default_params = resolved.space.defaults(ctx, resolved.context_values)
    enqueue_default(study, default_params)  # before any warm start: the default is trial 0
    for selector, component in (resolved.in_force or {}).items():
        session.notes.append(f"{selector}: the untuned stack runs {component} here (Open MPI's "
                             f"own choice); {selector} is a knob, and the knobs of another choice "
                             "are asked for only on trials that choose it")
    session.notes.extend(nbc_notes(options.collective, resolved.space, ctx, caps))
    ucx_params = ucx_trial_params(resolved.space, ctx, default_params)
    if options.check_live and ucx_params is not None and caps.mpi_family == "openmpi":
        group = pool.acquire()
        try:
            session.ucx_live_checked = check_ucx_live(
                measurer.on(group), resolved.space.settings(ucx_params, ctx), params=ucx_params)
        finally:
            pool.release(group)
    if options.warm_start:
        session.warm_started = enqueue_warm_start(study, options.warm_start, resolved.space, ctx,
                                                  resolved.context_values, options.collective,
                                                  options.nodes, ppn)
    return session


def result_checker(benchmark: Benchmark, caps: Capabilities,
                   collective: str = "allreduce") -> tuple[Benchmark | None, str]:
    """What checks each configuration's results where the search's benchmark times collectives
    without checking them (IMB-MPI1 checks nothing unless built with CHECK): autotune's C
    benchmark where this MPI's mpicc builds it (it starts in a fraction of the kernel's time),
    else the mpi4py kernel; and the note that says so. (None, "") for a benchmark that checks
    its own or times no collective (an application)."""
    if benchmark.checks_results or not benchmark.sized:
        return None, ""
    c_checker = find_benchmark("cbench", None, collective, caps.mpi_family)
    if c_checker is not None and c_checker.times(collective):
        return c_checker, (f"{benchmark.describe()} does not check results: one launch of "
                           "autotune's C benchmark checks each configuration's (a wrong one "
                           "fails the trial)")
    if caps.mpi_family == "mpich" and mpi4py_for_mpich() is None:
        return None, (f"results not checked: {benchmark.describe()} does not check them, and the "
                      "mpi4py kernel that would needs mpi4py built against MPICH (bash "
                      "scripts/install.sh --mpich)")
    return Mpi4pyBenchmark(), (f"{benchmark.describe()} does not check results: one launch of "
                               "the mpi4py kernel checks each configuration's (a wrong one fails "
                               "the trial)")


def job_end_margin(job_end: float) -> float:
    """Seconds before the Slurm job's end at which no work starts (see SLURM_END_MARGIN)."""
    given = os.environ.get(JOB_END_MARGIN_ENV, "").strip()
    if given:
        try:
            margin = float(given)
        except ValueError:
            raise InputError(f"{JOB_END_MARGIN_ENV}={given!r}: expected seconds") from None
        if not math.isfinite(margin) or margin < 0:
            raise InputError(f"{JOB_END_MARGIN_ENV}={given!r}: expected seconds >= 0")
        return margin
    return min(SLURM_END_MARGIN, max(0.0, job_end - time.time()) / 4)
