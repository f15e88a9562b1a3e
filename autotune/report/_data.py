"""Building the report's data (`_model`) from a study: `build` reads the study once; the facts,
the verdict, the candidates, the history and the knob importance are made here, the per-size
data in `_sizes`."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import optuna

from .. import objective
from ..claims import interval_text, trust_lines
from ..errors import InputError
from ..stats import mean_interval
from ..storage import (RESOLUTION_ATTR, BaselineLaunch, StoredConfirmation, StudyConfig,
                       TrialRecord, load_baselines, stored_config, stored_confirmation,
                       trial_records)
from ._cost import cost_data, seconds_data
from ._curves import CONFIDENCE, cliffs_of
from ._model import (MAX_CANDIDATES, CandidateRow, DriftPoint, HistoryData, ImportanceData,
                     KnobValues, ReportData, SizeSpeedup, SpeedupData, StudyFacts, TrialPoint,
                     Verdict)
from ._sizes import (comparison_curves, hockney_data, overlap_data, rules_of_best,
                     speedup_subject, t_ovrl_curves)

if TYPE_CHECKING:
    from ..export import BestConfig


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
                           rules_of_best(study, best.trial))
    return ReportData(
        facts=study_facts(study, config, records, now),
        verdict=verdict(best, confirmation, speedup, records, default),
        curves=curves, cliffs=cliffs_of(curves, config.collective, nprocs), speedup=speedup,
        history=history, seconds=seconds, importance=importance_data(study, records),
        hockney=hockney_data(curves, config.collective, nprocs),
        cost=cost_data(study, config, records, seconds, best),
        rules=rules_of_best(study, best.trial),
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
        interval = interval_text(best.confidence, best.confirmed_family, low, high,
                                 best.confirmed_systematic, best.confirmed_systematic_note)
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
        if best.pruned:
            headline += (" The search stopped it early, so the per-size figures below do not "
                         "show it: only the confirmation measured it in full.")
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
    if confirmation.choice:
        note += f" The winner: {confirmation.choice}."
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
