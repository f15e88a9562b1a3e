"""`autotune grid record`: measure every configuration of a small, finite space, in passes, each
pass in a fresh random order with the untuned default in it, into a grid file (storage._grid).

The `pass` of a row is the unit of pairing: the machine moves between latency levels over
minutes (3x at small sizes here), so a replay pairs a candidate with the default of the same
pass. With `default_every` K, each pass over the configurations measures the default again
before every K of them, and each such group is a pass of its own (pass id = round x groups +
group): every configuration is then paired with a default launch seconds before it, as in a
study, also in a space whose full pass takes many minutes. Without it, the default is measured
once per pass, somewhere in it. Rows are appended and flushed launch by launch; a killed
recording resumes where it stopped (same order, nothing lost, nothing measured twice), and a
finished grid recorded into again gets only the passes it lacks.
"""

from __future__ import annotations

import fcntl
import math
import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .benchmarks import AUTO_BENCHMARK, auto_benchmark
from .errors import InputError
from .measure import LaunchFailed, MeasurementPlan, Measurer, PlannedLaunch
from .space import SearchSpace, TrialContext, assignments, is_choice
from .storage import Config, config_key, grid_rows, named_benchmark, read_grid

MAX_CONFIGS = 5000


@dataclass(frozen=True)
class GridConfig:
    params: dict[str, Any]  # as the space's sampler would give them
    key: Config  # the knobs set (values equal to the default are not set)


def grid_configs(space: SearchSpace, ctx: TrialContext,
                 context_values: dict[str, Any]) -> tuple[tuple[str, ...], list[GridConfig]]:
    """(knob columns, every distinct configuration), walking the conditional space as the
    sampler does; configurations that set the same knobs to the same values are one."""
    params_here = space.for_context(ctx)
    knobs = tuple(p.name for p in params_here if p.apply != "context")
    for p in params_here:
        if p.type == "int":
            raise InputError(f"grid record needs knobs with choices; {p.name} is an integer range")
    seen: dict[Config, GridConfig] = {}
    for params in assignments(params_here, context_values):
        key = config_key({p.name: ("" if is_choice(params[p.name], (p.default,)) else
                                   params[p.name]) for p in params_here
                          if p.name in params and p.apply != "context"})
        seen.setdefault(key, GridConfig(params=params, key=key))
        if len(seen) > MAX_CONFIGS:
            raise InputError(f"the space has more than {MAX_CONFIGS} configurations: restrict it "
                             "(a space file with a few values per knob)")
    return knobs, sorted(seen.values(), key=lambda c: c.key)


@dataclass
class RecordProgress:
    done: int = 0  # launches recorded in this run
    resumed: int = 0  # (configuration, pass) found in the file already
    failed: list[str] = field(default_factory=list)
    benchmark: str = ""  # what measured the launches (the file's `benchmark` column)


def record(output: Path, space: SearchSpace, ctx: TrialContext, context_values: dict[str, Any],
           plan: MeasurementPlan, measurer: Measurer, passes: int, seed: int,
           on_launch: Callable[[int, int, GridConfig, str], None] | None = None,
           default_every: int = 0, benchmark: str = "") -> RecordProgress:
    """Record `passes` passes into `output` (CSV rows appended; .parquet written at the end from
    a .partial.csv beside it). `measurer` is bound to the node group to use; `default_every`:
    see the module's docstring (0: once per pass); `benchmark`: the name of what measures, written
    into the file's `benchmark` column (a file that names another one is not resumed)."""

    knobs, configs = grid_configs(space, ctx, context_values)
    csv_path = recording_path(output)
    lock_path = output.with_name(output.name + ".lock")
    with open(lock_path, "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(f"{output} is being recorded by another process") from None
        try:
            reopen_finished(output)
            return _record_locked(output, csv_path, knobs, configs, space, ctx, plan, measurer,
                                  passes, seed, on_launch, default_every, benchmark)
        finally:
            lock_path.unlink(missing_ok=True)


def recording_path(output: Path) -> Path:
    """The CSV file rows are appended to: the grid itself, or a .partial.csv beside a .parquet
    one until the recording ends."""
    if output.suffix not in (".csv", ".parquet"):
        raise InputError(f"-o {output}: a grid is a .csv or .parquet file")
    return output if output.suffix == ".csv" else output.with_suffix(".partial.csv")


def reopen_finished(output: Path) -> None:
    """A finished .parquet grid recorded into again is resumed, not overwritten: its rows go back
    into the .partial.csv beside it (written aside, then renamed), so the passes it holds count
    as done and only missing ones are measured. Nothing to do for a CSV grid, a new file, or a
    recording already under way."""
    import pandas as pd

    partial = recording_path(output)
    if output.suffix != ".parquet" or not output.exists() or partial.exists():
        return
    try:
        frame = pd.read_parquet(output)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read grid {output}: {exc}") from None
    aside = partial.with_name(f".{partial.name}.{os.getpid()}")
    frame.astype(str).to_csv(aside, index=False)
    os.replace(aside, partial)


def benchmark_for(output: Path, asked: str, found_here: Callable[[], str]) -> str:
    """The benchmark a recording into `output` uses: `asked`, or for `auto` the one the grid
    being resumed names, else `found_here()` (IMB where it is found, else the kernel). One grid
    is measured by one benchmark: resuming it with another is refused, and a grid recorded
    before grids named theirs is resumed only with its benchmark given."""
    named = named_benchmark(recording_path(output))
    if named is None:  # a new grid
        return found_here() if asked == AUTO_BENCHMARK else asked
    if not named:
        if asked == AUTO_BENCHMARK:
            raise InputError(f"{output} does not name the benchmark that measured it (recorded "
                             "before grids named theirs): resume it with the --benchmark it was "
                             "recorded with")
        return asked
    if asked not in (AUTO_BENCHMARK, named):
        raise _measured_otherwise(output, named, asked)
    return named


def _measured_otherwise(output: Path, named: str, asked: str) -> InputError:
    return InputError(f"{output} was measured with --benchmark {named}, not {asked}: resume it "
                      "with that benchmark, or record into another file")


def schedule(configs: list[GridConfig], passes: int, seed: int,
             default_every: int) -> list[list[tuple[int, GridConfig]]]:
    """Per round over the configurations, the (pass id, configuration) launches in order, the
    same for the same seed (a resumed recording follows it again)."""
    default = next((c for c in configs if not c.key), None)
    others = [c for c in configs if c.key]
    groups = math.ceil(len(others) / default_every) if default_every > 0 else 1
    rounds = []
    for round_ in range(passes):
        rng = random.Random(seed * 1000 + round_)
        if default_every <= 0:
            order = list(configs)
            rng.shuffle(order)
            rounds.append([(round_, c) for c in order])
            continue
        order = list(others)
        rng.shuffle(order)
        launches = []
        for g in range(groups):
            pass_id = round_ * groups + g
            if default is not None:
                launches.append((pass_id, default))
            launches += [(pass_id, c) for c in order[g * default_every:(g + 1) * default_every]]
        rounds.append(launches)
    return rounds


def _record_locked(output, csv_path, knobs, configs, space, ctx, plan, measurer, passes, seed,
                   on_launch, default_every, benchmark) -> RecordProgress:  # noqa: ANN001
    """The recording itself, under the file's lock: resume, then pass after pass."""
    import pandas as pd

    done = _recorded(csv_path if csv_path.exists() else None, knobs, plan.sizes)
    named = named_benchmark(csv_path)  # again under the lock: benchmark_for ran before it, and
    if named and benchmark and named != benchmark:  # another recording may have begun the file
        raise _measured_otherwise(output, named, benchmark)
    column = "" if named == "" else benchmark  # an older grid's rows keep its columns
    progress = RecordProgress(resumed=len(done), benchmark=benchmark or named or "")
    plan_ = schedule(configs, passes, seed, default_every)
    total = sum(len(r) for r in plan_)
    launch = PlannedLaunch(index=0, block=0, rep=0, sizes=plan.sizes)
    write_header = not csv_path.exists() or csv_path.stat().st_size == 0
    with open(csv_path, "a", newline="") as handle:
        for round_, launches in enumerate(plan_):
            rng = random.Random(seed * 1000 + round_ + 7919)  # launch seeds, also when resumed
            for pass_, config in launches:
                if (config.key, pass_) in done:
                    continue
                settings = space.settings(config.params, ctx)
                try:
                    result = measurer.run_launch(settings, launch, rng.randrange(2**31),
                                                 params=config.params, is_default=not config.key)
                except LaunchFailed as exc:
                    progress.failed.append(f"pass {pass_}: {_label(config.key)}: {exc}")
                    if on_launch:
                        on_launch(len(done) + progress.done, total, config, f"failed: {exc}")
                    continue
                rows = grid_rows(config.key, knobs, pass_, result.started, result.t_max_us,
                                 column)
                pd.DataFrame(rows).to_csv(handle, header=write_header, index=False)
                write_header = False
                handle.flush()
                os.fsync(handle.fileno())
                progress.done += 1
                if on_launch:
                    on_launch(len(done) + progress.done, total, config, "ok")
    if output.suffix == ".parquet":
        pd.read_csv(csv_path, dtype=str, keep_default_na=False).to_parquet(output, index=False)
        csv_path.unlink()
    return progress


def _recorded(path: Path | None, knobs: tuple[str, ...],
              sizes: tuple[int, ...]) -> set[tuple[Config, int]]:
    """(configuration, pass) already complete in the file; its columns must be this space's
    knobs. What a kill cut short (a torn last line, a launch with only some of its sizes) is
    removed from the file, so it is measured again and never counted twice."""
    import pandas as pd

    if path is None:
        return set()
    text = path.read_text()
    if text and not text.endswith("\n"):
        text = text[:text.rfind("\n") + 1]  # a torn last line: the launch is redone
        path.write_text(text)
    if not text.strip():
        return set()
    grid = read_grid(path)
    if set(grid.knobs) != set(knobs):
        raise InputError(f"{path} holds knobs {', '.join(grid.knobs)}, not this space's "
                         f"({', '.join(knobs)}): record into another file")
    complete = {(config, pass_) for config, passes in grid.t_us.items()
                for pass_, measured in passes.items() if set(measured) == set(sizes)}
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    keep = [(config_key({k: row[k] for k in grid.knobs}), int(row["pass"])) in complete
            for _, row in frame.iterrows()]
    if not all(keep):
        frame[keep].to_csv(path, index=False)
    return complete


def _label(key: Config) -> str:
    return " ".join(f"{k}={v}" for k, v in key) or "the untuned default"



def record_with(options: Any, passes: int, output: Path, seed: int,
                on_launch: Callable[[int, int, GridConfig, str], None] | None = None,
                default_every: int = 0) -> tuple[RecordProgress, int]:
    """`grid record` from start-like options: the same checks, launcher, node probe and space
    resolution as `autotune start`; returns the progress and the number of configurations."""
    from .launch import make_pool
    from .probe import probe_host
    from .checks import check_cores
    from .checks import probe_nodes
    from .session import preflight
    from .space import family_of, load_space, resolve

    reopen_finished(output)
    benchmark = benchmark_for(output, options.benchmark, lambda: auto_benchmark(
        options, options.collective, family_of(load_space(options.space).stack)))
    options = replace(options, benchmark=benchmark)
    checked = preflight(options)
    pool, _ = make_pool(options, checked.caps, checked.launcher, checked.why)
    try:
        if checked.launcher == "local":
            caps, host = checked.caps, probe_host(checked.caps)
        else:
            caps, host = probe_nodes(pool, checked.caps.mpi_family)
        check_cores(options, checked.ppn, host)
        ctx = TrialContext(options.collective, options.nodes)
        resolved = resolve(checked.space, caps, ctx)
        plan = MeasurementPlan(collective=options.collective, nodes=options.nodes,
                               ppn=checked.ppn, sizes=checked.sizes.sizes, repetitions=1,
                               stages=1, time_per_size=options.time_per_size,
                               timeout_floor=options.timeout_floor)
        measurer = Measurer(plan, None, checked.benchmark, oversubscribe=options.oversubscribe)
        _, configs = grid_configs(resolved.space, ctx, resolved.context_values)
        group = pool.acquire()
        try:
            progress = record(output, resolved.space, ctx, resolved.context_values, plan,
                              measurer.on(group), passes, seed, on_launch, default_every,
                              benchmark)
        finally:
            pool.release(group)
        return progress, len(configs)
    finally:
        pool.close()
