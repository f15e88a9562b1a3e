"""Typed views of the study-level attributes other than the config: the current run, the last
confirmation and the last independent check. Written by the controller and endgame/ (confirm, verify);
read by status and export."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import optuna

from ..errors import StorageError
from ..stats import systematic_text
from ._coerce import (as_bool, as_float, as_int, as_list, as_mapping, as_opt_float, as_opt_int,
                      as_str, as_str_tuple)
from ._schema import CONFIRMATION_ATTR, RUN_ATTR, VERIFICATION_ATTR


@dataclass(frozen=True)
class StoredRun:
    """The latest `autotune start` of a study (RUN_ATTR)."""

    run_id: str
    trials_planned: int = 0
    started: float | None = None
    deadline: float | None = None  # unix time after which no trial starts

    @classmethod
    def from_dict(cls, data: Any, where: str) -> StoredRun:
        data = as_mapping(data, where)
        return cls(run_id=as_str(data.get("run_id", ""), f"{where}: run_id"),
                   trials_planned=as_int(data.get("trials_planned") or 0, f"{where}: trials_planned"),
                   started=as_opt_float(data.get("started"), f"{where}: started"),
                   deadline=as_opt_float(data.get("deadline"), f"{where}: deadline"))


def stored_run(study: optuna.Study) -> StoredRun | None:
    data = study.user_attrs.get(RUN_ATTR)
    return StoredRun.from_dict(data, f"study {study.study_name}: {RUN_ATTR}") if data else None


@dataclass(frozen=True)
class ConfirmedCandidate:
    trial: int
    speedup: float | None  # None when its confirmation launches failed
    speedup_interval: tuple[float, float] | None  # simultaneous 95% interval (Student t)
    failed: str = ""
    verdict: str = ""  # faster, not faster, undecided, failed (endgame/confirm.py)
    rounds: int = 0  # rounds this candidate got


@dataclass(frozen=True)
class StoredConfirmation:
    """The last confirmation (CONFIRMATION_ATTR): the top candidates re-measured against the default."""

    rounds: int
    best_trial: int | None  # None: no candidate is faster than the default beyond doubt
    candidates: tuple[ConfirmedCandidate, ...]
    finished: float | None = None
    confidence: float = 0.95
    family: int = 1  # intervals that hold together: candidates x looks
    method: str = ""
    stopped: str = ""  # why rounds stopped with a candidate still undecided
    systematic: float = 0.0  # the benchmark's uncertainty against IMB-MPI1 in every interval
    choice: str = ""  # why the winner is not the fastest-looking claimed candidate, if not
    systematic_note: str = ""  # where the systematic was measured, or that it is a stand-in

    def candidate(self, trial: int) -> ConfirmedCandidate:
        for cand in self.candidates:
            if cand.trial == trial:
                return cand
        raise StorageError(f"the stored confirmation names trial {trial} as best but holds no "
                           "measurement of it; run the confirmation again")

    @property
    def legacy(self) -> bool:
        """Written by a version whose claims rested on a percentile bootstrap over 5 rounds, which
        did not hold: its winner is not a claim."""
        return not self.method and self.best_trial is not None

    @property
    def level(self) -> str:
        """How to read its intervals, e.g. `95% CI, simultaneous over 9`."""
        return f"{self.confidence:.0%} CI" + (f", simultaneous over {self.family}"
                                              if self.family > 1 else "")

    @property
    def best(self) -> ConfirmedCandidate | None:
        """The confirmed winner with its speedup and interval, or None when the default stays
        (or when the confirmation is a legacy one, which claims nothing)."""
        if self.best_trial is None or self.legacy:
            return None
        cand = self.candidate(self.best_trial)
        if cand.speedup is None or cand.speedup_interval is None:
            raise StorageError(f"the stored confirmation names trial {self.best_trial} as best "
                               "but holds no speedup for it; run the confirmation again")
        return cand

    @classmethod
    def from_dict(cls, data: Any, where: str) -> StoredConfirmation:
        data = as_mapping(data, where)
        candidates = []
        for i, item in enumerate(as_list(data.get("candidates") or [], f"{where}: candidates")):
            at = f"{where}: candidates[{i}]"
            item = as_mapping(item, at)
            interval = _pair_in(item.get("speedup_interval"), f"{at}: speedup_interval")
            candidates.append(ConfirmedCandidate(
                trial=as_int(item.get("trial"), f"{at}: trial"),
                speedup=as_opt_float(item.get("speedup"), f"{at}: speedup"),
                speedup_interval=interval, failed=as_str(item.get("failed") or "", f"{at}: failed"),
                verdict=as_str(item.get("verdict") or "", f"{at}: verdict"),
                rounds=as_int(item.get("rounds")
                              or len(as_list(item.get("round_scores") or [], f"{at}: round_scores")),
                              f"{at}: rounds")))
        return cls(rounds=as_int(data.get("rounds") or 0, f"{where}: rounds"),
                   best_trial=as_opt_int(data.get("best_trial"), f"{where}: best_trial"),
                   candidates=tuple(candidates),
                   finished=as_opt_float(data.get("finished"), f"{where}: finished"),
                   confidence=as_float(data.get("confidence") or 0.95, f"{where}: confidence"),
                   family=as_int(data.get("family") or 1, f"{where}: family"),
                   method=as_str(data.get("method") or "", f"{where}: method"),
                   stopped=as_str(data.get("stopped") or "", f"{where}: stopped"),
                   choice=as_str(data.get("choice") or "", f"{where}: choice"),
                   systematic_note=as_str(data.get("systematic_note") or "",
                                          f"{where}: systematic_note"),
                   systematic=as_float(data.get("systematic") or 0.0, f"{where}: systematic"))


def stored_confirmation(study: optuna.Study) -> StoredConfirmation | None:
    data = study.user_attrs.get(CONFIRMATION_ATTR)
    if not data:
        return None
    return StoredConfirmation.from_dict(data, f"study {study.study_name}: {CONFIRMATION_ATTR}")


@dataclass(frozen=True)
class VerifiedSize:
    """One message size of an independent check: speedup of the best over the untuned stack."""

    size: int
    speedup: float
    speedup_interval: tuple[float, float]  # 95% Student-t interval over the rounds


@dataclass(frozen=True)
class StoredVerification:
    """The last independent check (VERIFICATION_ATTR): the exported best measured against the
    untuned stack in interleaved rounds with another benchmark than the search's, so a claim that
    only the search's benchmark (or its luck) sees does not reach the export unchallenged."""

    benchmark: str  # what measured it: "IMB-MPI1 (/path/IMB-MPI1)", "mpi4py kernel"
    independent: bool  # another benchmark than the search used
    trial: int  # the trial verified (the exported best when it ran)
    rounds: int  # rounds asked for
    rounds_measured: int = 0  # rounds that gave a score
    speedup: float | None = None  # weighted over the sizes; None when the check failed
    speedup_interval: tuple[float, float] | None = None
    sizes: tuple[VerifiedSize, ...] = ()
    round_scores: tuple[float, ...] = ()  # weighted log-ratio best/default of each round
    search_speedup: float | None = None  # the search's figure it was compared with
    search_interval: tuple[float, float] | None = None  # the confirmation's interval, if any
    agrees: bool | None = None  # None when the check failed
    finished: float | None = None
    failed: str = ""  # why no figure came out of it
    argv: tuple[str, ...] = ()  # one launch of the best as it ran
    measured: str = ""  # what was deployed and measured: "" the configuration's settings, else
    # e.g. "per-size rules (3 bands, ompi-rules) with the configuration's other settings"
    systematic: float = 0.0  # the check's benchmark's uncertainty against IMB-MPI1, in its interval

    @property
    def label(self) -> str:
        """The benchmark's name without its path: `IMB-MPI1`, `mpi4py kernel`; an application's
        check (`app: PROGRAM ...; metric: ...`) by what it is."""
        if self.benchmark.startswith("app:"):
            return "the application"
        return self.benchmark.split(" (", 1)[0] or "?"

    @property
    def disagrees(self) -> bool:
        return self.agrees is False

    def describe(self) -> str:
        """One line: the check's figure next to the search's, and what it means for the export."""
        if self.failed or self.speedup is None or self.speedup_interval is None:
            return f"independent check ({self.label}): failed ({self.failed or 'no figure'})"
        low, high = self.speedup_interval
        line = (f"independent check ({self.label}, {self.rounds_measured} rounds): speedup "
                f"{self.speedup:.2f}x (95% CI {low:.2f}x..{high:.2f}x"
                f"{systematic_text(self.systematic)})")
        search = ""
        if self.search_speedup is not None:
            search = f" ({self.search_speedup:.2f}x" + (
                f", {self.search_interval[0]:.2f}x..{self.search_interval[1]:.2f}x)"
                if self.search_interval else ")")
        floor = self.search_interval[0] if self.search_interval else self.search_speedup
        if self.agrees and low > 1.0 and floor is not None and high < floor:
            line += f" \u2014 reproduces a gain, smaller than the search claims{search}"
        elif self.agrees and low > 1.0:
            line += f" \u2014 reproduces a gain, as the search claims{search}"
        elif self.agrees:
            line += (f" \u2014 does not contradict the search{search}, but cannot tell a gain "
                     "from none at this many rounds")
        else:
            line += (f" \u2014 disagrees with the search{search}: the untuned stack is "
                     "recommended")
        if not self.independent:
            line += "; the same benchmark as the search, so not independent"
        if self.measured:
            line += f"; measured: {self.measured}"
        return line

    def to_dict(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "independent": self.independent,
                "trial": self.trial, "rounds": self.rounds,
                "rounds_measured": self.rounds_measured, "speedup": self.speedup,
                "speedup_interval": _pair_out(self.speedup_interval),
                "sizes": [{"size": s.size, "speedup": s.speedup,
                           "speedup_interval": list(s.speedup_interval)} for s in self.sizes],
                "round_scores": list(self.round_scores), "search_speedup": self.search_speedup,
                "search_interval": _pair_out(self.search_interval), "agrees": self.agrees,
                "finished": self.finished, "failed": self.failed, "argv": list(self.argv),
                "measured": self.measured, "systematic": self.systematic}

    @classmethod
    def from_dict(cls, data: Any, where: str) -> StoredVerification:
        data = as_mapping(data, where)
        sizes = []
        for i, item in enumerate(as_list(data.get("sizes") or [], f"{where}: sizes")):
            at = f"{where}: sizes[{i}]"
            item = as_mapping(item, at)
            interval = _pair_in(item.get("speedup_interval"), f"{at}: speedup_interval")
            if interval is None:
                raise StorageError(f"{at}: speedup_interval is missing")
            sizes.append(VerifiedSize(size=as_int(item.get("size"), f"{at}: size"),
                                      speedup=as_float(item.get("speedup"), f"{at}: speedup"),
                                      speedup_interval=interval))
        agrees = data.get("agrees")
        return cls(
            benchmark=as_str(data.get("benchmark") or "", f"{where}: benchmark"),
            independent=as_bool(data.get("independent", True), f"{where}: independent"),
            trial=as_int(data.get("trial"), f"{where}: trial"),
            rounds=as_int(data.get("rounds") or 0, f"{where}: rounds"),
            rounds_measured=as_int(data.get("rounds_measured") or 0,
                                   f"{where}: rounds_measured"),
            speedup=as_opt_float(data.get("speedup"), f"{where}: speedup"),
            speedup_interval=_pair_in(data.get("speedup_interval"), f"{where}: speedup_interval"),
            sizes=tuple(sizes),
            round_scores=tuple(as_float(v, f"{where}: round_scores")
                               for v in as_list(data.get("round_scores") or [],
                                                f"{where}: round_scores")),
            search_speedup=as_opt_float(data.get("search_speedup"), f"{where}: search_speedup"),
            search_interval=_pair_in(data.get("search_interval"), f"{where}: search_interval"),
            agrees=None if agrees is None else as_bool(agrees, f"{where}: agrees"),
            finished=as_opt_float(data.get("finished"), f"{where}: finished"),
            failed=as_str(data.get("failed") or "", f"{where}: failed"),
            argv=as_str_tuple(data.get("argv") or [], f"{where}: argv"),
            measured=as_str(data.get("measured") or "", f"{where}: measured"),
            systematic=as_float(data.get("systematic") or 0.0, f"{where}: systematic"))


def _pair_out(pair: tuple[float, float] | None) -> list[float] | None:
    return None if pair is None else [pair[0], pair[1]]


def _pair_in(value: Any, where: str) -> tuple[float, float] | None:
    if value is None:
        return None
    pair = as_list(value, where)
    if len(pair) != 2:
        raise StorageError(f"{where} is not a pair of numbers")
    low, high = as_float(pair[0], where), as_float(pair[1], where)
    if not low <= high:
        raise StorageError(f"{where} is not an interval (low {low} > high {high})")
    return low, high


def stored_verification(study: optuna.Study) -> StoredVerification | None:
    """The last independent check of the study, or None when none ran."""
    data = study.user_attrs.get(VERIFICATION_ATTR)
    if not data:
        return None
    return StoredVerification.from_dict(data, f"study {study.study_name}: {VERIFICATION_ATTR}")
