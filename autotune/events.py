"""What a run tells the outside: one outcome per trial, a summary per run, and the events a
progress display hears (every method optional in practice: see NullEvents)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Protocol

from .measure import LaunchRecord
from .storage import BaselineLaunch


@dataclass
class TrialOutcome:
    number: int
    state: str  # COMPLETE, PRUNED or FAIL
    params: dict[str, Any]
    is_default: bool
    value: float | None = None
    speedup: float | None = None
    sizes_measured: int = 0
    launches: int = 0  # launches that measured the configuration
    check_launches: int = 0  # launches that only checked its results (a search timed by IMB)
    bench_seconds: float = 0.0
    controller_seconds: float = 0.0  # ask, suggest, report, prune checks, attrs and tell
    wall_seconds: float = 0.0
    baseline_launches: int = 0  # default-config launches interleaved during this trial
    fail_reason: str = ""
    nodes: tuple[str, ...] = ()  # the node group the trial ran on


@dataclass
class RunSummary:
    outcomes: list[TrialOutcome] = field(default_factory=list)
    baselines: list[BaselineLaunch] = field(default_factory=list)
    interrupted: bool = False
    stopped_because: str = ""  # why the run ended before its trials were done
    skipped_known_invalid: int = 0
    skipped_duplicates: int = 0  # proposals of an already-measured configuration
    confirmation: Any = None  # confirm.Confirmation when the search ended normally
    verification: Any = None  # storage.StoredVerification when the independent check ran
    rules: Any = None  # storage.StoredRules when the per-size stage ran


class Events(Protocol):
    """What a progress display hears; every method is optional in practice (see NullEvents)."""

    def trial_started(self, number: int, params: dict[str, Any], is_default: bool) -> None: ...
    def trial_finished(self, outcome: TrialOutcome, best: TrialOutcome | None) -> None: ...
    def baseline_finished(self, launch: BaselineLaunch) -> None: ...
    def launch_finished(self, record: LaunchRecord, total: int) -> None: ...
    def paused(self, reason: str, seconds: float) -> None: ...
    def confirming(self, candidates: int, rounds: int, skipped: str = "") -> None: ...
    def confirmed(self, confirmation: Any) -> None: ...
    def verifying(self, benchmark: str, rounds: int) -> None: ...
    def verified(self, verification: Any, notice: str = "") -> None: ...
    def ruling(self, variants: int, rounds: int) -> None: ...
    def ruling_skipped(self, reason: str) -> None: ...
    def composing(self, bands: int, rounds: int) -> None: ...
    def ruled(self, rules: Any) -> None: ...


class SerializedEvents:
    """Events from several trial threads, one at a time (the display is not thread-safe)."""

    def __init__(self, events: Events) -> None:
        self._events = events
        self._lock = threading.Lock()

    def __getattr__(self, name: str):
        method = getattr(self._events, name)

        def call(*args, **kwargs):
            with self._lock:
                return method(*args, **kwargs)
        return call


class NullEvents:
    def trial_started(self, number, params, is_default): pass
    def trial_finished(self, outcome, best): pass
    def baseline_finished(self, launch): pass
    def launch_finished(self, record, total): pass
    def paused(self, reason, seconds): pass
    def confirming(self, candidates, rounds, skipped=""): pass
    def confirmed(self, confirmation): pass
    def verifying(self, benchmark, rounds): pass
    def verified(self, verification, notice=""): pass
    def ruling(self, variants, rounds): pass
    def ruling_skipped(self, reason): pass
    def composing(self, bands, rounds): pass
    def ruled(self, rules): pass
