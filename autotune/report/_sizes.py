"""The report's per-size data: the curves it compares (latency, and t_ovrl for a non-blocking
collective), the overlap table, the Hockney fit and the per-size stage's ratios."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import optuna

from ..analysis import effective_bytes, fit_hockney, overlap_rows, volume_formula
from ..benchmarks import is_nonblocking
from ..errors import InputError
from ..storage import (BaselineLaunch, StoredConfirmation, StoredRules, StudyConfig, TrialRecord,
                       stored_config, stored_rules, trial_records)
from ..units import format_size
from ._curves import ConfigCurve, baseline_launches, config_curve, launches_by_size, protocol_knobs
from ._model import MAX_CURVES, HockneyData, OverlapData, OverlapSide, VariantRatios

if TYPE_CHECKING:
    from ..export import BestConfig


def speedup_subject(best: BestConfig, records: Sequence[TrialRecord]) -> int | None:
    """The trial whose per-size gain is shown: the confirmed (or exported) best; when that is the
    default, the search's best non-default trial, shown as unconfirmed. None for a best the
    search pruned: its few search launches are what the confirmation was there to overrule."""
    if best.pruned:
        return None
    if not best.is_default:
        return best.trial
    complete = [r for r in records if r.state == "COMPLETE" and not r.is_default
                and r.value is not None and r.raw_us]
    return min(complete, key=lambda r: r.value).number if complete else None


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


def rules_of_best(study: optuna.Study, best_trial: int) -> StoredRules | None:
    """The per-size rules measured with the best configuration shown (earlier ones are stale)."""
    rules = stored_rules(study)
    return rules if rules is not None and rules.trial == best_trial else None
