"""`autotune verify`, run on its own after a study: refuse while the study's daemon runs (and
hold its lock meanwhile), put the nodes together as `start` does, and check the exported best
with the partner benchmark (verify.verify_on)."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

import optuna

from ..errors import InputError
from ..measure import Measurer
from ..storage import StoredVerification, stored_config
from .partner import BenchmarkChoice, choose_benchmark, search_benchmark
from .verify import NOTHING_TO_VERIFY, NothingToVerify, plan_of, verify_on


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
    app_command: tuple[str, ...] = ()  # an application study: its program, given again
    metric: str | None = None
    higher_is_better: bool = False
    timeout_floor: float | None = None  # seconds a launch may take (None: the default minute)


def run_verify(request: VerifyRequest, *, on_start: Callable[[str], None] | None = None,
               on_round: Callable[[int, int], None] | None = None) -> StoredVerification:
    """`autotune verify`: refuse while the study's daemon runs (and hold its lock meanwhile),
    put the nodes together as `start` does, and check the exported best (verify_on)."""
    from ..daemon import Owner, StudyLock
    from ..export import best_config
    from ..launch import check_launch_tool, make_pool, pick_launcher
    from ..options import StartOptions
    from ..probe import probe_capabilities

    study = request.study
    config = stored_config(study)
    if config is None:
        raise InputError(f"study {study.study_name!r} has no stored configuration (not made by "
                         "`autotune start`)")
    if best_config(study).is_default:
        raise NothingToVerify(NOTHING_TO_VERIFY)
    # IMB from --imb-dir or PATH, never from a path stored in the study: a shared storage is
    # written by others, and this command would run what it names
    if search_benchmark(config) == "app" or request.app_command:
        choice = _application(request, config)
    else:
        choice = choose_benchmark(search_benchmark(config), request.benchmark, located=request,
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
        caps = probe_capabilities(_family_of(study))
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
                measurer = Measurer(plan_of(config, request.timeout_floor), None,
                                    choice.benchmark,
                                    oversubscribe=request.oversubscribe).on(group)
                return verify_on(study, measurer, choice, request.rounds, request.seed,
                                 on_round=on_round)
            finally:
                pool.release(group)
        finally:
            pool.close()
    finally:
        lock.release()


def _family_of(study) -> str | None:
    """The MPI the study ran (its fingerprint says, e.g. "MPICH 4.0.2"): where both are installed
    the check must launch the same one."""
    from ..storage import FINGERPRINT_ATTR

    mpi = str(study.user_attrs.get(FINGERPRINT_ATTR, {}).get("mpi", ""))
    return "mpich" if "MPICH" in mpi else None


def _application(request: VerifyRequest, config) -> BenchmarkChoice:
    """An application study is checked with the application again, in fresh interleaved rounds;
    the command comes from this command line, never from the (possibly shared) study, and must
    be the one the study measured."""
    from ..benchmarks import make_benchmark

    if search_benchmark(config) != "app":
        raise InputError("a program after -- is for a study of --benchmark app; this study "
                         f"measured {config.benchmark}")
    if request.benchmark not in (None, "app"):
        raise InputError(f"--benchmark {request.benchmark}: this study measured an application; "
                         "it is checked with the application again")
    if not request.app_command:
        raise InputError("this study measured an application: give its command after -- and "
                         "its --metric, as to `autotune start` (autotune does not run a command "
                         "read from the study)")
    bench = make_benchmark("app", app_command=request.app_command, metric=request.metric,
                           higher_is_better=request.higher_is_better)
    bench.check()
    if bench.describe() != config.benchmark:
        raise InputError(f"the study measured {config.benchmark}; this is {bench.describe()}")
    return BenchmarkChoice(bench, False, "an application is checked with itself: fresh "
                           "interleaved rounds, not an independent benchmark")
