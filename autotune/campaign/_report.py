"""What the campaign report shows, computed apart from drawing it (tested): the winners table (as
seeds/000 tabulates its hand-tuned winners), each case's gain over the untuned stack with its
interval, what each case cost against the staged sweep and the full grid of the same space at
its own measured launch time, and the knob values the winners share."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import optuna

from ..errors import AutotuneError
from ..storage import (TrialRecord, load_baselines, stored_config, stored_confirmation,
                       stored_rules, trial_records)
from ._model import Case, CaseMark
from ._status import CaseStatus, case_status, case_studies

CONTEXT_KNOBS = ("NPS",)  # read from the nodes, not chosen: never a pattern of the winners


@dataclass(frozen=True)
class CaseRow:
    case: Case
    study: str
    status: CaseStatus
    winner: dict[str, str]  # knob -> value where the exported configuration differs from untuned
    launches: int  # benchmark launches the case spent (trials, default, confirmation estimate)
    spent_node_seconds: float
    staged_node_seconds: float | None  # the staged sweep of seeds/000 over the same space
    grid_node_seconds: float | None  # every configuration of the space
    staged_configs: int | None = None
    grid_configs: int | None = None
    warm_queued: int = 0
    link: str | None = None  # the case's own report, relative to the campaign page
    rules: str = ""  # adopted per-size bands, e.g. "alg 4 2.8 KiB..11.3 KiB; alg 3 11.3 KiB..45.3 KiB"
    check: str = ""  # the independent check of the exported best, e.g. "IMB-MPI1 1.47x (1.44..1.49)"

    @property
    def has_winner(self) -> bool:
        return bool(self.winner) and not self.status.best_is_default


@dataclass(frozen=True)
class Pattern:
    knob: str
    value: str
    cases: tuple[str, ...]  # the cases whose winner sets it
    winners: int  # cases with a winner (a configuration other than untuned)


@dataclass(frozen=True)
class CampaignReportData:
    name: str
    storage: str
    rows: tuple[CaseRow, ...]
    knobs: tuple[str, ...]  # the winner table's columns: every knob some winner changes
    patterns: tuple[Pattern, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def total(self, attr: str) -> float | None:
        """Summed over the cases with a completed trial (the others have no launch time to price
        the manual ways at); None when there is none."""
        values = [getattr(r, attr) for r in self.rows if r.staged_node_seconds is not None]
        return float(sum(values)) if values else None


def winner_changes(study: optuna.Study) -> dict[str, str]:
    """The exported configuration's knobs that differ from the untuned stack's (context such as
    NPS aside); empty when the untuned stack is what export hands out."""
    from ..export import best_config

    try:
        best = best_config(study)
    except AutotuneError:
        return {}
    if best.is_default:
        return {}
    default = next((r for r in map(TrialRecord.from_trial, study.get_trials(deepcopy=False))
                    if r.is_default), None)
    base = dict(default.params) if default else {}
    return {k: str(v) for k, v in sorted(best.params.items())
            if k not in CONTEXT_KNOBS and str(base.get(k)) != str(v)}


def case_row(case: Case, study: optuna.Study, mark: CaseMark, storage_url: str | None) -> CaseRow:
    from ..export import best_config
    from ..report import cost_data, seconds_data

    status = case_status(study, mark, storage_url)
    queued = sum(line.startswith("queued") for line in mark.warm_started)
    config = stored_config(study)
    records = trial_records(study) if config else []
    if not config or not any(r.state == "COMPLETE" for r in records):
        return CaseRow(case=case, study=study.study_name, status=status, winner={},
                       launches=sum(r.launch_count for r in records), spent_node_seconds=0.0,
                       staged_node_seconds=None, grid_node_seconds=None, warm_queued=queued)
    baselines = load_baselines(study)
    seconds = seconds_data(records, baselines, stored_confirmation(study), config,
                           stored_rules(study))
    best = best_config(study)
    cost = cost_data(study, config, records, seconds, best)
    return CaseRow(case=case, study=study.study_name, status=status, rules=rules_text(best),
                   check=check_text(best),
                   winner=winner_changes(study),
                   launches=sum(p.launches for p in seconds.parts),
                   spent_node_seconds=cost.spent_node_seconds,
                   staged_node_seconds=cost.staged_seconds * case.nodes,
                   grid_node_seconds=cost.grid_seconds * case.nodes,
                   staged_configs=cost.staged.configs, grid_configs=cost.grid.configs,
                   warm_queued=queued)


def _compact(nbytes: int) -> str:
    for unit, factor in (("M", 1 << 20), ("K", 1 << 10)):
        if nbytes >= factor:
            return f"{nbytes / factor:.3g}{unit}"
    return f"{nbytes}B"


def rules_text(best) -> str:
    """The adopted per-size bands that differ from Open MPI's own decision, e.g.
    `alg 4 2.83K..11.3K; alg 3 11.3K..45.3K`, or ""."""
    if best.rules is None or best.is_default:
        return ""
    bands = [f"{b.choice.label()} {_compact(b.min_bytes)}.."
             + (_compact(b.max_bytes) if b.max_bytes is not None else "")
             for b in best.rules.bands if b.choice.algorithm]
    return "; ".join(bands) or "Open MPI's own decision"


def check_text(best) -> str:
    """The independent check of the exported configuration, as one short cell."""
    check = best.verification
    if check is None:
        return ""
    if check.speedup is None or check.speedup_interval is None:
        return f"{check.label}: failed"
    low, high = check.speedup_interval
    if check.agrees is False:
        verdict = "DISAGREES with the search"
    elif low > 1.0:
        verdict = "reproduces a gain"
    else:
        verdict = "cannot tell a gain from none"
    return f"{check.label} {check.speedup:.2f}x ({low:.2f}..{high:.2f}) {verdict}".strip()


def patterns(rows: tuple[CaseRow, ...]) -> tuple[Pattern, ...]:
    """Knob values set by at least two winners (or by the only one), most shared first."""
    winners = [r for r in rows if r.has_winner]
    counts: Counter[tuple[str, str]] = Counter()
    where: dict[tuple[str, str], list[str]] = {}
    for row in winners:
        for knob, value in row.winner.items():
            counts[(knob, value)] += 1
            where.setdefault((knob, value), []).append(row.case.label)
    floor = 1 if len(winners) == 1 else 2
    return tuple(Pattern(knob, value, tuple(where[(knob, value)]), len(winners))
                 for (knob, value), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
                 if n >= floor)


def build_campaign(storage_url: str | None, name: str) -> CampaignReportData:
    from ..storage import default_storage_url, redact

    rows = tuple(case_row(case, study, mark, storage_url)
                 for case, study, mark in case_studies(storage_url, name))
    knobs = tuple(sorted({k for r in rows if r.has_winner for k in r.winner}))
    notes = []
    if rows and not any(r.has_winner for r in rows if r.status.trials):
        notes.append("no case found a configuration faster than the untuned stack beyond doubt: "
                     "the untuned stack stays in every case measured")
    return CampaignReportData(name=name, storage=redact(storage_url or default_storage_url()),
                              rows=rows, knobs=knobs, patterns=patterns(rows), notes=tuple(notes))
