"""`autotune grid record` (measure a small space exhaustively into a grid file) and `autotune
bench strategies` (replay strategies on a grid and print their regret and cost)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..benchmarks import AUTO_BENCHMARK, BENCHMARKS, COLLECTIVES, IMB_DIR, benchmark_help
from ..launch import BACKENDS
from ..strategy import STRATEGIES
from . import render
from .options import (declared_option, declared_options, launcher_option, name_value,
                      positive_float, sizes_option)


@click.group()
def grid() -> None:
    """Recorded grids: every configuration of a small space measured in passes."""


@grid.command("record")
@click.option("--collective", type=click.Choice(COLLECTIVES), required=True)
@click.option("--nodes", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--ppn", type=click.IntRange(min=1), default=None,
              help="ranks per node  [default: usable cores of this node]")
@click.option("--space", default="openmpi-ucx+openmpi-tuned", show_default=True,
              metavar="NAME|FILE", help="a small, finite space (a few values per knob)")
@click.option("--sizes", callback=sizes_option, metavar="MIN:MAX|LIST")
@click.option("--passes", type=click.IntRange(min=1), default=3, show_default=True,
              help="passes over every configuration, each in a fresh random order")
@click.option("--default-every", type=click.IntRange(min=0), default=4, show_default=True,
              help="measure the untuned default again before every this many configurations "
                   "(each group is a pass of its own: a replay pairs a configuration with the "
                   "default seconds before it); 0: once per pass")
@click.option("--benchmark", type=click.Choice((AUTO_BENCHMARK, *BENCHMARKS)),
              default=AUTO_BENCHMARK, show_default=True,
              help=f"what times the collective: {benchmark_help()}; a resumed grid keeps the "
                   "benchmark it names")
@declared_option(IMB_DIR)
@click.option("--time-per-size", type=float, default=0.02, show_default=True,
              callback=positive_float)
@click.option("--seed", type=int, default=0, show_default=True,
              help="the order of each pass (the same seed resumes in the same order)")
@launcher_option()
@declared_options(BACKENDS["hostfile"].cli_options)
@click.option("--launcher-mca", multiple=True, metavar="NAME=VALUE")
@click.option("--oversubscribe", is_flag=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True,
              help="grid file, .csv or .parquet; an existing one is resumed")
def grid_record(passes: int, seed: int, output: str, launcher_mca: tuple[str, ...],
                default_every: int, **fields) -> None:
    """Measure every configuration of the space in passes into a grid file (resumable)."""
    from ..recording import record_with
    from ..options import StartOptions

    options = StartOptions.of(**fields, launcher_mca=tuple(name_value(i) for i in launcher_mca),
                           check_live=False, confirm_top=0)

    def said(index: int, total: int, config, outcome: str) -> None:
        label = " ".join(f"{k}={v}" for k, v in config.key) or "the untuned default"
        render.err.print(f"[{index}/{total}] {label}: {outcome}", markup=False)

    progress, configs = record_with(options, passes, Path(output), seed, said, default_every)
    render.err.print(f"{output}: {configs} configurations x {passes} passes measured by "
                     f"{progress.benchmark}; {progress.done} "
                     f"launches recorded now, {progress.resumed} found from before, "
                     f"{len(progress.failed)} failed", markup=False)
    for line in progress.failed[:20]:
        render.err.print(f"  failed: {line}", markup=False)


@click.group()
def bench() -> None:
    """Benchmarks of autotune itself."""


def _names(_ctx, _param, value: str) -> list[str]:
    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown or not names:
        raise click.BadParameter(f"choose from {', '.join(STRATEGIES)}")
    return names


def _budgets(_ctx, _param, value: str) -> list[int]:
    try:
        budgets = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter("a list of trial counts such as 10,20,40") from None
    if not budgets or min(budgets) < 1:
        raise click.BadParameter("a list of positive trial counts such as 10,20,40")
    return budgets


@bench.command("strategies")
@click.option("--grid", "grid_path", type=click.Path(dir_okay=False, exists=True), required=True)
@click.option("--strategy", "strategies", default=",".join(STRATEGIES), show_default=True,
              callback=_names)
@click.option("--budget", "budgets", default="10,20,40,80", show_default=True,
              callback=_budgets, help="trials per run")
@click.option("--seeds", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
@click.option("--plot", type=click.Path(dir_okay=False), default=None,
              help="PNG: median regret vs size-launches, one line per strategy")
def bench_strategies(grid_path: str, strategies: list[str], budgets: list[int], seeds: int,
                     fmt: str, plot: str | None) -> None:
    """Replay strategies on a recorded grid: regret of the reported configuration and cost."""
    from ..replay import compare, plot_regret
    from ..storage import read_grid

    grid_data = read_grid(grid_path)
    figures, _ = compare(grid_data, strategies, budgets, seeds)
    if plot:
        plot_regret(figures, Path(plot), Path(grid_path).name)
    if fmt == "json":
        click.echo(json.dumps([f.to_dict() for f in figures], indent=2))
        return
    render.print_table(render.Table(
        columns=("strategy", "budget", "regret pp median", "regret pp p90", "launches",
                 "size-launches", "default reported"),
        rows=tuple((f.strategy, str(f.budget), f"{f.regret_pp_median:.1f}",
                    f"{f.regret_pp_p90:.1f}", f"{f.launches_median:.0f}",
                    f"{f.size_launches_median:.0f}", f"{f.default_reported_share:.0%}")
                   for f in figures),
        title=f"{grid_path}: {len(grid_data.t_us)} configurations"
              + (f" measured by {grid_data.benchmark}" if grid_data.benchmark else "")
              + f", {seeds} seeds"))
