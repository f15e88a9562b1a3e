"""How a claimed gain reads next to what qualifies it: the independent check and the noise floor.
Shared by `status`, `best` and the export header, so all three say the same thing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .stats import systematic_text

if TYPE_CHECKING:
    from .noise import NoiseFloor
    from .storage import StoredVerification

BELOW_NOISE = ("the gain is below the noise floor: it shows only on average over many runs, "
               "not in a single run")


def interval_text(confidence: float, family: int, low: float, high: float,
                  systematic: float = 0.0, note: str = "") -> str:
    """`95% CI 1.034x..1.176x, simultaneous over 6`: a speedup interval and how to read it;
    with `systematic`, that it also holds the benchmark's uncertainty against IMB-MPI1 (a
    stand-in where `note` says it was not measured)."""
    return (f"{confidence:.0%} CI {low:.3f}x..{high:.3f}x"
            + (f", simultaneous over {family}" if family > 1 else "")
            + systematic_text(systematic, note))


def below_noise_floor(noise: NoiseFloor | None, claimed: float | None) -> bool:
    """Whether the claimed speedup lies within the noise floor."""
    return noise is not None and claimed is not None and claimed > 0 and noise.covers(claimed)


def verification_for(verification: StoredVerification | None, trial: int | None,
                     with_rules: bool | None = None) -> StoredVerification | None:
    """The stored check when it is of `trial` (the current best) as deployed now: an older one
    is of another configuration, and one of the trial with adopted per-size rules (or without,
    when `with_rules`) measured another deployment; neither says anything about this one."""
    if verification is None or trial is None or verification.trial != trial:
        return None
    if with_rules is not None and verification.measured.startswith("per-size rules") != with_rules:
        return None
    return verification


def trust_lines(claimed: float | None, verification: StoredVerification | None,
                noise: NoiseFloor | None) -> list[str]:
    """Lines under a claimed speedup (None: nothing claimed): the independent check, the noise
    floor, and whether the gain is below it."""
    lines = []
    if verification is not None:
        lines.append(verification.describe())
    if noise is not None:
        lines.append(noise.describe())
        if below_noise_floor(noise, claimed):
            lines.append(BELOW_NOISE)
    return lines
