"""What one trial's measurement produced, as the controller fills it launch by launch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..baseline import Placement
from ..errors import LaunchFailure
from ..measure import LaunchRecord
from ..space import LaunchSettings


@dataclass
class TrialMeasurement:
    """What one trial's measurement produced, complete or not (the controller fills it)."""

    settings: LaunchSettings | None = None
    params: dict[str, Any] = field(default_factory=dict)
    is_default: bool = False
    records: list[LaunchRecord] = field(default_factory=list)
    paired_default: dict[int, list[float]] = field(default_factory=dict)
    baseline_ids: list[int] = field(default_factory=list)
    baseline_launches: int = 0
    pruned: bool = False
    failure: LaunchFailure | None = None
    overhead: float = 0.0
    placed: Placement | None = None
    asked_at: float = 0.0
    first_kernel: float | None = None  # unix time the first benchmark of the trial began

    def saw_kernel(self, record: LaunchRecord) -> None:
        if record.kernel_started is not None and (self.first_kernel is None
                                                  or record.kernel_started < self.first_kernel):
            self.first_kernel = record.kernel_started


def raw_from(records: list[LaunchRecord]) -> dict[int, list[float]]:
    raw: dict[int, list[float]] = {}
    for record in records:
        for size, t_us in record.t_max_us.items():
            raw.setdefault(size, []).append(t_us)
    return dict(sorted(raw.items()))
