"""What commands return: plain dataclasses, printed by `render` as text or JSON. Building one does
the work; nothing here prints, and nothing here imports Optuna, pandas or MPI at import time."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from ..export import BestConfig
    from ..probe import Capabilities
    from ..report import OverlapData
    from ..space import SearchSpace
    from ..status import StudyStatus
    from ..storage import StoredVerification


@dataclass(frozen=True)
class Message:
    """One or more plain lines (a confirmation, a notice)."""

    text: str


@dataclass(frozen=True)
class SpaceSummary:
    name: str
    stack: str
    description: str
    parameters: tuple[str, ...]


@dataclass(frozen=True)
class SpaceList:
    spaces: tuple[SpaceSummary, ...]


@dataclass(frozen=True)
class SpaceDetail:
    space: SearchSpace


@dataclass(frozen=True)
class SpaceValidation:
    path: str
    stack: str
    parameters: tuple[str, ...]
    removed: tuple[tuple[str, tuple[str, ...]], ...]  # collective -> what this machine removes
    machine_error: str | None = None  # the space cannot run here at all


@dataclass(frozen=True)
class ProbeReport:
    caps: Capabilities
    others: tuple[Capabilities, ...] = ()  # the other MPIs installed here (MPICH beside Open MPI)
    spaces: dict[str, tuple[str, ...]] = field(default_factory=dict)  # family -> its spaces


@dataclass(frozen=True)
class BestReport:
    best: BestConfig
    overlap: OverlapData | None = None  # a non-blocking collective's overlap per size


@dataclass(frozen=True)
class VerifyReport:
    """`autotune verify`: the stored result of the independent check."""

    study: str
    verification: StoredVerification


@dataclass(frozen=True)
class StatusReport:
    status: StudyStatus


@dataclass(frozen=True)
class HistoryTable:
    """One line per trial (the `table` format of `history`)."""

    frame: pd.DataFrame


@dataclass(frozen=True)
class BackgroundStart:
    study: str
    pid: int
    host: str
    log: str
    what: str = "study"  # or "campaign"


@dataclass(frozen=True)
class CampaignStatusReport:
    status: Any  # campaign.CampaignStatus


def space_summary(name: str, space: Any) -> SpaceSummary:
    return SpaceSummary(name=name, stack=space.stack, description=space.description,
                        parameters=tuple(p.name for p in space.parameters))
