"""Options and value parsers shared by several commands (parsing only: no work, no output)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any

import click

from ..errors import InputError
from ..optionspec import OptionSpec
from ..units import parse_size_range


def sizes_option(_ctx: Any, _param: Any, value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        return parse_size_range(value)
    except InputError as exc:
        raise click.BadParameter(str(exc)) from None


def positive_float(_ctx: Any, _param: Any, value: float | None) -> float | None:
    if value is not None and (not math.isfinite(value) or value <= 0):
        raise click.BadParameter(f"must be a positive number, got {value}")
    return value


def parse_duration(text: str) -> float:
    """90s, 45m, 2h, 1h30m, or plain seconds."""
    match = re.fullmatch(r"\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+)s?)?\s*", text or "")
    if not match or not any(match.groups()):
        raise click.BadParameter(f"{text!r} is not a duration such as 90m or 2h")
    hours, minutes, seconds = (int(g or 0) for g in match.groups())
    total = hours * 3600 + minutes * 60 + seconds
    if total <= 0:
        raise click.BadParameter("must be positive")
    return float(total)


def duration_option(_ctx: Any, _param: Any, value: str | None) -> float | None:
    return parse_duration(value) if value else None


def name_value(item: str) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    if not sep or not name or not value:
        raise InputError(f"--launcher-mca {item!r}: expected NAME=VALUE")
    return name, value


class LazyChoice(click.Choice):
    """A click.Choice whose choices are read when first needed (a registry that imports heavy
    modules, or that other code extends), not when the CLI is imported."""

    def __init__(self, load: Callable[[], Iterable[str]], case_sensitive: bool = True) -> None:
        self._load = load
        self._loaded: tuple[str, ...] | None = None
        self.case_sensitive = case_sensitive

    @property  # type: ignore[override]
    def choices(self) -> tuple[str, ...]:
        if self._loaded is None:
            self._loaded = tuple(self._load())
        return self._loaded


class LazyHelpOption(click.Option):
    """An option whose help text is made when help is shown (from a registry that imports heavy
    modules), not when the CLI is imported: pass `help_from=callable`."""

    def __init__(self, *args: Any, help_from: Callable[[], str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._help_from = help_from

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        if self.help is None:
            self.help = self._help_from()
        return super().get_help_record(ctx)


storage_option = click.option("--storage", metavar="URL", envvar="AUTOTUNE_STORAGE",
                              help="Optuna storage URL (sqlite:///..., postgresql://..., "
                                   "journal:PATH); default: SQLite under $AUTOTUNE_HOME")
def study_name_option(_ctx: Any, _param: Any, value: str | None) -> str | None:
    """An empty or blank --study is an error, never the default study (an unset variable in a
    script, `--study "$NAME"`, must not pick a study silently)."""
    if value is not None and not value.strip():
        raise InputError("--study: the study name must not be empty")
    return value


study_option = click.option("--study", "study_name", metavar="NAME", callback=study_name_option,
                            help="study name; may be omitted when the storage holds one study")


def format_option(*choices: str, default: str | None = None, help: str | None = None):
    """--format: `text` is a table on a terminal and tab-separated lines when piped."""
    return click.option("--format", "fmt", type=click.Choice(choices),
                        default=default or choices[0], show_default=True, help=help)


def launcher_option(help: str | None = None):
    """--launcher: auto, or one of the launcher registry's backends (launch.BACKENDS)."""
    from ..launch import BACKENDS

    return click.option("--launcher", type=click.Choice(["auto", *BACKENDS]), default="auto",
                        show_default=True, help=help)


def launch_with_option():
    """--launch-with: the launch methods the launcher registry's backends offer."""
    from ..launch import BACKENDS

    methods = list(dict.fromkeys(m for b in BACKENDS.values() for m in b.methods))
    able = [b.name for b in BACKENDS.values() if len(b.methods) > 1]
    return click.option("--launch-with", type=click.Choice(methods), default=methods[0],
                        show_default=True,
                        help=f"{' and '.join(able)} launcher: start ranks with "
                             f"{' or '.join(methods)}")


def open_study(storage_url: str | None, study_name: str | None):
    from ..storage import load_existing_study, open_storage

    storage = open_storage(storage_url, create=False)  # a reader never creates storage
    return load_existing_study(storage, study_name, storage_url)


def _finite(_ctx: Any, _param: Any, value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"must be a finite number, got {value}")
    return value


def declared_option(spec: OptionSpec) -> Callable[[Any], Any]:
    """The click option a registry entry declares (optionspec.OptionSpec)."""
    kwargs: dict[str, Any] = {"help": spec.help, "default": spec.default,
                              "show_default": spec.show_default}
    if spec.kind == "flag":
        kwargs.update(is_flag=True, default=bool(spec.default))
    else:
        kwargs["metavar"] = spec.metavar
    bounds = {"min": spec.low, "max": spec.high, "min_open": spec.open_low,
              "max_open": spec.open_high}
    if spec.kind == "int":
        kwargs["type"] = click.IntRange(**bounds)
    elif spec.kind == "float":
        kwargs.update(type=click.FloatRange(**bounds), callback=_finite)
    elif spec.kind == "file":
        kwargs["type"] = click.Path(dir_okay=False)
    return click.option(spec.flag, spec.name, **kwargs)


def declared_options(specs: Iterable[OptionSpec]) -> Callable[[Any], Any]:
    """Every option of `specs`, in their order."""
    def decorate(command: Any) -> Any:
        for spec in reversed(list(specs)):
            command = declared_option(spec)(command)
        return command
    return decorate


def registry_options() -> tuple[OptionSpec, ...]:
    """What the registries' entries declare for `start`: benchmarks, strategies, launchers (each
    flag once), so that an entry's options live with the entry."""
    from ..benchmarks import REGISTRY as BENCHMARKS
    from ..launch import BACKENDS
    from ..strategy import REGISTRY as STRATEGIES

    found: dict[str, OptionSpec] = {}
    for specs in ([k.cli_options for k in BENCHMARKS.values()]
                  + [s.cli_options for s in STRATEGIES.values()]
                  + [b.cli_options for b in BACKENDS.values()]):
        for spec in specs:
            found.setdefault(spec.flag, spec)
    return tuple(found.values())
