"""Hand the best configuration back: an env file a user can `source` before running mpirun.

Exports exactly the settings the best trial ran with (stored with the trial), not a re-derivation
from a space file that may have changed since.
"""

from __future__ import annotations

import datetime as dt
import shlex
from dataclasses import dataclass

import optuna

from .errors import InputError, SpaceError, StorageError
from .space import check_args, check_name, check_value
from .storage import StudyConfig, stored_config
from .units import format_size

MPIRUN_ARGS_VAR = "AUTOTUNE_MPIRUN_ARGS"


@dataclass(frozen=True)
class BestConfig:
    study: str
    trial: int
    value: float
    speedup: float
    is_default: bool
    params: dict
    env: dict[str, str]
    mca: dict[str, str]
    mpirun_args: tuple[str, ...]
    host: dict
    context: dict
    config: StudyConfig | None
    n_complete: int
    confirmed: bool = False
    confirmed_speedup: tuple[float, float, float] | None = None  # speedup, CI low, CI high


def best_config(study: optuna.Study) -> BestConfig:
    complete = [t for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))]
    if not complete:
        raise InputError(f"study {study.study_name!r} has no completed trial yet")
    best = study.best_trial
    confirmation = study.user_attrs.get("autotune.confirmation")
    interval = None
    if confirmation:
        chosen = confirmation.get("best_trial")
        if chosen is None:  # confirmed: nothing beats the default
            best = next((t for t in complete if t.user_attrs.get("is_default")), best)
        else:
            best = study.trials[chosen]
            cand = next(c for c in confirmation["candidates"] if c["trial"] == chosen)
            interval = (cand["speedup"], *cand["speedup_interval"])
    settings = best.user_attrs.get("settings") or {}
    return BestConfig(study=study.study_name, trial=best.number, value=float(best.value),
                      speedup=float(best.user_attrs.get("speedup", 0.0)),
                      is_default=bool(best.user_attrs.get("is_default")), params=dict(best.params),
                      env=dict(settings.get("env", {})), mca=dict(settings.get("mca", {})),
                      mpirun_args=tuple(settings.get("mpirun_args", [])),
                      host=dict(best.user_attrs.get("host") or {}),
                      context=dict(best.user_attrs.get("context") or {}), config=stored_config(study),
                      n_complete=len(complete), confirmed=confirmation is not None,
                      confirmed_speedup=interval)


def describe_sizes(config: StudyConfig | None) -> str:
    if config is None:
        return "unknown sizes"
    sizes = config.sizes
    return f"{len(sizes)} sizes {format_size(sizes[0])}..{format_size(sizes[-1])}"


def check_exportable(best: BestConfig) -> None:
    """Names and values come from storage, which others may write (a shared database): check them
    against the same allow-lists as a search space before they reach a file someone will source."""
    try:
        for name, value in best.env.items():
            check_name("env", name, "stored trial")
            check_value("stored trial", name, value)
        for name, value in best.mca.items():
            check_name("mca", name, "stored trial")
            check_value("stored trial", name, value)
        check_args(list(best.mpirun_args), "stored trial")
    except SpaceError as exc:
        raise StorageError(f"trial {best.trial} of study {best.study} holds a setting that is not "
                           f"safe to export: {exc}") from None


def _printable(value: object) -> str:
    """Header fields come from storage and user input: one line of printable text, always."""
    return "".join(c if c.isprintable() else "?" for c in str(value))


def env_file(best: BestConfig, now: dt.datetime | None = None) -> str:
    check_exportable(best)
    now = now or dt.datetime.now(dt.timezone.utc)
    lines = _header(best, now)
    for name, value in sorted(best.env.items()):
        lines.append(f"export {name}={shlex.quote(value)}")
    for name, value in sorted(best.mca.items()):
        lines.append(f"export OMPI_MCA_{name}={shlex.quote(value)}")
    if best.env:
        forward = " ".join(f"-x {name}" for name in sorted(best.env))
        lines.append(f"# across nodes, mpirun forwards these only when asked: mpirun {forward} ...")
    if best.mpirun_args:
        lines.append(f"# mpirun options that no environment variable carries: "
                     f"mpirun ${MPIRUN_ARGS_VAR} ...")
        lines.append(f"export {MPIRUN_ARGS_VAR}={shlex.quote(' '.join(best.mpirun_args))}")
    return "\n".join(lines) + "\n"


def _header(best: BestConfig, now: dt.datetime) -> list[str]:
    config = best.config
    p = _printable
    lines = [
        f"# autotune: best configuration of study {p(best.study)}",
        f"# exported {now.strftime('%Y-%m-%d %H:%M:%S %Z')}",
    ]
    if config:
        lines.append(f"# {p(config.collective)} on {config.nodes} node(s) x {config.ppn} ranks per "
                     f"node, space {p(config.space)}")
        lines.append(f"# scored over {describe_sizes(config)}, weights: {p(config.weights_source)}")
    lines.append(f"# best of {best.n_complete} completed trials: trial {best.trial}, measured speedup "
                 f"{best.speedup:.3f}x over the default (weighted mean log-ratio {best.value:+.4f})")
    if best.confirmed_speedup:
        speed, low, high = best.confirmed_speedup
        lines.append(f"# confirmed against the default in interleaved rounds: speedup {speed:.3f}x "
                     f"(95% CI {low:.3f}x..{high:.3f}x)")
    if best.is_default:
        lines.append("# The default configuration is the best: no candidate beat it"
                     + (" beyond doubt in the confirmation" if best.confirmed else "")
                     + ". The lines below only restate it.")
    if best.host:
        lines.append(f"# measured on {p(best.host.get('host', '?'))}: {p(best.host.get('mpi', '?'))}, "
                     f"UCX {p(best.host.get('ucx') or 'n/a')}, {p(best.host.get('cpu_model', '?'))}"
                     + "".join(f", {p(k)}={p(v)}" for k, v in best.context.items()))
    return lines


EXPORTERS = {"env": env_file}
