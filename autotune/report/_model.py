"""The data behind every figure and table of the report: frozen dataclasses, computed from a
study without drawing anything (`_data.build` fills them), so that tests check numbers, not
pixels."""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis import HockneyFit, OverlapRow
from ..storage import StoredRules
from ._cost import CostData, SecondsData
from ._curves import CliffRow, ConfigCurve

MAX_CANDIDATES = 3  # next candidates listed beside the best
MAX_CURVES = 3  # configurations drawn beside the default: the best and the next two


@dataclass(frozen=True)
class StudyFacts:
    """What was tuned, where, with what: the page's first lines."""

    study: str
    collective: str
    nodes: int
    ppn: int
    sizes: tuple[int, ...]
    repetitions: int
    benchmark: str
    space: str
    weights_source: str
    mpi: str
    ucx: str
    host: str
    cpu: str
    trials: int
    complete: int
    pruned: int
    failed: int  # launched and failed
    generated: str
    skipped: int = 0  # failed unlaunched: a proposal that repeated a measured configuration

    @property
    def nprocs(self) -> int:
        return self.nodes * self.ppn


@dataclass(frozen=True)
class CandidateRow:
    """A configuration re-measured in the confirmation (or, without one, a top search trial)."""

    trial: int
    changes: str  # its knobs that differ from the default
    search_speedup: float | None
    speedup: float | None  # confirmed speedup (None: not confirmed)
    low: float | None
    high: float | None
    verdict: str
    rounds: int


@dataclass(frozen=True)
class Verdict:
    """Which configuration won, by how much, how sure, and at which sizes."""

    headline: str
    winner: int | None  # trial to deploy; None: keep the untuned stack
    confirmed: bool
    speedup: float | None
    low: float | None
    high: float | None
    interval: str  # `95% CI 1.03x..1.18x, simultaneous over 6`, '' when none
    faster_sizes: tuple[int, ...]
    slower_sizes: tuple[int, ...]
    unclear_sizes: tuple[int, ...]
    settings: tuple[tuple[str, str, str], ...]  # (kind env/mca/mpirun, name, value)
    trust: tuple[str, ...]
    candidates: tuple[CandidateRow, ...]
    confirmation_note: str


@dataclass(frozen=True)
class SizeSpeedup:
    size: int
    weight: float  # normalised weight of the size in the score
    speedup: float  # exp(-mean paired log-ratio) over the launches
    low: float
    high: float
    launches: int
    contribution: float  # weight x log-gain / sum of weights: the size's share of ln(speedup)


@dataclass(frozen=True)
class SpeedupData:
    """Per-size speedup of one configuration over the paired default launches."""

    trial: int
    label: str
    confirmed: bool
    sizes: tuple[SizeSpeedup, ...]
    weighted: float  # exp(sum of contributions): the trial's own weighted speedup (mean-based)
    verified_label: str = ""  # the independent check's per-size figure, when it checked this one
    verified: tuple[tuple[int, float, float, float], ...] = ()  # size, speedup, low, high


@dataclass(frozen=True)
class TrialPoint:
    trial: int
    state: str
    is_default: bool
    speedup: float | None  # COMPLETE: speedup; PRUNED: over the sizes it measured
    skipped: bool  # failed unlaunched: it repeated a measured or refused configuration
    best_so_far: float | None  # best complete speedup up to and including this trial
    minutes: float | None  # since the study's first trial started
    bench_seconds: float


@dataclass(frozen=True)
class DriftPoint:
    minutes: float
    ratio: float  # the default's time / the run's first default launch (weighted): >1 slower
    block: int


@dataclass(frozen=True)
class HistoryData:
    points: tuple[TrialPoint, ...]
    drift: tuple[DriftPoint, ...]


@dataclass(frozen=True)
class KnobValues:
    knob: str
    values: tuple[tuple[str, float, int], ...]  # value, best complete speedup, complete trials


@dataclass(frozen=True)
class ImportanceData:
    evaluator: str
    importances: tuple[tuple[str, float], ...]  # knob, share (sums to 1)
    note: str  # why some or all knobs are missing
    per_knob: tuple[KnobValues, ...]


@dataclass(frozen=True)
class HockneyData:
    collective: str
    nprocs: int
    volume: str  # effective bytes formula, e.g. 2M
    volume_factor: float  # effective bytes / M on this communicator
    fits: tuple[tuple[ConfigCurve, HockneyFit], ...]


@dataclass(frozen=True)
class OverlapSide:
    """One configuration's overlap per size (trimmed means over its own launches)."""

    trial: int
    label: str
    rows: tuple[OverlapRow, ...]

    def row(self, size: int) -> OverlapRow | None:
        return next((r for r in self.rows if r.size == size), None)


@dataclass(frozen=True)
class OverlapData:
    """A non-blocking collective's IMB-NBC columns per size: the untuned default (its trial's
    own launches) against the best (the confirmed or exported one; when that is the default,
    the search's best other trial, unconfirmed)."""

    objective: str
    default: OverlapSide | None
    best: OverlapSide | None

    @property
    def sizes(self) -> tuple[int, ...]:
        sides = [s for s in (self.default, self.best) if s is not None]
        return tuple(sorted({r.size for side in sides for r in side.rows}))


@dataclass(frozen=True)
class ReportData:
    facts: StudyFacts
    verdict: Verdict
    curves: tuple[ConfigCurve, ...]
    cliffs: tuple[CliffRow, ...]
    speedup: SpeedupData | None
    history: HistoryData
    seconds: SecondsData
    importance: ImportanceData
    hockney: HockneyData
    cost: CostData
    rules: StoredRules | None = None  # per-size rules: a section only when a study holds them
    overlap: OverlapData | None = None  # a non-blocking collective's overlap per size
    objective: str = "latency"  # what the study scored per size (StudyConfig.objective)


@dataclass(frozen=True)
class VariantRatios:
    """One algorithm's time per size over the best configuration's own algorithm's."""

    label: str
    sizes: tuple[int, ...]
    ratios: tuple[float, ...]
    incumbent: bool = False


