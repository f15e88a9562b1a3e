"""A campaign read from its storage alone (so it works while the campaign runs): its cases, what
state each is in, and what each found."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import optuna

from ..storage import choose_name, default_storage_url, open_storage, redact, stored_config
from ._model import CAMPAIGN_ATTR, Case, CaseMark

DONE, RUNNING, WAITING, PARTIAL, LEFT = "done", "running", "waiting", "partial", "left"


@dataclass(frozen=True)
class CaseStatus:
    case: Case
    study: str
    state: str  # done | running | waiting | partial | left
    detail: str  # why it waits, what the neighbours gave, ...
    trials: int  # complete + pruned + failed
    speedup: float | None  # confirmed (else the search's best), over the untuned stack
    speedup_ci: tuple[float, float] | None  # confirmed intervals only
    best_is_default: bool
    bench_node_seconds: float  # benchmark seconds x nodes, search and default launches
    warm_started: tuple[str, ...] = ()
    agreed: bool = False

    def to_dict(self) -> dict[str, object]:
        return {"case": self.case.label, "collective": self.case.collective,
                "nodes": self.case.nodes, "ppn": self.case.ppn, "study": self.study,
                "state": self.state, "detail": self.detail, "trials": self.trials,
                "speedup": self.speedup, "speedup_ci": self.speedup_ci,
                "best_is_default": self.best_is_default,
                "bench_node_seconds": self.bench_node_seconds,
                "warm_started": list(self.warm_started), "neighbours_agreed": self.agreed}


@dataclass(frozen=True)
class CampaignStatus:
    name: str
    storage: str
    alive: bool  # the campaign's own process holds its lock
    pid: int | None
    host: str | None
    cases: tuple[CaseStatus, ...]

    def count(self, state: str) -> int:
        return sum(c.state == state for c in self.cases)

    def to_dict(self) -> dict[str, object]:
        return {"campaign": self.name, "storage": self.storage, "alive": self.alive,
                "pid": self.pid, "host": self.host,
                "counts": {s: self.count(s) for s in (DONE, RUNNING, WAITING, PARTIAL, LEFT)},
                "cases": [c.to_dict() for c in self.cases]}


def campaign_marks(storage: optuna.storages.BaseStorage) -> dict[str, list[tuple[str, CaseMark]]]:
    """Campaign name -> [(study name, mark)] of every case study in the storage."""
    found: dict[str, list[tuple[str, CaseMark]]] = {}
    for summary in storage.get_all_studies():
        mark = CaseMark.from_dict(summary.user_attrs.get(CAMPAIGN_ATTR))
        if mark is not None:
            found.setdefault(mark.campaign, []).append((summary.study_name, mark))
    return found


def campaign_name(storage_url: str | None, name: str | None) -> str:
    """The named campaign, or the only one in the storage."""
    marks = campaign_marks(open_storage(storage_url, create=False))
    return choose_name(marks, name, redact(storage_url or default_storage_url()),
                       ("campaign", "campaigns", "--name", "autotune campaign"))


def case_studies(storage_url: str | None, name: str) -> list[tuple[Case, optuna.Study, CaseMark]]:
    """The campaign's case studies in run order."""
    store = open_storage(storage_url, create=False)
    marks = campaign_marks(store).get(name, [])
    # stable: cases of one shape stay in the order the campaign registered (and runs) them
    order = sorted(marks, key=lambda item: (item[1].case.nodes, item[1].case.ppn))
    return [(mark.case, optuna.load_study(study_name=study, storage=store), mark)
            for study, mark in order]


def case_status(study: optuna.Study, mark: CaseMark, storage_url: str | None) -> CaseStatus:
    from ..status import study_status

    case = mark.case
    blank = CaseStatus(case=case, study=study.study_name, state=LEFT, detail=mark.waiting,
                       trials=0, speedup=None, speedup_ci=None, best_is_default=True,
                       bench_node_seconds=0.0, warm_started=mark.warm_started, agreed=mark.agreed)
    if stored_config(study) is None:  # registered, never started
        return blank if not mark.waiting else dataclasses.replace(blank, state=WAITING)
    status = study_status(study, storage_url)
    trials = status.trials_complete + status.trials_pruned + status.trials_failed
    if mark.finished is not None:
        state = DONE
    elif status.alive:
        state = RUNNING
    elif mark.waiting:
        state = WAITING
    else:
        state = PARTIAL if trials else LEFT
    speedup, ci, is_default = _claim(study)
    return CaseStatus(case=case, study=study.study_name, state=state,
                      detail=mark.waiting or (mark.stopped if state != DONE else "")
                      or status.confirmation, trials=trials,
                      speedup=speedup, speedup_ci=ci, best_is_default=is_default,
                      bench_node_seconds=status.bench_seconds * case.nodes,
                      warm_started=mark.warm_started, agreed=mark.agreed)


def _claim(study: optuna.Study) -> tuple[float | None, tuple[float, float] | None, bool]:
    """(speedup, its confirmed interval or None, whether the default is what export hands out),
    as `autotune export` would say it."""
    from ..errors import AutotuneError
    from ..export import best_config

    try:
        best = best_config(study)
    except AutotuneError:
        return None, None, True
    if best.confirmed_speedup is not None:
        speedup, low, high = best.confirmed_speedup
        return speedup, (low, high), best.is_default
    return (1.0 if best.is_default else best.speedup), None, best.is_default


def campaign_status(storage_url: str | None, name: str | None) -> CampaignStatus:
    from ..daemon import StudyLock

    name = campaign_name(storage_url, name)
    url = storage_url or default_storage_url()
    owner = StudyLock.of(url, name).owner()
    cases = tuple(case_status(study, mark, storage_url)
                  for _, study, mark in case_studies(storage_url, name))
    return CampaignStatus(name=name, storage=redact(url), alive=owner is not None,
                          pid=owner.pid if owner else None, host=owner.host if owner else None,
                          cases=cases)
