"""The data behind every figure and table of the report, computed from a study without drawing
anything, so that tests check numbers, not pixels. Every class is a frozen dataclass; `build`
reads the study once and fills them."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import optuna

from .. import objective
from ..analysis import (HockneyFit, OverlapRow, effective_bytes, fit_hockney, overlap_rows,
                        volume_formula)
from ..benchmarks import is_nonblocking
from ..claims import interval_text, trust_lines
from ..errors import InputError
from ..stats import mean_interval
from ..storage import (RESOLUTION_ATTR, BaselineLaunch, StoredConfirmation, StoredRules,
                       StudyConfig, TrialRecord, load_baselines, stored_config,
                       stored_confirmation, stored_rules, trial_records)
from ..units import format_size
from ._cost import CostData, SecondsData, cost_data, seconds_data
from ._curves import (CONFIDENCE, CliffRow, ConfigCurve, baseline_launches, cliffs_of,
                      config_curve, launches_by_size, protocol_knobs)

if TYPE_CHECKING:
    from ..export import BestConfig

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


# ------------------------------------------------------------------ building


def build(study: optuna.Study, now: dt.datetime | None = None) -> ReportData:
    """Everything the page shows, from the study (read only)."""
    from ..export import best_config

    config = stored_config(study)
    if config is None:
        raise InputError(f"study {study.study_name!r} holds no autotune settings: not made by "
                         "`autotune start`")
    best = best_config(study)  # InputError when nothing completed
    records = [r for r in trial_records(study) if r.state != "WAITING"]
    by_number = {r.number: r for r in records}
    default = next((r for r in records if r.is_default and r.state == "COMPLETE"), None)
    baselines = load_baselines(study)
    confirmation = stored_confirmation(study)
    pml = pml_in_force(study.user_attrs.get(RESOLUTION_ATTR) or {},
                       default.params if default else {})
    nprocs = config.nodes * config.ppn

    subject = speedup_subject(best, records)
    speedup = (speedup_data(by_number[subject], config.weights, best, subject == best.trial)
               if subject is not None else None)
    if config.objective == "overlap":  # its scored quantity is no time: draw t_ovrl instead
        curves = t_ovrl_curves(config, best, subject, records, pml)
    else:
        curves = comparison_curves(config, best, subject, records, baselines, confirmation, pml)
    history = history_data(records, baselines)
    seconds = seconds_data(records, baselines, confirmation, config,
                           _rules_for(study, best.trial))
    return ReportData(
        facts=study_facts(study, config, records, now),
        verdict=verdict(best, confirmation, speedup, records, default),
        curves=curves, cliffs=cliffs_of(curves, config.collective, nprocs), speedup=speedup,
        history=history, seconds=seconds, importance=importance_data(study, records),
        hockney=hockney_data(curves, config.collective, nprocs),
        cost=cost_data(study, config, records, seconds, best),
        rules=_rules_for(study, best.trial),
        overlap=overlap_data(config, best, records), objective=config.objective)


def pml_in_force(resolution: Mapping[str, Any], default_params: Mapping[str, Any]) -> str:
    """What `pml unset` selects on these nodes: named by the resolution when it removed the
    explicit choice as the same as unset; else ucx when the default ran UCX knobs; else ''."""
    for line in resolution.get("removed") or []:
        what, _, why = str(line).partition(": ")
        if what.startswith("pml=") and why.startswith("the same as unset"):
            return what.removeprefix("pml=")
    if default_params.get("pml") == "unset" and "UCX_TLS" in default_params:
        return "ucx"
    return ""


def study_facts(study: optuna.Study, config: StudyConfig, records: Sequence[TrialRecord],
                now: dt.datetime | None) -> StudyFacts:
    host = next((r.host for r in records if r.host), {})
    states = [r.state for r in records]
    return StudyFacts(
        study=study.study_name, collective=config.collective, nodes=config.nodes, ppn=config.ppn,
        sizes=tuple(config.sizes), repetitions=config.repetitions,
        benchmark=config.benchmark or "?", space=config.space,
        weights_source=config.weights_source, mpi=str(host.get("mpi") or "?"),
        ucx=str(host.get("ucx") or "-"), host=str(host.get("host") or "?"),
        cpu=str(host.get("cpu_model") or "?"), trials=len(records),
        complete=states.count("COMPLETE"), pruned=states.count("PRUNED"),
        failed=sum(1 for r in records if r.state == "FAIL" and not r.skipped),
        skipped=sum(1 for r in records if r.state == "FAIL" and r.skipped),
        generated=(now or dt.datetime.now().astimezone()).strftime("%Y-%m-%d %H:%M %Z").strip())


def changes(record: TrialRecord | None, default: TrialRecord | None) -> str:
    """`pml=ucx UCX_TLS=sm ...`: the knobs a trial sets away from the default's values."""
    if record is None:
        return ""
    base = default.params if default else {}
    diff = [f"{k}={v}" for k, v in record.params.items() if base.get(k, object()) != v]
    return " ".join(diff) if diff else "(the default's values)"


def speedup_subject(best: BestConfig, records: Sequence[TrialRecord]) -> int | None:
    """The trial whose per-size gain is shown: the confirmed (or exported) best; when that is the
    default, the search's best non-default trial, shown as unconfirmed."""
    if not best.is_default:
        return best.trial
    complete = [r for r in records if r.state == "COMPLETE" and not r.is_default
                and r.value is not None and r.raw_us]
    return min(complete, key=lambda r: r.value).number if complete else None


def speedup_data(record: TrialRecord, weights: Mapping[int, float], best: BestConfig,
                 confirmed_best: bool) -> SpeedupData:
    """Per size: mean over launches of log(t / t of the paired default launch), Student-t 95%."""
    used = {s: w for s, w in weights.items() if w > 0}
    total = sum(w for s, w in used.items() if s in record.raw_us) or 1.0
    rows = []
    for size in sorted(record.raw_us):
        times, paired = record.raw_us[size], record.default_us.get(size) or []
        logs = [objective.log_ratio(t, d) for t, d in zip(times, paired) if t > 0 and d > 0]
        if not logs:
            continue
        interval = mean_interval(logs, CONFIDENCE)
        speed, low, high = interval.speedup()
        weight = used.get(size, 0.0) / total
        rows.append(SizeSpeedup(size=size, weight=weight, speedup=speed,
                                low=low if math.isfinite(low) else 0.0,
                                high=high if math.isfinite(high) else math.inf,
                                launches=interval.n, contribution=-weight * interval.mean))
    verified: tuple[tuple[int, float, float, float], ...] = ()
    label = ""
    if confirmed_best and best.verification is not None and best.verification.sizes:
        label = best.verification.label
        verified = tuple((v.size, v.speedup, *v.speedup_interval)
                         for v in best.verification.sizes)
    return SpeedupData(trial=record.number,
                       label=f"trial {record.number}" + ("" if confirmed_best or not best.is_default
                                                          else " (search's best, unconfirmed)"),
                       confirmed=confirmed_best and best.confirmed and not best.is_default,
                       sizes=tuple(rows),
                       weighted=math.exp(sum(r.contribution for r in rows)),
                       verified_label=label, verified=verified)


def verdict(best: BestConfig, confirmation: StoredConfirmation | None,
            speedup: SpeedupData | None, records: Sequence[TrialRecord],
            default: TrialRecord | None) -> Verdict:
    by_number = {r.number: r for r in records}
    low = high = None
    interval = ""
    if best.confirmed_speedup:
        speed, low, high = best.confirmed_speedup
        interval = interval_text(best.confidence, best.confirmed_family, low, high)
    rows = speedup.sizes if speedup else ()
    faster = tuple(r.size for r in rows if r.low > 1.0)
    slower = tuple(r.size for r in rows if r.high < 1.0)
    unclear = tuple(r.size for r in rows if r.low <= 1.0 <= r.high)
    if best.is_default:
        winner = None
        if best.confirmed:
            headline = ("No configuration beat the untuned default beyond doubt: keep the untuned "
                        "stack (no setting at all).")
        else:
            headline = ("The untuned default stays: no candidate was faster in the search, or none "
                        "could be confirmed.")
    else:
        winner = best.trial
        if best.confirmed_speedup:
            headline = (f"Trial {best.trial} is {best.confirmed_speedup[0]:.3f}x as fast as the "
                        f"untuned default ({interval}), confirmed in interleaved rounds.")
        else:
            headline = (f"UNCONFIRMED: trial {best.trial} measured {best.speedup:.3f}x over the "
                        "default in the search (the best of many noisy draws; no confirmation "
                        "ran).")
        if best.disagrees:
            headline += (" NOT RECOMMENDED: the independent check disagrees; the export keeps "
                         "the untuned stack.")
    settings = tuple([("env", k, v) for k, v in sorted(best.env.items())]
                     + [("mca", k, v) for k, v in sorted(best.mca.items())]
                     + ([("mpirun", "arguments", " ".join(best.mpirun_args))]
                        if best.mpirun_args else []))
    return Verdict(headline=headline, winner=winner, confirmed=best.confirmed,
                   speedup=best.claimed, low=low, high=high, interval=interval,
                   faster_sizes=faster, slower_sizes=slower, unclear_sizes=unclear,
                   settings=settings,
                   trust=tuple(trust_lines(best.claimed, best.verification, best.noise)),
                   candidates=candidate_rows(confirmation, by_number, default),
                   confirmation_note=_confirmation_note(confirmation))


def _confirmation_note(confirmation: StoredConfirmation | None) -> str:
    if confirmation is None:
        return ("No confirmation ran: the figures below are the search's own, the best of many "
                "noisy draws.")
    note = (f"{len(confirmation.candidates)} candidate(s) re-measured against the default in up "
            f"to {confirmation.rounds} interleaved rounds; {confirmation.level}.")
    if confirmation.stopped:
        note += f" Rounds stopped with a candidate undecided ({confirmation.stopped})."
    if confirmation.legacy:
        note += " Written by an older version whose intervals did not hold: not a claim."
    return note


def candidate_rows(confirmation: StoredConfirmation | None, by_number: Mapping[int, TrialRecord],
                   default: TrialRecord | None) -> tuple[CandidateRow, ...]:
    if confirmation is not None and confirmation.candidates:
        rows = []
        for cand in confirmation.candidates:
            record = by_number.get(cand.trial)
            low, high = cand.speedup_interval or (None, None)
            rows.append(CandidateRow(trial=cand.trial, changes=changes(record, default),
                                     search_speedup=record.speedup if record else None,
                                     speedup=cand.speedup, low=low, high=high,
                                     verdict=f"failed: {cand.failed}" if cand.failed
                                     else cand.verdict,
                                     rounds=cand.rounds))
        return tuple(rows)
    top = sorted((r for r in by_number.values() if r.state == "COMPLETE" and not r.is_default
                  and r.value is not None and r.value < 0),  # the search saw it faster
                 key=lambda r: r.value)[:MAX_CANDIDATES]
    return tuple(CandidateRow(trial=r.number, changes=changes(r, default), search_speedup=r.speedup,
                              speedup=None, low=None, high=None, verdict="not confirmed", rounds=0)
                 for r in top)


def comparison_curves(config: StudyConfig, best: BestConfig, subject: int | None,
                      records: Sequence[TrialRecord], baselines: Sequence[BaselineLaunch],
                      confirmation: StoredConfirmation | None, pml: str) -> tuple[ConfigCurve, ...]:
    """The untuned default, the best, and the next candidates. The default's curve is made of the
    default launches paired with the best's own launches (same minutes, so the two curves compare
    as the speedup figure does); without a best, of every default launch of the study."""
    by_number = {r.number: r for r in records}
    default = next((r for r in records if r.is_default and r.raw_us), None)
    nprocs = config.nodes * config.ppn
    paired = launches_by_size(by_number[subject].default_us) if subject is not None else {}
    default_launches = paired or baseline_launches(baselines) or (
        launches_by_size(default.raw_us) if default else {})
    curves = []
    if default_launches:
        label = (f"untuned default (paired with trial {subject})" if paired
                 else "untuned default")
        curves.append(config_curve("default", None, label, default_launches,
                                   config.collective, nprocs, protocol_knobs(default, pml)))
    order: list[int] = []
    if subject is not None:
        order.append(subject)
    if confirmation is not None:
        order += [c.trial for c in confirmation.candidates]
    order += [r.number for r in sorted((r for r in records if r.state == "COMPLETE"
                                        and not r.is_default and r.value is not None
                                        and r.value < 0),  # the search saw it faster
                                       key=lambda r: r.value)]
    shown: list[int] = []
    for number in order:
        record = by_number.get(number)
        if (number in shown or record is None or record.is_default or not record.raw_us
                or record.state != "COMPLETE" or len(shown) >= MAX_CURVES):
            continue
        shown.append(number)
        role = "best" if number == subject else "candidate"
        label = (f"best: trial {number}" if role == "best" and not best.is_default
                 else f"{'search best' if role == 'best' else 'candidate'}: trial {number}")
        curves.append(config_curve(role, number, label, launches_by_size(record.raw_us),
                                   config.collective, nprocs, protocol_knobs(record, pml)))
    return tuple(curves)


def t_ovrl_curves(config: StudyConfig, best: BestConfig, subject: int | None,
                  records: Sequence[TrialRecord], pml: str) -> tuple[ConfigCurve, ...]:
    """An overlap study's curves: the t_ovrl of every launch of the default trial and of the
    best (IMB-NBC's columns stored with each launch), each from its own trial's launches."""
    by_number = {r.number: r for r in records}
    default = next((r for r in records if r.is_default and r.state == "COMPLETE"), None)
    nprocs = config.nodes * config.ppn
    curves = []
    for record, role in ((default, "default"), (by_number.get(subject) if subject is not None
                                                else None, "best")):
        if record is None or (role == "best" and record.is_default):
            continue
        launches = {s: [t.t_ovrl_us for t in v] for s, v in record.nbc_samples().items()}
        if not launches:
            continue
        label = ("untuned default (its own trial)" if role == "default" else
                 f"best: trial {record.number}" if not best.is_default
                 else f"search best: trial {record.number}")
        curves.append(config_curve(role, None if role == "default" else record.number, label,
                                   launches, config.collective, nprocs,
                                   protocol_knobs(record, pml)))
    return tuple(curves)


def overlap_data(config: StudyConfig, best: BestConfig,
                 records: Sequence[TrialRecord]) -> OverlapData | None:
    """IMB-NBC's columns per size, default against best (None: a blocking collective)."""
    if not is_nonblocking(config.collective):
        return None
    default = next((r for r in records if r.is_default and r.state == "COMPLETE"), None)
    subject = speedup_subject(best, records)
    chosen = next((r for r in records if r.number == subject), None)

    def side(record: TrialRecord | None, label: str) -> OverlapSide | None:
        if record is None:
            return None
        rows = overlap_rows(record.nbc_samples())
        return OverlapSide(record.number, label, rows) if rows else None

    best_label = (f"best: trial {subject}" if not best.is_default
                  else f"search best: trial {subject} (unconfirmed)")
    return OverlapData(objective=config.objective,
                       default=side(default, f"untuned default (trial "
                                    f"{default.number if default else '?'})"),
                       best=side(chosen, best_label) if chosen is not None
                       and not chosen.is_default else None)


def study_overlap(study: optuna.Study, best: BestConfig) -> OverlapData | None:
    """overlap_data of a stored study (`autotune best`); None for a blocking collective."""
    config = stored_config(study)
    if config is None or not is_nonblocking(config.collective):
        return None
    return overlap_data(config, best, [r for r in trial_records(study) if r.state != "WAITING"])


def history_data(records: Sequence[TrialRecord],
                 baselines: Sequence[BaselineLaunch]) -> HistoryData:
    """Value per trial in trial order, best so far, pruned trials apart; the default's drift."""
    starts = [r.datetime_start.timestamp() for r in records if r.datetime_start]
    starts += [b.started for b in baselines]
    origin = min(starts) if starts else 0.0
    points = []
    best: float | None = None
    for rec in sorted(records, key=lambda r: r.number):
        if rec.state in ("WAITING",):
            continue
        value = None
        if rec.state == "COMPLETE":
            value = rec.speedup if rec.speedup is not None else (
                objective.speedup(rec.value) if rec.value is not None else None)
            if value is not None:
                best = value if best is None else max(best, value)
        elif rec.state == "PRUNED":
            value = rec.partial_speedup
        minutes = ((rec.datetime_start.timestamp() - origin) / 60.0
                   if rec.datetime_start else None)
        points.append(TrialPoint(trial=rec.number, state=rec.state, is_default=rec.is_default,
                                 speedup=value, skipped=rec.skipped, best_so_far=best,
                                 minutes=minutes,
                                 bench_seconds=rec.bench_seconds))
    drift = tuple(DriftPoint(minutes=(b.started - origin) / 60.0, ratio=math.exp(b.drift),
                             block=b.block)
                  for b in sorted(baselines, key=lambda b: b.started) if b.drift is not None)
    return HistoryData(points=tuple(points), drift=drift)


def importance_data(study: optuna.Study, records: Sequence[TrialRecord]) -> ImportanceData:
    """Optuna's fANOVA importance over the completed trials, and the best speedup per knob
    value (every knob, conditional ones too, which fANOVA leaves out)."""
    complete = [r for r in records if r.state == "COMPLETE" and r.value is not None]
    per_knob = []
    names = sorted({k for r in complete for k in r.params})
    for name in names:
        groups: dict[str, list[float]] = {}
        for r in complete:
            if name in r.params:
                groups.setdefault(str(r.params[name]), []).append(
                    r.speedup if r.speedup is not None else objective.speedup(r.value))
        if len(groups) < 2:
            continue  # one value only: nothing to compare (a context such as NPS)
        per_knob.append(KnobValues(knob=name, values=tuple(
            (value, max(speeds), len(speeds)) for value, speeds in groups.items())))
    evaluator = "fANOVA (optuna.importance.FanovaImportanceEvaluator)"
    importances: tuple[tuple[str, float], ...] = ()
    note = ""
    varied = [k.knob for k in per_knob]
    present = [n for n in varied if all(n in r.params for r in complete)]
    left_out = [n for n in varied if n not in present]
    if len(complete) < 3 or not present:
        note = (f"Needs at least 3 completed trials and a knob that every one of them set "
                f"({len(complete)} completed)")
    else:
        try:
            raw = optuna.importance.get_param_importances(
                study, params=present,
                evaluator=optuna.importance.FanovaImportanceEvaluator(seed=0))
            importances = tuple(sorted(((k, float(v)) for k, v in raw.items()
                                        if math.isfinite(float(v))), key=lambda kv: -kv[1]))
        except (RuntimeError, ValueError, ZeroDivisionError, FloatingPointError) as exc:
            note = f"Optuna could not compute it: {str(exc).splitlines()[0][:160]}"
        if left_out and not note:
            note = ("Left out (set only on some trials, which fANOVA cannot weigh): "
                    + ", ".join(left_out))
    return ImportanceData(evaluator=evaluator, importances=importances, note=note,
                          per_knob=tuple(per_knob))


def hockney_data(curves: Sequence[ConfigCurve], collective: str, nprocs: int) -> HockneyData:
    fits = []
    for cc in curves:
        if len(cc.curve.sizes) >= 3:
            try:
                fits.append((cc, fit_hockney(cc.curve, collective, nprocs)))
            except InputError:  # no payload (barrier), or no size above 0 bytes: no line to fit
                continue
    factor = effective_bytes(collective, 1, nprocs)
    return HockneyData(collective=collective, nprocs=nprocs, volume=volume_formula(collective),
                       volume_factor=factor, fits=tuple(fits))


def size_list(sizes: Sequence[int], all_sizes: Sequence[int]) -> str:
    """`8 B, 1 KiB..64 KiB`: sizes that neighbour in the study's size list joined into ranges."""
    if not sizes:
        return "none"
    order = {s: i for i, s in enumerate(sorted(all_sizes))}
    ordered = sorted(sizes)
    runs: list[list[int]] = [[ordered[0]]]
    for size in ordered[1:]:
        if size in order and runs[-1][-1] in order and order[size] == order[runs[-1][-1]] + 1:
            runs[-1].append(size)
        else:
            runs.append([size])
    return ", ".join(format_size(r[0]) if len(r) == 1 else
                     f"{format_size(r[0])}..{format_size(r[-1])}" for r in runs)


@dataclass(frozen=True)
class VariantRatios:
    """One algorithm's time per size over the best configuration's own algorithm's."""

    label: str
    sizes: tuple[int, ...]
    ratios: tuple[float, ...]
    incumbent: bool = False


def per_size_ratios(rules: StoredRules) -> tuple[VariantRatios, ...]:
    """The per-size stage's measurements, relative to the incumbent (below 1: faster there)."""
    base = rules.variants[rules.incumbent].mean_us if rules.variants else {}
    out = []
    for i, variant in enumerate(rules.variants):
        sizes = tuple(s for s in sorted(variant.mean_us) if base.get(s))
        if variant.failed or not sizes:
            continue
        out.append(VariantRatios(variant.label, sizes,
                                 tuple(variant.mean_us[s] / base[s] for s in sizes),
                                 i == rules.incumbent))
    return tuple(out)


def _rules_for(study: optuna.Study, best_trial: int) -> StoredRules | None:
    """The per-size rules measured with the best configuration shown (earlier ones are stale)."""
    rules = stored_rules(study)
    return rules if rules is not None and rules.trial == best_trial else None
