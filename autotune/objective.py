"""Pure statistics of a trial's score: trimmed means, log-ratios to the default, size weights.

Each launch of a configuration is paired with the launch of the default configuration measured
right before it (the baseline nearest in time). Per size, the score is the trimmed mean over the R
launches of log(t_config / t_default); the trial's value is the weighted mean over sizes.
Lower is better; users see speedup = exp(-value). Pairing matters: a machine-wide level shift
between two launches then spoils one pair, which the trimmed mean drops, instead of biasing
every size.

What is scored per size (`--objective`, `size_quantity`): the collective's time (latency, t_max
over ranks; for a non-blocking collective its t_pure, the collective alone), t_ovrl (a
non-blocking collective started, a CPU load as long as it, then waited for) or the exposed
share of it (overlap: 2 - overlap%/100, 1 when the CPU load hid it all, 2 when it hid nothing;
positive, so the ratio to the default scores it as it scores times).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import yaml

from .collectives import SizeTiming, is_nonblocking
from .errors import BenchmarkOutputError, InputError
from .units import parse_size

OBJECTIVES = ("latency", "overlap", "t_ovrl")
DEFAULT_OBJECTIVE = "latency"


def check_objective(collective: str, objective: str) -> None:
    """InputError unless `objective` can be scored for `collective` (overlap and t_ovrl exist
    only for the non-blocking collectives)."""
    if objective not in OBJECTIVES:
        raise InputError(f"--objective {objective!r}: choose from {', '.join(OBJECTIVES)}")
    if objective != DEFAULT_OBJECTIVE and not is_nonblocking(collective):
        raise InputError(f"--objective {objective} needs a non-blocking collective (e.g. "
                         f"--collective i{collective}); {collective} is scored on latency only")


def exposed_share(overlap_pct: float) -> float:
    """The overlap objective's quantity: 2 - overlap%/100, 1 (all hidden) .. 2 (none hidden)."""
    return 2.0 - max(0.0, min(100.0, overlap_pct)) / 100.0


def size_quantity(timing: SizeTiming, objective: str) -> float:
    """What is scored for one size (lower is better, always positive); a non-blocking
    objective on a timing without IMB-NBC columns is damaged output."""
    if objective == DEFAULT_OBJECTIVE:
        return timing.t_max_us
    if timing.nbc is None:
        raise BenchmarkOutputError(f"size {timing.size}: no t_ovrl/overlap columns to score "
                                   f"--objective {objective}")
    if objective == "t_ovrl":
        return timing.nbc.t_ovrl_us
    if objective == "overlap":
        return exposed_share(timing.nbc.overlap_pct)
    raise ValueError(f"unknown objective {objective!r}")


def trimmed_mean(values: Iterable[float]) -> float:
    """Mean after dropping one minimum and one maximum (seeds/000: 5 runs -> mean of middle 3).

    With fewer than 3 values nothing can be dropped and the plain mean is returned.
    """
    data = np.sort(np.asarray(list(values), dtype=float))
    if data.size == 0:
        raise ValueError("trimmed_mean of no values")
    if data.size >= 3:
        data = data[1:-1]
    return float(data.mean())


def log_ratio(t_config: float, t_default: float) -> float:
    """Per-size score: negative when the config is faster than the default."""
    if t_config <= 0 or t_default <= 0:
        raise ValueError("times must be positive")
    return math.log(t_config / t_default)


def uniform_weights(sizes: Iterable[int]) -> dict[int, float]:
    """Equal weight per size; sizes are powers of two, so this is uniform over log2(size)."""
    sizes = sorted(set(sizes))
    return {size: 1.0 / len(sizes) for size in sizes}


def normalize_weights(weights: Mapping[int, float]) -> dict[int, float]:
    total = sum(weights.values())
    if total <= 0:
        raise InputError("weights must contain at least one positive value")
    return {size: w / total for size, w in sorted(weights.items()) if w > 0}


def weighted_score(scores: Mapping[int, float], weights: Mapping[int, float]) -> float:
    """Weighted mean of per-size scores over the sizes present in `scores`."""
    used = [size for size in scores if weights.get(size, 0.0) > 0]
    if not used:
        raise ValueError("no weighted size has a score")
    total = sum(weights[s] for s in used)
    return sum(weights[s] * scores[s] for s in used) / total


def speedup(value: float) -> float:
    """Speedup over the default as users read it: 1.25 means 25 % faster."""
    return math.exp(-value)


def paired_scores(config_raw: Mapping[int, list[float]],
                  default_raw: Mapping[int, list[float]]) -> dict[int, float]:
    """Per size: trimmed mean over launches of log(t_config / t_default of the paired launch)."""
    scores = {}
    for size, values in config_raw.items():
        defaults = default_raw.get(size, [])
        if not values or len(defaults) != len(values):
            continue
        scores[size] = trimmed_mean(log_ratio(c, d) for c, d in zip(values, defaults))
    return scores


def load_weights(path: str | Path) -> dict[int, float]:
    """Read a size -> weight file (YAML mapping, optionally under `weights:`, or CSV size,weight).

    Typically derived from an application profile: the share of time the application spends in
    the collective at each message size. Weights are normalized to sum to 1.
    """
    from .files import WEIGHTS_MAX_BYTES, check_yaml_depth, read_text_input

    path = Path(path)
    text = read_text_input(path, "weights file", WEIGHTS_MAX_BYTES)
    raw: dict[object, object]
    if path.suffix.lower() == ".csv":
        rows = list(csv.reader(line for line in text.splitlines() if line.strip()
                               and not line.lstrip().startswith("#")))
        if rows and rows[0] and not rows[0][0].strip()[:1].isdigit():
            rows = rows[1:]  # header
        if any(len(row) != 2 for row in rows):
            raise InputError(f"weights file {path}: every CSV row must be `size,weight`")
        raw = {row[0].strip(): row[1].strip() for row in rows}
    else:
        check_yaml_depth(text, f"weights file {path}")
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise InputError(f"weights file {path}: not valid YAML ({exc.__class__.__name__})") from None
        if isinstance(loaded, dict) and isinstance(loaded.get("weights"), dict):
            loaded = loaded["weights"]
        if not isinstance(loaded, dict):
            raise InputError(f"weights file {path}: expected a mapping of message size to weight")
        raw = loaded
    weights: dict[int, float] = {}
    for key, value in raw.items():
        try:
            size = parse_size(key if isinstance(key, int) else str(key))
        except InputError as exc:
            raise InputError(f"weights file {path}: {exc}") from None
        try:
            weight = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise InputError(f"weights file {path}: weight of size {key!r} is not a number") from None
        if not math.isfinite(weight) or weight < 0:
            raise InputError(f"weights file {path}: weight of size {key!r} must be >= 0 and finite")
        weights[size] = weights.get(size, 0.0) + weight
    if not weights:
        raise InputError(f"weights file {path}: no sizes")
    return normalize_weights(weights)
