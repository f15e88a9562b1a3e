"""Live progress of a foreground study: a bar with trial n/T, best speedup, pruned and failed counts,
and one log line per trial and baseline (readable in a terminal and in a log file alike)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .claims import interval_text
from .events import TrialOutcome
from .measure import LaunchRecord
from .storage import BaselineLaunch


def short_params(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


class ProgressDisplay:
    def __init__(self, total: int | None, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True, highlight=False)
        self.total = total
        self.done = 0
        self.pruned = 0
        self.failed = 0
        self.best: TrialOutcome | None = None
        self.baseline_count = 0
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=self.console, transient=True)
        self.trials_task = self.progress.add_task(self._description(), total=total)
        self.launch_task = self.progress.add_task("launches", total=1, visible=False)

    def __enter__(self) -> "ProgressDisplay":
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def _description(self) -> str:
        best = f"best {self.best.speedup:.3f}x (trial {self.best.number})" if self.best else "best -"
        return f"trials  {best}  pruned {self.pruned}  failed {self.failed}"

    def trial_started(self, number: int, params: dict[str, Any], is_default: bool) -> None:
        label = "default configuration" if is_default else short_params(params)
        self.progress.update(self.launch_task, description=escape(f"trial {number}: {label[:60]}"),
                             completed=0, visible=True)

    def launch_finished(self, record: LaunchRecord, total: int) -> None:
        self.progress.update(self.launch_task, completed=record.index + 1, total=total)

    def trial_finished(self, outcome: TrialOutcome, best: TrialOutcome | None) -> None:
        self.done += 1
        self.pruned += outcome.state == "PRUNED"
        self.failed += outcome.state == "FAIL"
        self.best = best
        if outcome.state == "COMPLETE":
            result = f"[green]speedup {outcome.speedup:.3f}x[/]"
        elif outcome.state == "PRUNED":
            result = "[yellow]pruned[/]"
        else:
            result = f"[red]failed[/] ({escape(outcome.fail_reason[:80])})"
        tag = " (default)" if outcome.is_default else ""
        self.console.print(
            f"trial {outcome.number:>3}{tag} {result}  {outcome.sizes_measured} "
            f"size{'s' if outcome.sizes_measured != 1 else ''}, "
            f"{outcome.launches} launches (+{outcome.baseline_launches} default"
            f"{f', +{outcome.check_launches} result check' if outcome.check_launches else ''}), "
            f"{outcome.bench_seconds:.1f} s  "
            f"[dim]{escape(short_params(outcome.params))}[/]")
        self.progress.update(self.trials_task, completed=self.done, description=self._description())
        self.progress.update(self.launch_task, visible=False)

    def baseline_finished(self, launch: BaselineLaunch) -> None:
        self.baseline_count += 1
        drift = f", drift {launch.drift:+.3f}" if launch.drift else ""
        self.progress.update(self.launch_task, description=escape(
            f"baseline launch {launch.id} (default config, size block {launch.block}{drift})"))

    def paused(self, reason: str, seconds: float) -> None:
        self.console.print(f"[red]paused[/]: {escape(reason)}")

    def confirming(self, candidates: int, rounds: int, skipped: str = "") -> None:
        if skipped:
            self.console.print(f"confirmation skipped: {escape(skipped)}")
            return
        self.console.print(f"confirming the best {candidates} against the default: {rounds} rounds "
                           "first, more while undecided; per size block a default launch, then "
                           "the candidates in random order, each paired with it")
        self.progress.update(self.launch_task, description="confirmation", visible=False)

    def confirmed(self, confirmation) -> None:
        if confirmation is None:
            return
        for cand in confirmation.candidates:
            if cand.failed:
                self.console.print(f"  trial {cand.trial}: failed during confirmation ({escape(cand.failed)})")
                continue
            interval = cand.speedup_interval()
            if interval is None:
                self.console.print(f"  trial {cand.trial}: too few rounds to judge")
                continue
            text = interval_text(confirmation.confidence, confirmation.family, *interval,
                                 confirmation.systematic, confirmation.systematic_note)
            self.console.print(f"  trial {cand.trial}: speedup {cand.speedup:.3f}x ({text}) over "
                               f"{len(cand.round_scores)} rounds: {cand.verdict}")
        if confirmation.stopped:
            self.console.print(f"  rounds stopped: {escape(confirmation.stopped)}")
        if confirmation.best_trial is None:
            self.console.print("confirmed: no candidate is faster than the default beyond doubt; "
                               "the default stays")
        else:
            self.console.print(f"confirmed best: trial {confirmation.best_trial}")
            if confirmation.choice:
                self.console.print(f"  why: {escape(confirmation.choice)}")

    def ruling(self, variants: int, rounds: int) -> None:
        self.console.print(f"per-size rules: {variants} algorithms x every size, {rounds} "
                           "interleaved rounds, with the best configuration's other settings")
        self.progress.update(self.launch_task, description="per-size rules", visible=False)

    def ruling_skipped(self, reason: str) -> None:
        self.console.print(f"per-size rules skipped: {escape(reason)}")

    def composing(self, bands: int, rounds: int) -> None:
        self.console.print(f"per-size rules: {bands} bands; measuring the composed rules against "
                           f"the untuned stack and the best single configuration, {rounds} rounds")

    def ruled(self, rules) -> None:
        if rules is None:
            return
        if rules.rules is not None:
            for band in rules.rules.bands:
                self.console.print(f"  {band.label()}: {escape(band.choice.label())}")
        self.console.print(f"per-size rules: {escape(rules.failed or rules.verdict)}")

    def verifying(self, benchmark: str, rounds: int) -> None:
        self.console.print(f"independent check: the confirmed best against the untuned stack with "
                           f"{escape(benchmark)}, {rounds} interleaved rounds")
        self.progress.update(self.launch_task, description="independent check", visible=False)

    def verified(self, verification, notice: str = "") -> None:
        if notice:
            self.console.print(escape(notice))
        if verification is not None:
            self.console.print(escape(verification.describe()))
