"""Per-size algorithm rules: which algorithm (with its segment size, fan-in/out, request limit)
runs for which message-size band, for one collective at one communicator size.

A RuleSet is what the exporters turn into an Open MPI dynamic rules file, an MPICH selection file
or a UCC tune string; a single global configuration is a RuleSet of one band starting at 0.
Sizes are the benchmark's message size in bytes (IMB's #bytes: per rank for allgather and
alltoall). Open MPI's decision counts allreduce, bcast and reduce the same way (dsize * count) but
allgather and alltoall as dsize * comm_size * count: `ompi_message_size` converts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..units import format_size

TUNED_PREFIX = "coll_tuned_"
TIMES_COMM_SIZE = frozenset({"allgather", "alltoall"})  # coll_tuned_decision_dynamic.c


def ompi_message_size(collective: str, comm_size: int, nbytes: int) -> int:
    """The size Open MPI's dynamic decision compares with a rule's msgsize."""
    return nbytes * comm_size if collective in TIMES_COMM_SIZE else nbytes


@dataclass(frozen=True)
class AlgorithmChoice:
    """One algorithm with its sub-parameters; 0 means "Open MPI's own choice" for each of them.
    `algorithm` is Open MPI's numeric id (coll_tuned), or a name (MPICH, UCC)."""

    algorithm: int | str
    segsize: int = 0
    faninout: int = 0
    max_requests: int = 0

    def label(self) -> str:
        if self.algorithm == 0:
            return "Open MPI's own decision"
        parts = [f"alg {self.algorithm}"]
        if self.segsize:
            parts.append(f"seg {format_size(self.segsize)}")
        if self.faninout:
            parts.append(f"fan {self.faninout}")
        if self.max_requests:
            parts.append(f"req {self.max_requests}")
        return ", ".join(parts)


@dataclass(frozen=True)
class SizeBand:
    """Messages of min_bytes <= size < max_bytes (None: no upper end) use `choice`."""

    min_bytes: int
    max_bytes: int | None
    choice: AlgorithmChoice

    def holds(self, nbytes: int) -> bool:
        return nbytes >= self.min_bytes and (self.max_bytes is None or nbytes < self.max_bytes)

    def label(self) -> str:
        high = "inf" if self.max_bytes is None else format_size(self.max_bytes)
        return f"{format_size(self.min_bytes)}..{high}"


@dataclass(frozen=True)
class RuleSet:
    """Bands in ascending order that cover every size from 0 up, without gaps or overlaps."""

    stack: str  # "openmpi", "mpich" or "ucc"
    collective: str  # allreduce, allgather, ...
    comm_size: int  # ranks in the communicator the rules were measured at (nodes x ppn)
    bands: tuple[SizeBand, ...]

    def __post_init__(self) -> None:
        if not self.bands:
            raise InputError("a rule set needs at least one band")
        if self.bands[0].min_bytes != 0:
            raise InputError("a rule set's first band must start at message size 0")
        for low, high in zip(self.bands, self.bands[1:]):
            if low.max_bytes != high.min_bytes or high.min_bytes <= low.min_bytes:
                raise InputError(f"rule bands {low.label()} and {high.label()} do not meet")
        if self.bands[-1].max_bytes is not None:
            raise InputError("a rule set's last band must have no upper end")
        if self.comm_size < 1:
            raise InputError(f"communicator size {self.comm_size} is not positive")

    def for_size(self, nbytes: int) -> AlgorithmChoice:
        return next(b.choice for b in self.bands if b.holds(nbytes))

    @classmethod
    def single(cls, stack: str, collective: str, comm_size: int,
               choice: AlgorithmChoice) -> RuleSet:
        return cls(stack, collective, comm_size, (SizeBand(0, None, choice),))

    @classmethod
    def from_starts(cls, stack: str, collective: str, comm_size: int,
                    starts: list[tuple[int, AlgorithmChoice]]) -> RuleSet:
        """From (first size, choice) pairs; neighbours with the same choice are merged."""
        merged: list[tuple[int, AlgorithmChoice]] = []
        for start, choice in sorted(starts, key=lambda p: p[0]):
            if not merged or merged[-1][1] != choice:
                merged.append((start, choice))
        if merged:
            merged[0] = (0, merged[0][1])
        ends = [s for s, _ in merged[1:]] + [None]
        return cls(stack, collective, comm_size,
                   tuple(SizeBand(s, e, c) for (s, c), e in zip(merged, ends)))

    def to_dict(self) -> dict[str, Any]:
        return {"stack": self.stack, "collective": self.collective, "comm_size": self.comm_size,
                "bands": [{"min_bytes": b.min_bytes, "max_bytes": b.max_bytes,
                           "algorithm": b.choice.algorithm, "segsize": b.choice.segsize,
                           "faninout": b.choice.faninout, "max_requests": b.choice.max_requests}
                          for b in self.bands]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RuleSet:
        try:
            bands = tuple(SizeBand(int(b["min_bytes"]),
                                   None if b["max_bytes"] is None else int(b["max_bytes"]),
                                   AlgorithmChoice(_alg(b["algorithm"]), int(b.get("segsize", 0)),
                                                   int(b.get("faninout", 0)),
                                                   int(b.get("max_requests", 0))))
                          for b in data["bands"])
            return cls(str(data["stack"]), str(data["collective"]), int(data["comm_size"]), bands)
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"malformed rule set: {exc}") from None


def _alg(value: Any) -> int | str:
    if isinstance(value, bool):
        raise ValueError("algorithm is a boolean")
    if isinstance(value, int):
        return value
    text = str(value)
    return int(text) if text.isdigit() else text


def tuned_param_names(collective: str) -> dict[str, str]:
    """The openmpi-tuned space's parameter (and MCA) names for one collective's choice."""
    base = f"{TUNED_PREFIX}{collective}_algorithm"
    return {"algorithm": base, "segsize": f"{base}_segmentsize",
            "faninout": f"{base}_chain_fanout", "max_requests": f"{base}_max_requests"}


def choice_from_params(collective: str, params: Mapping[str, Any]) -> AlgorithmChoice | None:
    """The coll_tuned choice a trial's params (or MCA settings) force; None when they force no
    algorithm (0 or absent: Open MPI's own decision rules)."""
    names = tuned_param_names(collective)
    try:
        algorithm = int(params.get(names["algorithm"], 0) or 0)
    except (TypeError, ValueError):
        return None
    if algorithm == 0:
        return None

    def sub(key: str) -> int:
        try:
            return int(params.get(names[key], 0) or 0)
        except (TypeError, ValueError):
            return 0

    return AlgorithmChoice(algorithm, sub("segsize"), sub("faninout"), sub("max_requests"))
