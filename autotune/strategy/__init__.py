"""Search strategies by name: how configurations are proposed, pruned and picked for
confirmation: screen (the default: one-knob screening, a model of main effects and pairs, racing),
tpe, random, grid (exhaustive), staged (the manual method of seeds/000, as a yardstick)."""

from __future__ import annotations

from ._base import SearchSetup, Strategy, Verdict
from ._grid import GridStrategy
from ._random import RandomStrategy
from ._screen import ScreenStrategy
from ._staged import StagedStrategy
from ._tpe import TpeStrategy

# The registry: a new strategy is one module and one entry here (the CLI's choices and help
# come from it). The first is the default.
REGISTRY: dict[str, type[Strategy]] = {cls.name: cls for cls in (
    ScreenStrategy, TpeStrategy, RandomStrategy, GridStrategy, StagedStrategy)}
STRATEGIES = tuple(REGISTRY)
DEFAULT_STRATEGY = STRATEGIES[0]

__all__ = ["DEFAULT_STRATEGY", "REGISTRY", "STRATEGIES", "GridStrategy", "RandomStrategy",
           "ScreenStrategy", "SearchSetup", "StagedStrategy", "Strategy", "TpeStrategy",
           "Verdict", "make_strategy", "prune_help", "strategy_help"]


def make_strategy(name: str, *, seed: int | None = None, prune: bool = True,
                  options: object = None) -> Strategy:
    """The strategy `name`, made with --prune and the values `options` (StartOptions, or
    anything with those fields; None: their defaults) holds for the options it declares."""
    from ..errors import InputError
    from ..optionspec import values_of

    if name not in REGISTRY:
        raise InputError(f"unknown strategy {name!r} (choose from {', '.join(REGISTRY)})")
    cls = REGISTRY[name]
    return cls.from_options(seed, prune=prune, **values_of(cls.cli_options, options))


def strategy_help() -> str:
    """Every strategy with its one phrase, for `--strategy`."""
    return "; ".join(f"{name} ({cls.summary})" for name, cls in REGISTRY.items())


def prune_help() -> str:
    """How each strategy that prunes does it, for `--prune`."""
    return "; ".join(f"{name}: {cls.prunes}" for name, cls in REGISTRY.items() if cls.prunes)
