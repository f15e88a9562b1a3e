"""Strategies, benchmarks and launchers declare their own `start` options (optionspec.OptionSpec):
the CLI builds them from the registries, each fills the StartOptions field of its name, and no
command writes one of them by hand."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import click
from click.testing import CliRunner
import pytest

from autotune.benchmarks import REGISTRY as BENCHMARKS
from autotune.cli.main import cli
from autotune.cli.options import declared_options, registry_options
from autotune.launch import BACKENDS
from autotune.optionspec import OptionSpec
from autotune.options import StartOptions
from autotune.strategy import REGISTRY as STRATEGIES
from autotune.strategy import RandomStrategy, make_strategy

CLI = Path(__file__).resolve().parents[2] / "autotune" / "cli"


def test_every_declared_option_is_a_start_option_and_reaches_the_options():
    start = {p.name: p for p in cli.commands["start"].params}
    declared = registry_options()
    assert {"--imb-dir", "--prune-after", "--ray-address", "--hostfile"} <= {s.flag for s in declared}
    for spec in declared:
        assert spec.name in start and spec.flag in start[spec.name].opts, spec.flag
        assert start[spec.name].default == spec.default or spec.kind == "flag"
    given = StartOptions.of(collective="allreduce", imb_mem_gb=2.0, prune_after=6,
                            ray_resource="gpu_node")
    assert (given.imb_mem_gb, given.prune_after, given.ray_resource) == (2.0, 6, "gpu_node")
    assert given.declared == ()  # the shipped entries' options have typed fields


def test_no_command_writes_a_declared_option_by_hand():
    source = "\n".join(p.read_text() for p in CLI.glob("*.py"))
    for spec in registry_options():
        assert f'"{spec.flag}"' not in source, f"{spec.flag} is written out in autotune/cli"


def test_a_new_strategy_brings_its_option_with_it(monkeypatch):
    class Patient(RandomStrategy):
        name = "patient"
        cli_options = (OptionSpec("--patience", "trials to wait", kind="int", default=3, low=1),)

        @classmethod
        def from_options(cls, seed, *, prune=True, patience=3, **_):
            made = cls(seed)
            made.patience = patience
            return made

    monkeypatch.setitem(STRATEGIES, "patient", Patient)
    assert "--patience" in {s.flag for s in registry_options()}
    assert make_strategy("patient", options=SimpleNamespace(patience=7)).patience == 7
    assert make_strategy("patient").patience == 3  # no options: the declared default
    # no StartOptions field for it: the command line's value still reaches the strategy
    options = StartOptions.of(collective="allreduce", strategy="patient", patience=9)
    assert options.declared == (("patience", 9),)
    assert make_strategy("patient", options=options).patience == 9

    @click.command()
    @declared_options(Patient.cli_options)
    def command(patience):
        click.echo(patience)

    runner = CliRunner()
    assert runner.invoke(command, ["--patience", "5"]).output == "5\n"
    refused = runner.invoke(command, ["--patience", "0"])
    assert refused.exit_code == 2 and "0 is not in the range x>=1" in refused.output


def test_entries_declare_only_what_they_use():
    assert {s.name for s in BENCHMARKS["imb"].cli_options} == {
        "imb_dir", "imb_mem_gb", "imb_off_cache", "numactl"}
    assert BENCHMARKS["mpi4py"].cli_options == ()
    assert {s.flag for s in STRATEGIES["tpe"].cli_options} == {"--prune-after", "--p-threshold"}
    assert BACKENDS["ray"].flag == "--ray-address" and BACKENDS["hostfile"].flag == "--hostfile"
    with pytest.raises(ValueError):
        OptionSpec("imb-dir", "no leading dashes")


def test_a_new_benchmark_gets_its_declared_option_too(monkeypatch):
    from autotune.benchmarks import BenchmarkKind, Mpi4pyBenchmark, configured_benchmark

    made = []

    def make(**options):
        made.append(options)
        return Mpi4pyBenchmark()

    monkeypatch.setitem(BENCHMARKS, "other", BenchmarkKind(
        "other", "the other benchmark", "another benchmark", partners=("mpi4py",), make=make,
        stored_prefix="Other", cli_options=(OptionSpec("--other-dir", "where it is"),),
        locates="other_dir"))
    options = StartOptions.of(collective="allreduce", benchmark="other", other_dir="/opt/other")
    configured_benchmark("other", options, collective="allreduce")
    assert made == [{"collective": "allreduce", "family": None, "other_dir": "/opt/other"}]
    assert BENCHMARKS["other"].location(options) == {"other_dir": "/opt/other"}
