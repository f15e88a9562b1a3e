"""The configuration to hand back: the best trial (or the confirmed one), with exactly the settings
it ran with as stored with the trial, not a re-derivation from a space file that may have changed.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import optuna
from optuna.trial import TrialState

from ..claims import interval_text, trust_lines, verification_for
from ..errors import InputError, SpaceError, StorageError
from ..noise import NoiseFloor, noise_floor
from ..rules import RuleSet
from ..space import check_args, check_name, check_value
from ..storage import (StoredRules, StoredVerification, StudyConfig, TrialRecord, stored_config,
                       stored_confirmation, stored_rules, stored_verification)
from .. import units


@dataclass(frozen=True)
class BestConfig:
    study: str
    trial: int
    value: float
    speedup: float
    is_default: bool
    params: dict
    env: dict[str, str]
    mca: dict[str, str]
    mpirun_args: tuple[str, ...]
    host: dict
    context: dict
    config: StudyConfig | None
    n_complete: int
    pruned: bool = False  # the search stopped it early; only the confirmation measured it in full
    confirmed: bool = False
    confirmed_speedup: tuple[float, float, float] | None = None  # speedup, CI low, CI high
    confirmed_level: str = ""  # how to read the interval: `95% CI, simultaneous over 9`
    confirmed_family: int = 1  # intervals held together in that confirmation
    confirmed_systematic: float = 0.0  # the benchmark's uncertainty against IMB-MPI1 in it
    confirmed_choice: str = ""  # why the confirmation exported a simpler candidate, if it did
    confirmed_systematic_note: str = ""  # where the benchmark's term was measured, or not
    confidence: float = 0.95
    verification: StoredVerification | None = None  # the independent check of this trial
    noise: NoiseFloor | None = None  # the allocation's default-vs-default spread
    force: bool = False  # write the settings even where the independent check disagrees
    rules: RuleSet | None = None  # measured per-size rules (None: one global configuration)
    rules_measured: StoredRules | None = None  # how they were chosen and measured

    @property
    def search_figures(self) -> tuple[float | None, float | None]:
        """The search's own (speedup, value) of this trial; (None, None) for a trial the search
        pruned: it has no figure of its own there, only the confirmation's."""
        return (None, None) if self.pruned else (self.speedup, self.value)

    @property
    def disagrees(self) -> bool:
        """The independent check contradicts the search's claim (see verify.agreement)."""
        return self.verification is not None and self.verification.disagrees

    @property
    def withheld(self) -> bool:
        """The file recommends the untuned stack: every setting commented out."""
        return self.disagrees and not self.force

    @property
    def claimed(self) -> float | None:
        """The speedup the export claims (None when it restates the default)."""
        if self.is_default:
            return None
        return self.confirmed_speedup[0] if self.confirmed_speedup else self.speedup


def best_config(study: optuna.Study) -> BestConfig:
    complete = [TrialRecord.from_trial(t)
                for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))]
    if not complete:
        raise InputError(f"study {study.study_name!r} has no completed trial yet")
    best_number = study.best_trial.number
    best = next(r for r in complete if r.number == best_number)
    confirmation = stored_confirmation(study)
    interval = None
    if confirmation is None or confirmation.legacy:
        if not best.is_default and (best.value or 0.0) >= 0:  # not even the search saw it faster
            best = next((r for r in complete if r.is_default), best)
    else:
        chosen = confirmation.best
        if chosen is None:  # confirmed: nothing beats the default
            best = next((r for r in complete if r.is_default), best)
        else:
            best = next((r for r in complete if r.number == chosen.trial), None)
            best = best or _pruned_trial(study, chosen.trial)
            assert chosen.speedup is not None and chosen.speedup_interval is not None
            interval = (chosen.speedup, *chosen.speedup_interval)
    settings = best.settings
    rules = _rules_of(study, best)
    return BestConfig(study=study.study_name, trial=best.number, value=float(best.value or 0.0),
                      speedup=float(best.speedup or 0.0), is_default=best.is_default,
                      params=dict(best.params), env=dict(settings.env), mca=dict(settings.mca),
                      mpirun_args=tuple(settings.mpirun_args), host=dict(best.host),
                      context=dict(best.context), config=stored_config(study),
                      n_complete=len(complete), pruned=best.state == TrialState.PRUNED.name,
                      confirmed=confirmation is not None and not confirmation.legacy,
                      confirmed_speedup=interval,
                      confirmed_level=confirmation.level if confirmation else "",
                      confirmed_family=confirmation.family if confirmation else 1,
                      confirmed_systematic=confirmation.systematic if confirmation else 0.0,
                      confirmed_choice=confirmation.choice if confirmation else "",
                      confirmed_systematic_note=(confirmation.systematic_note if confirmation
                                                 else ""),
                      confidence=confirmation.confidence if confirmation else 0.95,
                      verification=None if best.is_default else verification_for(
                          stored_verification(study), best.number, "rules" in rules),
                      noise=noise_floor(study), **rules)


def _pruned_trial(study: optuna.Study, number: int) -> TrialRecord:
    """A confirmed trial the search stopped early: the confirmation, which measured it in full,
    may race a one-knob change the search pruned in a noisy start (strategy.screen)."""
    record = next((TrialRecord.from_trial(t) for t in study.get_trials(
        deepcopy=False, states=(TrialState.PRUNED,)) if t.number == number), None)
    if record is None:
        raise StorageError(f"the stored confirmation of study {study.study_name} names trial "
                           f"{number}, which is not a completed or pruned trial")
    return record


def _rules_of(study: optuna.Study, best: TrialRecord) -> dict:
    """Per-size rules go with the export only when they were measured with this configuration's
    other settings and adopted (every band that differs from it faster there beyond doubt, the
    whole surely slower than neither it nor the untuned stack)."""
    measured = stored_rules(study)
    if measured is None or measured.trial != best.number:
        return {}
    if measured.rules is None or not measured.adopted:
        return {"rules_measured": measured}
    return {"rules": measured.rules, "rules_measured": measured}


def describe_sizes(config: StudyConfig | None) -> str:
    if config is None:
        return "unknown sizes"
    sizes = config.sizes
    return units.describe_sizes(sizes)


def check_exportable(best: BestConfig) -> None:
    """Names and values come from storage, which others may write (a shared database): check them
    against the same allow-lists as a search space before they reach a file someone will source."""
    try:
        for name, value in best.env.items():
            check_name("env", name, "stored trial")
            check_value("stored trial", name, value)
        for name, value in best.mca.items():
            check_name("mca", name, "stored trial")
            check_value("stored trial", name, value)
        check_args(list(best.mpirun_args), "stored trial")
        hooks = [n for n in (*best.env, *best.mca) if "autotune_test" in n.lower()]
        if hooks:  # the kernel's test-only fault injection (wrong results on purpose)
            raise SpaceError(f"{hooks[0]} is a test-only hook of the benchmark kernel")
    except SpaceError as exc:
        raise StorageError(f"trial {best.trial} of study {best.study} holds a setting that is not "
                           f"safe to export: {exc}") from None


def printable(value: object) -> str:
    """Header fields come from storage and user input: one line of printable text, always."""
    return "".join(c if c.isprintable() else "?" for c in str(value))


def header_lines(best: BestConfig, now: dt.datetime) -> list[str]:
    """Comment lines (`# ...`) that say what was exported, from which study, measured where."""
    config = best.config
    p = printable
    lines = [
        f"# autotune: best configuration of study {p(best.study)}",
        f"# exported {now.strftime('%Y-%m-%d %H:%M:%S %Z')}",
    ]
    if config:
        lines.append(f"# {p(config.collective)} on {config.nodes} node(s) x {config.ppn} ranks per "
                     f"node, space {p(config.space)}")
        if units.is_app_run(config.sizes):  # an application's study: what it measured instead
            lines.append(f"# scored by {p(config.benchmark)}, one value per launch")
        else:
            lines.append(f"# scored over {describe_sizes(config)}, weights: "
                         f"{p(config.weights_source)}")
    if best.pruned:
        lines.append(f"# trial {best.trial}, stopped early in the search ({best.n_complete} "
                     "trials completed) and measured in full in the confirmation")
    elif best.is_default:  # its ratio to itself is the allocation's noise, not a result
        lines.append(f"# {best.n_complete} completed trials; exported: trial {best.trial}, the "
                     "untuned stack itself")
    else:
        lines.append(f"# best of {best.n_complete} completed trials: trial {best.trial}, measured "
                     f"speedup {best.speedup:.3f}x over the default (weighted mean log-ratio "
                     f"{best.value:+.4f})")
    if best.confirmed_speedup:
        speed, low, high = best.confirmed_speedup
        interval = interval_text(best.confidence, best.confirmed_family, low, high,
                                 best.confirmed_systematic, best.confirmed_systematic_note)
        lines.append(f"# confirmed against the default in interleaved rounds: speedup {speed:.3f}x "
                     f"({interval})")
        if best.confirmed_systematic > 0 and best.confirmed_systematic_note:
            lines.append(f"# the benchmark's uncertainty against IMB-MPI1, "
                         f"{p(best.confirmed_systematic_note)}")
        if best.confirmed_choice:
            lines.append(f"# why this one: {p(best.confirmed_choice)}")
    elif not best.is_default:
        lines.append("# UNCONFIRMED: the search's own figure, the best of many noisy draws, not a "
                     "claim (no confirmation ran: see `autotune start --confirm`)")
    if best.disagrees:
        lines.append("# NOT RECOMMENDED: the independent check disagrees with the search; use "
                     "the untuned stack" + (". --force: the settings below are written anyway"
                                            if best.force else
                                            ": every setting below is commented out "
                                            "(`autotune export --force` writes them)"))
    lines += [f"# {p(line)}" for line in trust_lines(best.claimed, best.verification, best.noise)]
    if best.rules_measured is not None:
        lines.append(f"# per-size rules: {p(best.rules_measured.failed or best.rules_measured.verdict)}")
        if best.force and not best.rules_measured.adopted and best.rules_measured.rules:
            lines.append("# NOT ADOPTED per-size rules are written anyway (--force) where the "
                         "format holds them")
    if best.is_default:
        lines.append("# The default configuration is the best: no candidate beat it"
                     + (" beyond doubt in the confirmation" if best.confirmed else "")
                     + ". The lines below only restate it.")
    if best.host:
        lines.append(f"# measured on {p(best.host.get('host', '?'))}: {p(best.host.get('mpi', '?'))}, "
                     f"UCX {p(best.host.get('ucx') or 'n/a')}, {p(best.host.get('cpu_model', '?'))}"
                     + "".join(f", {p(k)}={p(v)}" for k, v in best.context.items()))
    return lines


def withhold(best: BestConfig, lines: list[str]) -> list[str]:
    """Every setting line commented out when the file recommends the untuned stack."""
    if not best.withheld:
        return lines
    return [line if line.startswith("#") else f"# {line}" for line in lines]
