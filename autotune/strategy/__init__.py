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

STRATEGIES = ("screen", "tpe", "random", "grid", "staged")
DEFAULT_STRATEGY = "screen"

__all__ = ["DEFAULT_STRATEGY", "STRATEGIES", "GridStrategy", "RandomStrategy", "ScreenStrategy",
           "SearchSetup", "StagedStrategy", "Strategy", "TpeStrategy", "Verdict", "make_strategy"]


def make_strategy(name: str, *, seed: int | None = None, prune: bool = True,
                  prune_after: int = 4, p_threshold: float = 0.1) -> Strategy:
    from ..errors import InputError

    if name == "screen":
        return ScreenStrategy(seed, race=prune)
    if name == "tpe":
        return TpeStrategy(seed, prune=prune, prune_after=prune_after, p_threshold=p_threshold)
    if name == "random":
        return RandomStrategy(seed)
    if name == "grid":
        return GridStrategy(seed)
    if name == "staged":
        return StagedStrategy(seed)
    raise InputError(f"unknown strategy {name!r} (choose from {', '.join(STRATEGIES)})")
