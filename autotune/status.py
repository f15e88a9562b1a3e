"""Status of a study read from its storage alone, so it works while another process runs it."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import asdict, dataclass

import optuna
from optuna.trial import TrialState

from .claims import BELOW_NOISE, below_noise_floor, interval_text, verification_for
from .noise import noise_floor
from .storage import (StoredRules, TrialRecord, load_baselines, stored_config,
                      stored_confirmation, stored_rules, stored_run, stored_verification)
from .units import describe_sizes


@dataclass(frozen=True)
class StudyStatus:
    study: str
    alive: bool
    pid: int | None
    host: str | None
    running_trial: int | None
    running_params: dict | None
    eta_seconds: float | None
    collective: str
    nodes: int
    ppn: int
    sizes: str
    trials_complete: int
    trials_pruned: int
    trials_failed: int  # launched and failed
    trials_running: int
    best_trial: int | None
    best_speedup: float | None
    best_is_default: bool
    default_speedup: float | None  # the default re-measured as a trial: shows the noise floor
    baseline_launches: int
    last_baseline: str | None
    recent_drift: float | None  # mean drift of the last few default-config launches
    bench_seconds: float
    confirmed_best_trial: int | None = None
    best_speedup_ci: tuple[float, float] | None = None
    confirmation: str = ""
    proposals_skipped: int = 0  # proposals failed without a launch (TrialKey.SKIPPED)
    verification: str = ""  # the independent check of the recommended trial, one line
    verification_detail: dict | None = None  # StoredVerification.to_dict()
    noise_floor: str = ""  # NoiseFloor.describe()
    noise_floor_detail: dict | None = None  # NoiseFloor.to_dict()
    below_noise_floor: bool = False  # the claimed gain lies within the noise floor
    per_size_rules: str = ""  # the per-size stage's verdict, one line
    per_size_detail: dict | None = None  # StoredRules.to_dict()

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def render(self) -> str:
        if self.alive:
            daemon = f"running: pid {self.pid} on {self.host}"
            if self.running_trial is not None:
                daemon += f", trial {self.running_trial} in progress"
            if self.eta_seconds is not None:
                daemon += f", about {self.eta_seconds / 60:.0f} min left"
        else:
            daemon = "not running"
        lines = [f"study {self.study}: {self.collective} on {self.nodes} node x {self.ppn} ranks, "
                 f"{self.sizes}", daemon,
                 f"trials: {self.trials_complete} complete, {self.trials_pruned} pruned, "
                 f"{self.trials_failed} failed, {self.trials_running} running "
                 f"({self.bench_seconds:.0f} s of benchmarks)"
                 + (f"; {self.proposals_skipped} proposals skipped unlaunched (already measured "
                    "or refused before)" if self.proposals_skipped else "")]
        if self.best_speedup is not None and self.best_is_default:
            lines.append("best: the default configuration; no candidate beat it yet")
        elif self.best_speedup is not None:
            lines.append(f"best: trial {self.best_trial}, speedup {self.best_speedup:.3f}x over "
                         "the default")
        if self.confirmation:
            lines.append(self.confirmation)
        lines += [line for line in (self.verification, self.noise_floor, self.per_size_rules)
                  if line]
        if self.below_noise_floor:
            lines.append(BELOW_NOISE)
        if self.last_baseline:
            drift = (f", recent drift {self.recent_drift:+.3f} (log-ratio to the run's first default launch)"
                     if self.recent_drift is not None else "")
            lines.append(f"default config: {self.baseline_launches} interleaved launches, last at "
                         f"{self.last_baseline}{drift}")
        return "\n".join(lines)


def study_status(study: optuna.Study, storage_url: str | None = None) -> StudyStatus:
    from .daemon import StudyLock
    from .storage import default_storage_url

    owner = StudyLock.of(storage_url or default_storage_url(), study.study_name).owner()
    trials = [TrialRecord.from_trial(t) for t in study.get_trials(deepcopy=False)]
    running = [t for t in trials if t.state == TrialState.RUNNING.name]
    run = stored_run(study)
    eta = None
    if owner and run:
        mine = [t for t in trials if t.run_id == run.run_id
                and t.datetime_complete and t.datetime_start and not t.skipped]
        if mine:
            mean = sum((t.datetime_complete - t.datetime_start).total_seconds() for t in mine) / len(mine)
            eta = max(0, run.trials_planned - len(mine)) * mean
            if run.deadline:
                eta = min(eta, max(0.0, run.deadline - dt.datetime.now().timestamp()))
    by_state = {s: sum(1 for t in trials if t.state == s.name) for s in TrialState}
    skipped = sum(1 for t in trials if t.skipped and t.state == TrialState.FAIL.name)
    config = stored_config(study)
    best = None
    if by_state[TrialState.COMPLETE]:
        best_number = study.best_trial.number
        best = next(t for t in trials if t.number == best_number)
    default = next((t for t in trials if t.is_default
                    and t.state == TrialState.COMPLETE.name), None)
    baselines = load_baselines(study)
    last = baselines[-1] if baselines else None
    recent = [b.drift for b in baselines[-5:] if b.drift is not None]
    confirmation = stored_confirmation(study)
    confirmed_best, ci, conf_line = None, None, ""
    claimed_trial, claimed = None, None  # what export recommends, and the speedup it claims
    if confirmation and confirmation.legacy:
        conf_line = ("the stored confirmation was made by an older autotune (a percentile bootstrap "
                     "over 5 rounds, which did not hold): it claims nothing; run `autotune start` "
                     "again to confirm anew")
    elif confirmation:
        chosen = confirmation.best
        if chosen is None:
            conf_line = "confirmed: no candidate is faster than the default beyond doubt"
        else:
            confirmed_best, ci = chosen.trial, chosen.speedup_interval
            assert ci is not None
            claimed_trial, claimed = chosen.trial, chosen.speedup
            interval = interval_text(confirmation.confidence, confirmation.family, *ci,
                                     confirmation.systematic, confirmation.systematic_note)
            conf_line = (f"confirmed best: trial {confirmed_best}, speedup {chosen.speedup:.3f}x "
                         f"({interval})")
    elif best is not None and not best.is_default and best.value is not None:
        claimed_trial, claimed = best.number, math.exp(-best.value)
    check = verification_for(stored_verification(study), claimed_trial)
    noise = noise_floor(study)
    rules = stored_rules(study)
    return StudyStatus(
        per_size_rules=_rules_line(study, rules),
        per_size_detail=rules.to_dict() if rules else None,
        confirmed_best_trial=confirmed_best,
        best_speedup_ci=ci,
        confirmation=conf_line,
        verification=check.describe() if check else "",
        verification_detail=check.to_dict() if check else None,
        noise_floor=noise.describe() if noise else "",
        noise_floor_detail=noise.to_dict() if noise else None,
        below_noise_floor=below_noise_floor(noise, claimed),
        study=study.study_name,
        alive=owner is not None,
        pid=owner.pid if owner else None,
        host=owner.host if owner else None,
        running_trial=running[-1].number if running else None,
        running_params=dict(running[-1].params) if running else None,
        eta_seconds=eta,
        collective=config.collective if config else "?",
        nodes=config.nodes if config else 0,
        ppn=config.ppn if config else 0,
        sizes=describe_sizes(config.sizes) if config else "?",
        trials_complete=by_state[TrialState.COMPLETE],
        trials_pruned=by_state[TrialState.PRUNED],
        trials_failed=by_state[TrialState.FAIL] - skipped,
        proposals_skipped=skipped,
        trials_running=by_state[TrialState.RUNNING],
        best_trial=best.number if best else None,
        best_speedup=math.exp(-best.value) if best and best.value is not None else None,
        best_is_default=bool(best and best.is_default),
        default_speedup=(math.exp(-default.value) if default and default.value is not None
                         else None),
        baseline_launches=len(baselines),
        last_baseline=(dt.datetime.fromtimestamp(last.started + last.seconds)
                       .strftime("%Y-%m-%d %H:%M:%S") if last else None),
        recent_drift=(sum(recent) / len(recent)) if recent else None,
        bench_seconds=sum(t.bench_seconds for t in trials),
    )


def _rules_line(study: optuna.Study, rules: StoredRules | None) -> str:
    """The per-size stage's verdict, or that it belongs to an earlier best (export ignores it)."""
    from .errors import AutotuneError
    from .export import best_config

    if rules is None:
        return ""
    try:
        current = best_config(study).trial
    except AutotuneError:
        current = None
    if rules.trial != current:
        return (f"per-size rules: measured for trial {rules.trial}, not the current best; the "
                "next `autotune start` measures them anew")
    return f"per-size rules: {rules.failed or rules.verdict}"
