"""`autotune verify`: check the exported best against the untuned stack with another benchmark
than the search used (see autotune.endgame.verify)."""

from __future__ import annotations

import click

from ..benchmarks import BENCHMARKS, IMB_DIR, REGISTRY, partner_help
from ..launch import BACKENDS
from . import render
from .models import Message, VerifyReport
from .options import (declared_option, declared_options, format_option, launcher_option,
                      name_value, open_study, storage_option, study_option)


@click.command()
@click.option("--benchmark", type=click.Choice(BENCHMARKS), default=None,
              help="what measures the check  [default: the search benchmark's partner: "
                   + partner_help() + " (its own again, said so, when none is found)]")
@declared_option(IMB_DIR)
@click.option("--rounds", type=click.IntRange(min=2), default=20, show_default=True,
              help="interleaved rounds (per size block the default, then the best, on the same "
                   "nodes)")
@click.option("--seed", type=int, default=None, help="seed of the order within rounds")
@launcher_option(help="as for `autotune start`: use the same")
@declared_options(BACKENDS["hostfile"].cli_options)
@click.option("--launcher-mca", multiple=True, metavar="NAME=VALUE",
              help="site MCA settings, as given to `autotune start`")
@click.option("--oversubscribe", is_flag=True)
@click.option("--timeout-floor", type=click.FloatRange(min=1), default=None,
              help="seconds a launch may take before it is killed, as given to `autotune start` "
                   "(an application that runs longer needs it)  [default: 60]")
@declared_options(REGISTRY["app"].cli_options)
@format_option("text", "json")
@study_option
@storage_option
@click.argument("app_command", nargs=-1, type=click.UNPROCESSED, metavar="[-- PROGRAM ARGS...]")
def verify(benchmark: str | None, imb_dir: str | None, rounds: int, seed: int | None,
           launcher: str, hostfile: str | None, launcher_mca: tuple[str, ...],
           oversubscribe: bool, timeout_floor: float | None, metric: str | None,
           higher_is_better: bool, fmt: str,
           study_name: str | None, storage: str | None, app_command: tuple[str, ...]) -> None:
    """Measure the exported best against the untuned stack with an independent benchmark, store
    the result, and say whether it backs the search's claim (export follows it). A study of an
    application is checked with the application again: give its command after -- and its
    --metric, as to `start` (autotune never runs a command read from the study)."""
    from ..storage import default_storage_url
    from ..endgame.verify import NothingToVerify, VerificationFailed
    from ..endgame.verify_run import VerifyRequest, run_verify

    study = open_study(storage, study_name)
    request = VerifyRequest(study=study, storage_url=storage or default_storage_url(),
                            benchmark=benchmark, imb_dir=imb_dir, rounds=rounds, seed=seed,
                            launcher=launcher, hostfile=hostfile,
                            launcher_mca=tuple(name_value(i) for i in launcher_mca),
                            oversubscribe=oversubscribe, app_command=tuple(app_command),
                            metric=metric, higher_is_better=higher_is_better,
                            timeout_floor=timeout_floor)
    try:
        result = run_verify(request, on_start=lambda line: render.err.print(line, markup=False),
                            on_round=_progress)
    except NothingToVerify as exc:  # exit 0: there is no claim to check
        if fmt == "json":
            import json

            render.write_text(json.dumps({"study": study.study_name, "verified": False,
                                          "text": str(exc)}) + "\n")
        else:
            render.emit(Message(str(exc)))
        return
    render.emit(VerifyReport(study.study_name, result), fmt)
    if result.failed:
        raise VerificationFailed(result.describe())


def _progress(done: int, total: int) -> None:
    if done == total or done % 5 == 0:
        render.err.print(f"round {done}/{total}", markup=False)
