"""Every key autotune stores in an Optuna study, and the typed view of a stored trial.

The key strings are the on-disk format: studies written by earlier versions must stay readable,
so they never change. Readers go through `TrialRecord.from_trial`, which fills what an older
trial lacks with defaults and turns anything ill-typed into one StorageError; the controller
writes through `trial_attrs` / `failure_attrs` / `requeue_attrs` / `run_attrs`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..collectives import NbcTiming
from ..errors import StorageError
from ._coerce import (Attrs, as_bool, as_float, as_int, as_int_tuple, as_list, as_mapping,
                      as_opt_float, as_opt_int, as_str, as_str_tuple, dict_of_floats,
                      dict_of_lists, str_dict)

# ------------------------------------------------------------------ study-level keys
CONFIG_ATTR = "autotune.config"  # StudyConfig.to_dict(): what makes the study's trials comparable
BASELINE_PREFIX = "autotune.baseline."  # + 6-digit id: one BaselineLaunch.to_dict() per default launch
RUN_ATTR = "autotune.run"  # the latest run: run_id, trials_planned, started, deadline (unix time)
FINGERPRINT_ATTR = "autotune.fingerprint"  # the machine the study runs on (checked on resume)
RESOLUTION_ATTR = "autotune.resolution"  # space resolution: removed knobs, context, mpi, ucx, host
CONFIRMATION_ATTR = "autotune.confirmation"  # confirm.Confirmation.to_dict() of the last confirmation
VERIFICATION_ATTR = "autotune.verification"  # StoredVerification.to_dict(): the independent check
RULES_ATTR = "autotune.rules"  # StoredRules.to_dict(): per-size algorithm rules and their measurement

RESULT_CHECK = "result-check"  # a stored launch's "purpose": it only checked the results

STUDY_KEYS = (CONFIG_ATTR, RUN_ATTR, FINGERPRINT_ATTR, RESOLUTION_ATTR, CONFIRMATION_ATTR,
              VERIFICATION_ATTR, RULES_ATTR)


class TrialKey:
    """Trial user-attribute keys (values are JSON; per-size maps have the size as a string key)."""

    IS_DEFAULT = "is_default"  # bool: the trial is the default configuration (the reference)
    BASELINE_IDS = "baseline_ids"  # list[int]: the default launch paired with each launch
    DEFAULT_US = "default_us"  # {size: [t_us]}: paired default launches' times, launch by launch
    BASELINE_LAUNCHES_DURING = "baseline_launches_during"  # int: default launches made meanwhile
    RUN_ID = "run_id"  # str: the run (one `autotune start`) that measured the trial
    HOST = "host"  # HostInfo.to_dict(): host, cpu_model, cores, mpi, ucx, python
    CONTEXT = "context"  # {name: value}: allocation context (NPS, ...) the trial ran in
    FINGERPRINT = "fingerprint"  # the study fingerprint when the trial ran
    SETTINGS = "settings"  # {"env": {}, "mca": {}, "mpirun_args": []}: what the params applied
    RAW_US = "raw_us"  # {size: [t_us]}: max-over-ranks time of each successful launch
    LAUNCHES = "launches"  # [LaunchRecord.to_dict()]: argv, hosts, timings of every launch
    # (a launch with "purpose": RESULT_CHECK only checked the configuration's results)
    # (a non-blocking collective's launch also holds "nbc": {size: {t_pure_us, t_ovrl_us,
    # t_cpu_us, overlap_pct}}, IMB-NBC's columns; read with TrialRecord.nbc_samples)
    LAUNCH_COUNT = "launch_count"  # int: launches made (failed ones and result checks included)
    SIZES_MEASURED = "sizes_measured"  # int: sizes with at least one measurement
    SIZES_COMPLETE = "sizes_complete"  # int: sizes with every planned repetition
    BENCH_SECONDS = "bench_seconds"  # float: wall time of the trial's own launches (checks too)
    CONTROLLER_SECONDS = "controller_seconds"  # float: controller overhead (report, prune checks)
    NODES = "nodes"  # list[str]: the node group's addresses
    NODE_NAMES = "node_names"  # list[str]: the node group's host names
    NODE_GROUP = "node_group"  # str: "pool:label" of the node group
    ACQUIRE_SECONDS = "acquire_seconds"  # float: time to reserve the node group
    DISPATCH_SECONDS = "dispatch_seconds"  # float: ask -> first benchmark of the trial running
    FAIL_REASON = "fail_reason"  # str: config, crash, timeout, infrastructure, interrupted, ...
    FAIL_DETAIL = "fail_detail"  # str (<= 500 chars): why it failed
    STDERR_TAIL = "stderr_tail"  # str (<= 4000 chars): the failed launch's last stderr
    SCORES = "scores"  # {size: float}: trimmed mean log-ratio to the paired default per size
    SPEEDUP = "speedup"  # float: exp(-value) of a COMPLETE trial
    PARTIAL_SPEEDUP = "partial_speedup"  # float: the same over the sizes a PRUNED trial measured
    SKIPPED = "skipped"  # bool: same params as an invalid trial: failed without a launch
    REQUEUED_FROM = "requeued_from"  # int: the interrupted/abandoned trial this one repeats
    REQUEUE_REASON = "requeue_reason"  # str: interrupted or abandoned
    WARM_START = "warm_start"  # str: note of the warm-start entry that queued the trial
    EXPLORED = "explored"  # bool: queued in place of a re-proposed, already-measured point
    CHECKSUM = "checksum"  # str: sha256 of params, user attrs and value, written last

    @classmethod
    def all(cls) -> tuple[str, ...]:
        return tuple(v for k, v in vars(cls).items() if k.isupper())


NBC_COLUMNS = ("t_pure_us", "t_ovrl_us", "t_cpu_us", "overlap_pct")  # NbcTiming's fields
FAIL_DETAIL_CHARS = 500
STDERR_TAIL_CHARS = 4000


@dataclass(frozen=True)
class StoredSettings:
    """What a trial's params applied: environment, MCA parameters, mpirun options."""

    env: dict[str, str] = field(default_factory=dict)
    mca: dict[str, str] = field(default_factory=dict)
    mpirun_args: tuple[str, ...] = ()

    @classmethod
    def of(cls, settings: Any) -> StoredSettings:
        """From anything with env/mca (pairs or mappings) and mpirun_args: space.LaunchSettings."""
        if isinstance(settings, StoredSettings):
            return settings
        return cls(env={str(k): str(v) for k, v in dict(settings.env).items()},
                   mca={str(k): str(v) for k, v in dict(settings.mca).items()},
                   mpirun_args=tuple(str(a) for a in settings.mpirun_args))

    @classmethod
    def from_dict(cls, data: Any, where: str) -> StoredSettings:
        data = as_mapping(data, where)
        return cls(env=str_dict(data.get("env"), f"{where}.env"),
                   mca=str_dict(data.get("mca"), f"{where}.mca"),
                   mpirun_args=as_str_tuple(data.get("mpirun_args"), f"{where}.mpirun_args"))

    def to_dict(self) -> dict[str, Any]:
        return {"env": dict(self.env), "mca": dict(self.mca), "mpirun_args": list(self.mpirun_args)}


@dataclass(frozen=True)
class TrialRecord:
    """One stored trial, typed. Missing attributes (older studies, queued trials) get defaults."""

    number: int
    state: str  # optuna TrialState name: COMPLETE, PRUNED, FAIL, RUNNING, WAITING
    params: dict[str, Any] = field(default_factory=dict)
    value: float | None = None
    datetime_start: dt.datetime | None = None
    datetime_complete: dt.datetime | None = None
    is_default: bool = False
    speedup: float | None = None
    partial_speedup: float | None = None
    fail_reason: str = ""
    fail_detail: str = ""
    stderr_tail: str = ""
    skipped: bool = False
    raw_us: dict[int, list[float]] = field(default_factory=dict)
    default_us: dict[int, list[float]] = field(default_factory=dict)
    scores: dict[int, float] = field(default_factory=dict)
    baseline_ids: tuple[int, ...] = ()
    baseline_launches_during: int = 0
    launches: tuple[dict[str, Any], ...] = ()
    launch_count: int = 0
    sizes_measured: int = 0
    sizes_complete: int = 0
    settings: StoredSettings = field(default_factory=StoredSettings)
    run_id: str = ""
    host: dict[str, Any] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)
    fingerprint: dict[str, Any] = field(default_factory=dict)
    nodes: tuple[str, ...] = ()
    node_names: tuple[str, ...] = ()
    node_group: str = ""
    bench_seconds: float = 0.0
    controller_seconds: float = 0.0
    acquire_seconds: float | None = None
    dispatch_seconds: float | None = None
    warm_start: str = ""
    requeued_from: int | None = None
    requeue_reason: str = ""

    @classmethod
    def from_trial(cls, trial: Any) -> TrialRecord:
        """From an optuna FrozenTrial; ill-typed attributes raise one StorageError naming them, and
        a record that does not match the checksum written with it is named corrupt."""
        K = TrialKey
        number = getattr(trial, "number", -1)
        where = f"trial {number}"
        stored = dict(getattr(trial, "user_attrs", None) or {})
        value = getattr(trial, "value", None)
        if trial.state.is_finished():  # a running record may be sealed for a state not yet told
            check_record(number, dict(getattr(trial, "params", None) or {}), stored,
                         value if trial.state.name == "COMPLETE" else None)
        attrs: Attrs = Attrs(stored, where)
        return cls(
            number=number, state=trial.state.name, params=dict(trial.params),
            value=None if value is None else float(value),
            datetime_start=trial.datetime_start, datetime_complete=trial.datetime_complete,
            is_default=attrs.get(K.IS_DEFAULT, as_bool, False),
            speedup=attrs.get(K.SPEEDUP, as_opt_float, None),
            partial_speedup=attrs.get(K.PARTIAL_SPEEDUP, as_opt_float, None),
            fail_reason=attrs.get(K.FAIL_REASON, as_str, ""),
            fail_detail=attrs.get(K.FAIL_DETAIL, as_str, ""),
            stderr_tail=attrs.get(K.STDERR_TAIL, as_str, ""),
            skipped=attrs.get(K.SKIPPED, as_bool, False),
            raw_us=attrs.get(K.RAW_US, dict_of_lists, {}),
            default_us=attrs.get(K.DEFAULT_US, dict_of_lists, {}),
            scores=attrs.get(K.SCORES, dict_of_floats, {}),
            baseline_ids=attrs.get(K.BASELINE_IDS, as_int_tuple, ()),
            baseline_launches_during=attrs.get(K.BASELINE_LAUNCHES_DURING, as_int, 0),
            launches=attrs.get(K.LAUNCHES, _launch_dicts, ()),
            launch_count=attrs.get(K.LAUNCH_COUNT, as_int, 0),
            sizes_measured=attrs.get(K.SIZES_MEASURED, as_int, 0),
            sizes_complete=attrs.get(K.SIZES_COMPLETE, as_int, 0),
            settings=attrs.get(K.SETTINGS, StoredSettings.from_dict, StoredSettings()),
            run_id=attrs.get(K.RUN_ID, as_str, ""),
            host=attrs.get(K.HOST, _plain_dict, {}),
            context=attrs.get(K.CONTEXT, _plain_dict, {}),
            fingerprint=attrs.get(K.FINGERPRINT, _plain_dict, {}),
            nodes=attrs.get(K.NODES, as_str_tuple, ()),
            node_names=attrs.get(K.NODE_NAMES, as_str_tuple, ()),
            node_group=attrs.get(K.NODE_GROUP, as_str, ""),
            bench_seconds=attrs.get(K.BENCH_SECONDS, as_float, 0.0),
            controller_seconds=attrs.get(K.CONTROLLER_SECONDS, as_float, 0.0),
            acquire_seconds=attrs.get(K.ACQUIRE_SECONDS, as_opt_float, None),
            dispatch_seconds=attrs.get(K.DISPATCH_SECONDS, as_opt_float, None),
            warm_start=attrs.get(K.WARM_START, as_str, ""),
            requeued_from=attrs.get(K.REQUEUED_FROM, as_opt_int, None),
            requeue_reason=attrs.get(K.REQUEUE_REASON, as_str, ""),
        )

    @property
    def check_launches(self) -> tuple[dict[str, Any], ...]:
        """The launches that only checked this configuration's results (another benchmark's,
        timings not kept): a cost of the trial, not a measurement of it."""
        return tuple(la for la in self.launches if la.get("purpose") == RESULT_CHECK)

    @property
    def check_seconds(self) -> float:
        return sum(float(la.get("seconds") or 0.0) for la in self.check_launches)

    @property
    def measuring_launch_count(self) -> int:
        """Launches that measured the configuration (failed ones included, checks not)."""
        return self.launch_count - len(self.check_launches)

    @property
    def measuring_seconds(self) -> float:
        return self.bench_seconds - self.check_seconds

    def nbc_samples(self) -> dict[int, list[NbcTiming]]:
        """A non-blocking collective's IMB-NBC columns per size, one per successful launch in
        launch order (as raw_us holds the scored quantity); {} for a blocking collective."""
        out: dict[int, list[NbcTiming]] = {}
        for i, launch in enumerate(self.launches):
            if launch.get("failure") or not launch.get("nbc"):
                continue
            where = f"trial {self.number}: launches[{i}].nbc"
            for size, columns in as_mapping(launch["nbc"], where).items():
                at = f"{where}[{size}]"
                row = as_mapping(columns, at)
                try:
                    key = int(size)
                except ValueError:
                    raise StorageError(f"{at}: size {str(size)[:20]!r} is not an integer") from None
                out.setdefault(key, []).append(NbcTiming(
                    *(as_float(row.get(name), f"{at}.{name}") for name in NBC_COLUMNS)))
        return dict(sorted(out.items()))

    @property
    def first_argv(self) -> list[str]:
        """The argv of the trial's first launch ([] when it made none)."""
        argv = self.launches[0].get("argv") if self.launches else None
        return [str(a) for a in argv] if isinstance(argv, list) else []


def _plain_dict(value: Any, where: str) -> dict[str, Any]:
    return {str(k): v for k, v in as_mapping(value, where).items()}


def _launch_dicts(value: Any, where: str) -> tuple[dict[str, Any], ...]:
    return tuple(_plain_dict(item, f"{where}[{i}]") for i, item in enumerate(as_list(value, where)))


# ------------------------------------------------------------------ writing


def failure_attrs(reason: str, detail: str = "", stderr_tail: str = "") -> dict[str, Any]:
    """A failed trial's reason, detail and stderr tail, cut to what is stored."""
    return {TrialKey.FAIL_REASON: reason, TrialKey.FAIL_DETAIL: detail[:FAIL_DETAIL_CHARS],
            TrialKey.STDERR_TAIL: stderr_tail[-STDERR_TAIL_CHARS:]}


def requeue_attrs(from_number: int, reason: str, is_default: bool) -> dict[str, Any]:
    """User attrs of a trial queued again because trial `from_number` did not finish."""
    return {TrialKey.REQUEUED_FROM: from_number, TrialKey.REQUEUE_REASON: reason,
            TrialKey.IS_DEFAULT: bool(is_default)}


def run_attrs(run_id: str, trials_planned: int, started: float,
              deadline: float | None) -> dict[str, Any]:
    """The RUN_ATTR value of the study: the run now going on."""
    return {"run_id": run_id, "trials_planned": trials_planned, "started": started,
            "deadline": deadline}


def trial_attrs(*, is_default: bool, run_id: str, host: Mapping[str, Any],
                context: Mapping[str, Any], fingerprint: Mapping[str, Any], settings: Any,
                raw_us: Mapping[int, Sequence[float]], default_us: Mapping[int, Sequence[float]],
                baseline_ids: Iterable[int], baseline_launches: int,
                launches: Sequence[Mapping[str, Any]], repetitions: int, bench_seconds: float,
                controller_seconds: float, nodes: Sequence[str] | None = None,
                node_names: Sequence[str] | None = None, node_group: str | None = None,
                acquire_seconds: float | None = None, dispatch_seconds: float | None = None,
                failure: Any = None, scores: Mapping[int, float] | None = None,
                speedup: float | None = None,
                partial_speedup: float | None = None) -> dict[str, Any]:
    """A measured trial's user attrs, keyed exactly as stored since the first version.

    `settings`: space.LaunchSettings (or StoredSettings, or None when the params did not resolve);
    `failure`: anything with reason/detail/stderr_tail (errors.LaunchFailure) or None; `scores`
    only when the trial did not fail; `speedup` for COMPLETE, `partial_speedup` for PRUNED.
    """
    K = TrialKey
    attrs: dict[str, Any] = {
        K.IS_DEFAULT: bool(is_default),
        K.BASELINE_IDS: list(baseline_ids),
        K.DEFAULT_US: {str(s): list(v) for s, v in sorted(default_us.items())},
        K.BASELINE_LAUNCHES_DURING: baseline_launches,
        K.RUN_ID: run_id,
        K.HOST: dict(host),
        K.CONTEXT: dict(context),
        K.FINGERPRINT: dict(fingerprint),
        K.SETTINGS: StoredSettings.of(settings).to_dict() if settings is not None else {},
        K.RAW_US: {str(s): list(v) for s, v in sorted(raw_us.items())},
        K.LAUNCHES: [dict(launch) for launch in launches],
        K.LAUNCH_COUNT: len(launches),
        K.SIZES_MEASURED: len(raw_us),
        K.SIZES_COMPLETE: sum(1 for v in raw_us.values() if len(v) == repetitions),
        K.BENCH_SECONDS: round(bench_seconds, 4),
        K.CONTROLLER_SECONDS: round(controller_seconds, 6),
    }
    if nodes is not None:
        attrs[K.NODES] = list(nodes)
        attrs[K.NODE_NAMES] = list(node_names or ())
        attrs[K.NODE_GROUP] = node_group or ""
        attrs[K.ACQUIRE_SECONDS] = round(acquire_seconds or 0.0, 4)
    if dispatch_seconds is not None:
        attrs[K.DISPATCH_SECONDS] = round(dispatch_seconds, 4)
    if failure is not None:
        attrs.update(failure_attrs(failure.reason, failure.detail, failure.stderr_tail))
        return attrs
    if scores is not None:
        attrs[K.SCORES] = {str(s): v for s, v in scores.items()}
    if partial_speedup is not None:
        attrs[K.PARTIAL_SPEEDUP] = partial_speedup
    if speedup is not None:
        attrs[K.SPEEDUP] = speedup
    return attrs


def record_checksum(params: Mapping[str, Any], attrs: Mapping[str, Any],
                    value: float | None) -> str:
    """What a finished trial's record must still hash to when read: its params, its user
    attributes (the checksum itself aside) and, for a complete trial, its value. A flipped bit
    in a stored string then shows as corruption instead of a wrong value shown as if whole."""
    body = {"params": dict(params), "value": value,
            "attrs": {k: v for k, v in attrs.items() if k != TrialKey.CHECKSUM}}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def check_record(number: int, params: Mapping[str, Any], attrs: Mapping[str, Any],
                 value: float | None) -> None:
    written = attrs.get(TrialKey.CHECKSUM)
    if written is None:
        return  # written by an older version, or not finished by autotune
    if written != record_checksum(params, attrs, value):
        raise StorageError(f"trial {number} is corrupt: its stored record no longer matches the "
                           "checksum written with it; restore a copy of the storage")
