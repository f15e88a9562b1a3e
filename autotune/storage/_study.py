"""Typed views of the study-level attributes other than the config: the current run and the last
confirmation. Written by the controller and confirm.py; read by status and export."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import optuna

from ..errors import StorageError
from ._coerce import (as_float, as_int, as_list, as_mapping, as_opt_float, as_opt_int, as_str)
from ._schema import CONFIRMATION_ATTR, RUN_ATTR


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
    speedup_interval: tuple[float, float] | None  # 95% bootstrap CI of the speedup
    failed: str = ""


@dataclass(frozen=True)
class StoredConfirmation:
    """The last confirmation (CONFIRMATION_ATTR): the top candidates re-measured against the default."""

    rounds: int
    best_trial: int | None  # None: no candidate is faster than the default beyond doubt
    candidates: tuple[ConfirmedCandidate, ...]
    finished: float | None = None

    def candidate(self, trial: int) -> ConfirmedCandidate:
        for cand in self.candidates:
            if cand.trial == trial:
                return cand
        raise StorageError(f"the stored confirmation names trial {trial} as best but holds no "
                           "measurement of it; run the confirmation again")

    @property
    def best(self) -> ConfirmedCandidate | None:
        """The confirmed winner with its speedup and interval, or None when the default stays."""
        if self.best_trial is None:
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
            interval = item.get("speedup_interval")
            if interval is not None:
                pair = as_list(interval, f"{at}: speedup_interval")
                if len(pair) != 2:
                    raise StorageError(f"{at}: speedup_interval is not a pair of numbers")
                interval = (as_float(pair[0], f"{at}: speedup_interval"),
                            as_float(pair[1], f"{at}: speedup_interval"))
            candidates.append(ConfirmedCandidate(
                trial=as_int(item.get("trial"), f"{at}: trial"),
                speedup=as_opt_float(item.get("speedup"), f"{at}: speedup"),
                speedup_interval=interval, failed=as_str(item.get("failed") or "", f"{at}: failed")))
        return cls(rounds=as_int(data.get("rounds") or 0, f"{where}: rounds"),
                   best_trial=as_opt_int(data.get("best_trial"), f"{where}: best_trial"),
                   candidates=tuple(candidates),
                   finished=as_opt_float(data.get("finished"), f"{where}: finished"))


def stored_confirmation(study: optuna.Study) -> StoredConfirmation | None:
    data = study.user_attrs.get(CONFIRMATION_ATTR)
    if not data:
        return None
    return StoredConfirmation.from_dict(data, f"study {study.study_name}: {CONFIRMATION_ATTR}")
