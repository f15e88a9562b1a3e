"""How one configuration is measured: a plan of launches, and running one launch of it.

Sizes (ascending) are split into `stages` blocks. Each block is measured in `repetitions`
separate launches (a fresh mpirun each: latency levels hold for a whole launch, so repeats inside
one launch cannot see launch-to-launch noise), block by block. Small, cheap sizes come first, so a
configuration pruned early never pays for the large sizes or the remaining launches.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .benchmarks import Benchmark, BenchmarkRequest, NbcTiming
from .errors import BenchmarkOutputError, EnvironmentProblem, InputError, LaunchFailure
from .launch import Command, Launcher, LaunchSpec, RunResult, run_command
from .objective import DEFAULT_OBJECTIVE, size_quantity
from .space import LaunchSettings
from .storage import RESULT_CHECK  # LaunchRecord.purpose of the checker's launch

TIMEOUT_FLOOR_SECONDS = 60.0
SECONDS_PER_SIZE_ALLOWANCE = 3.0  # startup of large buffers and the minimum repetition count
# the result checker's launch: its timings are another benchmark's and thrown away, so it times
# each size as briefly as the kernel allows (its minimum repetitions)
CHECK_TIME_PER_SIZE = 0.001


@dataclass(frozen=True)
class PlannedLaunch:
    index: int
    block: int
    rep: int
    sizes: tuple[int, ...]


@dataclass(frozen=True)
class MeasurementPlan:
    collective: str
    nodes: int
    ppn: int
    sizes: tuple[int, ...]
    repetitions: int
    stages: int
    time_per_size: float
    timeout_floor: float = TIMEOUT_FLOOR_SECONDS
    objective: str = DEFAULT_OBJECTIVE  # what a launch's t_max_us holds per size

    def blocks(self) -> list[tuple[int, ...]]:
        stages = max(1, min(self.stages, len(self.sizes)))
        return [tuple(int(s) for s in block)
                for block in np.array_split(np.array(sorted(self.sizes)), stages)]

    def launches(self, order: str = "blocks") -> list[PlannedLaunch]:
        """Every launch of a trial: block by block ("blocks": small sizes first, so a trial
        pruned early never pays for large ones), or round by round ("rounds": one launch of
        every block in turn, so any prefix of whole rounds scores every size)."""
        blocks = self.blocks()
        if order == "rounds":
            pairs = [(b, rep) for rep in range(self.repetitions) for b in range(len(blocks))]
        elif order == "blocks":
            pairs = [(b, rep) for b in range(len(blocks)) for rep in range(self.repetitions)]
        else:
            raise ValueError(f"unknown launch order {order!r}")
        return [PlannedLaunch(i, b, rep, blocks[b]) for i, (b, rep) in enumerate(pairs)]

    def timeout(self, launch: PlannedLaunch) -> float:
        # a non-blocking collective times its two loops (alone, overlapped) within this too
        per_size = self.time_per_size * 3 + SECONDS_PER_SIZE_ALLOWANCE
        return self.timeout_floor + per_size * len(launch.sizes)


@dataclass
class LaunchRecord:
    """One launch as it ran: enough to rerun it by hand and to audit its numbers."""

    index: int
    block: int
    rep: int
    seed: int
    sizes: list[int]
    argv: list[str]
    hosts: list[str]
    started: float
    seconds: float
    returncode: int | None
    # the scored quantity per size (MeasurementPlan.objective): the max-over-ranks time for
    # latency, t_ovrl or 2 - overlap%/100 for a non-blocking collective's other objectives
    t_max_us: dict[int, float] = field(default_factory=dict)
    iters: dict[int, int] = field(default_factory=dict)
    failure: str = ""
    kernel_started: float | None = None  # unix time rank 0 began (after MPI_Init)
    inherited_env_dropped: list[str] = field(default_factory=list)
    nbc: dict[int, NbcTiming] = field(default_factory=dict)  # IMB-NBC columns per size
    purpose: str = ""  # RESULT_CHECK: the checker's launch (no timings kept); "": a measurement

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        if not self.purpose:
            del data["purpose"]  # a measurement is stored as it always was
        data["t_max_us"] = {str(k): v for k, v in self.t_max_us.items()}
        data["iters"] = {str(k): v for k, v in self.iters.items()}
        if self.nbc:  # stored with the launch (storage: TrialRecord.nbc_samples reads it)
            data["nbc"] = {str(k): asdict(v) for k, v in self.nbc.items()}
        else:
            del data["nbc"]  # a blocking collective's launch is stored as it always was
        return data


class LaunchFailed(LaunchFailure):
    """A launch failed; carries its record so the trial keeps what ran and why it failed."""

    def __init__(self, failure: LaunchFailure, record: LaunchRecord) -> None:
        super().__init__(failure.reason, failure.detail, failure.stderr_tail)
        self.record = record


Executor = Callable[[Command, float], RunResult]


class Measurer:
    """Runs planned launches of a configuration through a launcher and a benchmark; knows
    nothing of Optuna. The executor runs the launcher's command: by default the node group's own
    (a real process with a deadline), or one injected for tests and recorded grids."""

    def __init__(self, plan: MeasurementPlan, launcher: Launcher | None, benchmark: Benchmark, *,
                 oversubscribe: bool = False, executor: Executor | None = None,
                 checker: Benchmark | None = None) -> None:
        self.plan = plan
        self.launcher = launcher
        self.benchmark = benchmark
        self.oversubscribe = oversubscribe
        self.executor = executor
        # checks the results of a configuration that `benchmark` (IMB) times without checking
        self.checker = checker

    def on(self, group) -> "Measurer":
        """The same plan, launched on one node group (launch.NodeGroup); run by the injected
        executor if there is one, else by the group (which can cancel its launches)."""
        return Measurer(self.plan, group, self.benchmark, oversubscribe=self.oversubscribe,
                        executor=self.executor or group.run, checker=self.checker)

    def with_benchmark(self, benchmark: Benchmark) -> "Measurer":
        """The same plan, launcher and executor, timed by another benchmark (IMB-MPI1 checking
        what the search's benchmark found, on the same nodes)."""
        return Measurer(self.plan, self.launcher, benchmark, oversubscribe=self.oversubscribe,
                        executor=self.executor)

    def check_results(self, settings: LaunchSettings, seed: int, *,
                      params: dict[str, Any] | None = None) -> LaunchRecord | None:
        """One launch of the checker on the configuration, every size of the plan: a wrong
        result fails it (`wrong-result`), as a launch of a benchmark that checks its own
        results would. Its timings are not kept; None without a checker."""
        if self.checker is None:
            return None
        checking = Measurer(replace(self.plan, time_per_size=CHECK_TIME_PER_SIZE), self.launcher,
                            self.checker, oversubscribe=self.oversubscribe,
                            executor=self.executor)
        launch = PlannedLaunch(index=-1, block=-1, rep=0, sizes=tuple(sorted(self.plan.sizes)))
        try:
            record = checking.run_launch(settings, launch, seed, params=params)
        except LaunchFailed as exc:
            exc.record.purpose = RESULT_CHECK
            raise
        record.t_max_us, record.iters, record.nbc = {}, {}, {}
        record.purpose = RESULT_CHECK
        return record

    def request(self, launch: PlannedLaunch, seed: int) -> BenchmarkRequest:
        return BenchmarkRequest(collective=self.plan.collective, sizes=launch.sizes,
                                ranks=self.plan.nodes * self.plan.ppn,
                                time_per_size=self.plan.time_per_size, seed=seed)

    def spec(self, settings: LaunchSettings, launch: PlannedLaunch, seed: int, *,
             params: dict[str, Any] | None = None, is_default: bool = False) -> LaunchSpec:
        return LaunchSpec(nodes=self.plan.nodes, ppn=self.plan.ppn,
                          program=self.benchmark.program(self.request(launch, seed)),
                          env=settings.env, mca=settings.mca, mpirun_args=settings.mpirun_args,
                          oversubscribe=self.oversubscribe,
                          params=tuple(sorted((params or {}).items())), is_default=is_default,
                          collective=self.plan.collective, sizes=launch.sizes)

    def run_launch(self, settings: LaunchSettings, launch: PlannedLaunch, seed: int, *,
                   params: dict[str, Any] | None = None, is_default: bool = False) -> LaunchRecord:
        """Run one launch; raise LaunchFailed (with the record) when it does not give clean data."""
        if self.launcher is None:
            raise RuntimeError("Measurer.on(group) first: a launch needs a launcher")
        spec = self.spec(settings, launch, seed, params=params, is_default=is_default)
        command = replace(self.launcher.command(spec), spec=spec)
        result = (self.executor or run_command)(command, self.plan.timeout(launch))
        record = LaunchRecord(index=launch.index, block=launch.block, rep=launch.rep, seed=seed,
                              sizes=list(launch.sizes), argv=list(command.argv),
                              hosts=list(command.hosts), started=result.started,
                              seconds=result.seconds, returncode=result.returncode,
                              inherited_env_dropped=list(result.extra.get("inherited_env_dropped", [])))
        try:
            failure = classify_failure(result)
            if failure:
                raise failure
            output = self.benchmark.parse_run(result.stdout, result.seconds,
                                              self.request(launch, seed))
            check_landing(output.hosts, self.launcher)
            scored = {s: size_quantity(t, self.plan.objective)
                      for s, t in output.timings.items()}
        except LaunchFailure as exc:
            record.failure = str(exc)
            raise LaunchFailed(exc, record) from None
        if output.hosts:  # the ranks' own word where the benchmark reports it
            record.hosts = list(output.hosts)
        record.kernel_started = output.started
        record.t_max_us = scored
        record.nbc = {s: t.nbc for s, t in output.timings.items() if t.nbc is not None}
        record.iters = {s: t.iters for s, t in output.timings.items()}
        return record


def check_landing(reported: tuple[str, ...], launcher: Launcher) -> None:
    """The ranks must have run on the nodes reserved for them (when the launcher knows their
    host names, as the Ray launcher does); anything else is the placement's fault."""
    expected = getattr(launcher, "host_names", lambda: ())()
    if expected and reported and set(reported) != set(expected):  # IMB does not say where
        raise LaunchFailure("infrastructure", f"ranks ran on {', '.join(sorted(set(reported)))} "
                            f"but the trial reserved {', '.join(sorted(expected))}")


# What stderr says about whose fault a failed launch is.
INFRASTRUCTURE_SIGNS = (
    "ORTE was unable to reliably start", "ORTE has lost communication", "ORTE daemon has unexpectedly",
    "daemon did not report back", "was unable to launch", "No route to host", "Connection refused",
    "Host key verification failed", "ssh:", "There are not enough slots", "srun: error",
    "Unable to allocate resources", "could not execute", "cannot start the launcher",
)
SIGNAL_SIGNS = ("Segmentation fault", "signal 11", "exited on signal", "Bus error", "core dumped",
                "Killed")
CONFIG_SIGNS = (
    "MPI_INIT failed", "MPI_Init", "PML add procs failed", "UCX  ERROR", "ucp_ep_create",
    "invalid value", "not a valid", "No components were able to be opened",
    "A requested component was not found", "unknown value", "Invalid value", "is not a known",
    "mca_base_var", "could not be found in the system",
)


def classify_failure(result: RunResult) -> LaunchFailure | None:
    """Why a finished launch cannot be used, as a reason class, or None when its output may be
    parsed. timeout: killed at the deadline. infrastructure: the launcher or a node failed, not
    the configuration (retried). config: MPI refused the configuration (never retried). crash:
    anything else that died, including garbage output. The parse of a clean exit may still fail
    it: crash (bad output) or wrong-result (the benchmark checked the collective's result and it
    was wrong; never retried, never exported)."""
    tail = result.stderr_tail()
    if result.extra.get("cancelled"):
        return LaunchFailure("interrupted", "launch stopped: autotune is shutting down", tail)
    if result.extra.get("node_lost"):
        return LaunchFailure("infrastructure", str(result.extra["node_lost"]), tail)
    if result.timed_out:
        return LaunchFailure("timeout", f"no result after {result.seconds:.0f} s; all processes killed",
                             tail)
    if "spawn_error" in result.extra:
        return LaunchFailure("infrastructure", f"cannot start {result.argv[0]}: "
                             f"{result.extra['spawn_error']}", tail)
    if result.output_truncated:
        return BenchmarkOutputError("output larger than the capture limit", tail)
    if result.returncode == 0:
        return None
    cause = first_cause(result.stderr)
    launcher = Path(result.argv[0]).name if result.argv else "the launcher"  # mpirun, srun, ...
    detail = f"{launcher} exited with code {result.returncode}" + (f": {cause[:200]}" if cause
                                                                   else "")
    if any(sign in result.stderr for sign in INFRASTRUCTURE_SIGNS):
        return LaunchFailure("infrastructure", detail, tail)
    if (result.returncode or 0) < 0 or any(sign in result.stderr for sign in SIGNAL_SIGNS):
        return LaunchFailure("crash", detail, tail)
    # MPI/UCX refusing the configuration, even when it surfaces as a Python traceback in a rank
    if any(sign in result.stderr for sign in CONFIG_SIGNS):
        return LaunchFailure("config", detail, tail)
    return LaunchFailure("crash", detail, tail)


_CAUSE_PATTERNS = (
    re.compile(r"UCX\s+ERROR\s+(.+)"),
    re.compile(r"\bError: (.+)"),
    re.compile(r"(\w+Error: .+)"),  # a Python exception in a rank
    re.compile(r"\*\*\* (An error occurred in .+)"),
    re.compile(r"(.*(?:error|failed|not found|No such file).*)", re.IGNORECASE),
)


def first_cause(stderr: str) -> str:
    """The line most likely to say why MPI failed, without the path and pid noise around it."""
    lines = stderr.splitlines()
    for pattern in _CAUSE_PATTERNS:
        for line in lines:
            match = pattern.search(line)
            if match:
                return match.group(1).strip()
    return ""


def check_app_metric(measurer: Measurer, settings: LaunchSettings) -> LaunchRecord:
    """An application study's first launch, of the untuned stack, before the search: it must run
    and print its metric, or the study would only collect failed trials (one line instead)."""
    launch = measurer.plan.launches()[0]
    try:
        return measurer.run_launch(settings, launch, seed=0, is_default=True)
    except LaunchFailed as exc:
        tail = exc.stderr_tail.strip().splitlines()[-1:] if exc.stderr_tail else []
        raise InputError(f"the untuned stack's launch of {measurer.benchmark.describe()} failed: "
                         f"{exc}" + (f" (last line: {tail[0][:200]})" if tail else "")) from None


def check_ucx_live(measurer: Measurer, settings: LaunchSettings,
                   params: dict[str, Any] | None = None) -> bool:
    """Prove UCX variables reach UCX on a configuration that runs pml ucx (`settings`, the
    default with pml ucx chosen where it is not in force). Control: it must run. Probe: with
    UCX_TLS=self two ranks cannot connect, so MPI_Init must fail, and with UCX's own complaint.
    If the probe runs fine, pml ucx is not in use and every UCX_* knob would be dead.
    Returns False when the check cannot apply (a single rank)."""
    plan = measurer.plan
    if plan.nodes * plan.ppn < 2:
        return False
    first = plan.launches()[0]
    launch = PlannedLaunch(index=0, block=0, rep=0, sizes=first.sizes[:1])
    try:
        measurer.run_launch(settings, launch, seed=0, params=params)
    except LaunchFailed as exc:
        raise EnvironmentProblem(f"a configuration with pml ucx does not run here ({exc}); "
                                 "remove the UCX knobs from the space") from None
    probe = LaunchSettings(env=tuple((k, v) for k, v in settings.env if k != "UCX_TLS")
                           + (("UCX_TLS", "self"),), mca=settings.mca,
                           mpirun_args=settings.mpirun_args)
    try:
        measurer.run_launch(probe, launch, seed=0, params={**(params or {}), "UCX_TLS": "self"})
    except LaunchFailed as exc:
        said = f"{exc.detail}\n{exc.stderr_tail}"
        if any(sign in said for sign in ("UCX", "ucp_", "Destination is unreachable")):
            return True
        raise EnvironmentProblem(f"a launch with UCX_TLS=self failed, but not in UCX ({exc}); "
                                 "cannot tell whether UCX knobs are live") from None
    raise EnvironmentProblem(
        "UCX settings have no effect here: a launch with UCX_TLS=self (which cannot connect two "
        "ranks) ran fine, so Open MPI is not using pml ucx. Check that choosing pml ucx in the "
        "space brings pml_ucx_devices=any and pml_ucx_tls=any (choice_implies)")
