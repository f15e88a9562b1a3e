"""A command-line option that a registry entry (a strategy, a benchmark, a launcher) declares for
itself: the CLI builds `start`'s options from the registries, so an entry's options live with the
entry, not in a hand-written list. The value lands in the StartOptions field of the same name
(typed there: the boundary stays a dataclass)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KINDS = ("str", "int", "float", "flag", "file")  # file: a path to an existing-or-not file


@dataclass(frozen=True)
class OptionSpec:
    """One option: its flag, the StartOptions field it fills, its help and its values."""

    flag: str  # "--imb-dir"
    help: str
    kind: str = "str"  # one of KINDS
    default: Any = None
    metavar: str | None = None
    low: float | None = None  # the smallest value allowed (int, float)
    high: float | None = None  # the largest
    open_low: bool = False  # low itself is not allowed
    open_high: bool = False
    show_default: bool = False
    field: str = ""  # the StartOptions field; "" : the flag's name with _ for -

    def __post_init__(self) -> None:
        if not self.flag.startswith("--") or self.kind not in KINDS:
            raise ValueError(f"option {self.flag!r}: a --flag of kind {', '.join(KINDS)}")

    @property
    def name(self) -> str:
        """The StartOptions field it fills."""
        return self.field or self.flag[2:].replace("-", "_")


def value_of(options: object, name: str, default: Any = None) -> Any:
    """The value `options` (a StartOptions, or anything with those fields) holds for the option
    `name`: a field of its own, else one of its `declared` pairs, else `default`."""
    declared = dict(getattr(options, "declared", ()) or ())
    return getattr(options, name, declared.get(name, default))


def values_of(specs: tuple[OptionSpec, ...], options: object) -> dict[str, object]:
    """The values `options` holds for `specs`, by name (value_of, the spec's default else)."""
    return {spec.name: value_of(options, spec.name, spec.default) for spec in specs}
