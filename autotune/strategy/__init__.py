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
           "Verdict", "make_strategy", "strategy_help"]


def make_strategy(name: str, *, seed: int | None = None, prune: bool = True,
                  prune_after: int = 4, p_threshold: float = 0.1) -> Strategy:
    from ..errors import InputError

    if name not in REGISTRY:
        raise InputError(f"unknown strategy {name!r} (choose from {', '.join(REGISTRY)})")
    return REGISTRY[name].from_options(seed, prune=prune, prune_after=prune_after,
                                       p_threshold=p_threshold)


def strategy_help() -> str:
    """Every strategy with its one phrase, for `--strategy`."""
    return "; ".join(f"{name} ({cls.summary})" for name, cls in REGISTRY.items())
