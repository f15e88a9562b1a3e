"""Search strategies by name: how configurations are proposed, pruned and picked for
confirmation. Today: tpe (the default). Random, grid and the staged sweep plug in here."""

from __future__ import annotations

from ._base import Strategy
from ._tpe import TpeStrategy

STRATEGIES = ("tpe",)

__all__ = ["STRATEGIES", "Strategy", "TpeStrategy", "make_strategy"]


def make_strategy(name: str, *, seed: int | None = None, prune: bool = True,
                  prune_after: int = 4, p_threshold: float = 0.1) -> Strategy:
    from ..errors import InputError

    if name == "tpe":
        return TpeStrategy(seed, prune=prune, prune_after=prune_after, p_threshold=p_threshold)
    raise InputError(f"unknown strategy {name!r} (choose from {', '.join(STRATEGIES)})")
