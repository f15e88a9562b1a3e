"""The untuned stack's launches, interleaved with the trials' on each node group: one is due
before every `every` candidate launches of a size block (InterleavedDefault says when), each is
stored with its drift against the run's first, and every candidate launch is paired with the
default launch nearest before it on its own nodes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import optuna

from ..baseline import BaselineFailed, InterleavedDefault, Placement
from ..events import Events, RunSummary
from ..measure import LaunchFailed, LaunchRecord, PlannedLaunch
from ..space import LaunchSettings
from ..storage import BaselineLaunch, load_baselines, save_baseline


def group_broken(placed: Placement) -> bool:
    """After an infrastructure failure: did the group lose a node (then retrying is futile)?
    Groups that can tell (Ray) first give the cluster time to notice a dead node."""
    settle = getattr(placed.group, "settle", None)
    if settle is not None:
        settle()
    return bool(getattr(placed.group, "lost", ""))


class DefaultLaunches:
    """The default launches of one run, per node group; ids continue the study's."""

    def __init__(self, study: optuna.Study, settings: LaunchSettings, params: Mapping[str, Any],
                 *, run_id: str, every: int, weights: Mapping[int, float], events: Events,
                 summary: RunSummary, infra_retries: int, seed_of: Callable[[], int]) -> None:
        self.study = study
        self.settings, self.params = settings, dict(params)
        self.run_id, self.every, self.weights = run_id, every, weights
        self.events, self.summary = events, summary
        self.infra_retries, self.seed_of = infra_retries, seed_of
        self.groups: dict[tuple[str, ...], InterleavedDefault] = {}
        self._lock = threading.Lock()  # ids and groups: parallel trials share them
        existing = load_baselines(study)
        self.next_id = (existing[-1].id + 1) if existing else 1

    def of_group(self, hosts: tuple[str, ...]) -> InterleavedDefault:
        with self._lock:
            return self.groups.setdefault(hosts, InterleavedDefault(self.every, self.weights))

    def run_due(self, planned: PlannedLaunch, placed: Placement,
                trial: int | None = None) -> LaunchRecord | None:
        """Run the default launch due before a candidate launch of this block (of `trial`), if
        any. The default refused twice is fatal (BaselineFailed); the nodes failing it fail the
        trial as infrastructure after `infra_retries` more tries."""
        if not placed.baseline.due(planned.block, trial):
            return None
        refused = infra = 0
        while True:
            try:
                record = placed.measurer.run_launch(self.settings, planned, self.seed_of(),
                                                    params=self.params, is_default=True)
                break
            except LaunchFailed as exc:
                if exc.reason == "interrupted":
                    raise
                if exc.reason == "infrastructure":
                    # the nodes' fault, not the default's: the trial fails as infrastructure
                    infra += 1
                    if group_broken(placed) or infra > self.infra_retries:
                        raise
                    continue
                refused += 1
                if refused == 2:
                    raise BaselineFailed(
                        f"the default configuration failed twice ({exc}); nothing to compare "
                        f"against. stderr:\n{exc.stderr_tail}") from None
        with self._lock:
            launch = BaselineLaunch(id=self.next_id, run_id=self.run_id, block=planned.block,
                                    started=record.started, seconds=record.seconds,
                                    t_max_us=record.t_max_us, argv=record.argv, hosts=record.hosts)
            self.next_id += 1
        launch.drift = placed.baseline.drift(launch)
        placed.baseline.add(launch)
        save_baseline(self.study, launch)
        self.summary.baselines.append(launch)
        self.events.baseline_finished(launch)
        return record
