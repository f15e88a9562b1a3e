"""The study's own settings (StudyConfig) and its trials as a flat table."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

import optuna

from ..errors import StorageError
from ._coerce import as_mapping, dict_of_floats
from ._schema import CONFIG_ATTR, NBC_COLUMNS, TrialRecord

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class StudyConfig:
    """What makes measurements of one study comparable; a resumed study must match it."""

    collective: str
    nodes: int
    ppn: int
    space: str
    sizes: tuple[int, ...]
    weights: dict[int, float]
    repetitions: int
    stages: int
    time_per_size: float
    weights_source: str = "uniform over log2(size)"
    space_digest: str = ""
    # what every score is relative to and what measured it: a study from before these were
    # stored ran against another reference (wave 1 forced pml ucx), so it does not match
    benchmark: str = ""  # e.g. "mpi4py kernel", "IMB-MPI1 (/path/IMB-MPI1)"
    reference: dict[str, Any] = field(default_factory=dict)  # the default's env/mca/mpirun_args
    # what is scored per size (objective.OBJECTIVES): a study from before this was stored
    # scored latency, so it loads as latency and resumes with it
    objective: str = "latency"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["sizes"] = list(self.sizes)
        data["weights"] = {str(k): v for k, v in self.weights.items()}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "study config") -> StudyConfig:
        """Keys of a newer version are ignored; a missing or ill-typed one is a StorageError."""
        data = as_mapping(data, where)
        known = {f.name for f in fields(cls)}
        data = {k: v for k, v in data.items() if k in known}
        try:
            data["sizes"] = tuple(int(s) for s in data["sizes"])
            data["weights"] = dict_of_floats(data["weights"], f"{where}: weights")
            if not isinstance(data.get("objective", "latency"), str):
                raise TypeError("objective")
            return cls(**data)
        except (KeyError, TypeError, ValueError) as exc:
            what = f"lacks {exc}" if isinstance(exc, KeyError) else "holds an ill-typed value"
            raise StorageError(f"{where} {what}; the study was written by another version or "
                               "edited by hand") from None

    def differences(self, other: StudyConfig) -> list[str]:
        keys = ("collective", "nodes", "ppn", "space", "sizes", "weights", "repetitions", "stages",
                "time_per_size", "benchmark", "reference", "objective")
        return [k for k in keys if getattr(self, k) != getattr(other, k)]


def stored_config(study: optuna.Study) -> StudyConfig | None:
    data = study.user_attrs.get(CONFIG_ATTR)
    return StudyConfig.from_dict(data, f"study {study.study_name}: {CONFIG_ATTR}") if data else None


def trial_records(study: optuna.Study,
                  states: tuple[optuna.trial.TrialState, ...] | None = None) -> list[TrialRecord]:
    """Every trial of the study (or those in `states`), typed."""
    return [TrialRecord.from_trial(t) for t in study.get_trials(deepcopy=False, states=states)]


HISTORY_COLUMNS = ("trial", "state", "is_default", "value", "speedup", "partial_speedup",
                   "fail_reason", "sizes_measured", "launches", "bench_seconds",
                   "baseline_launches", "datetime_start", "host", "mpi", "ucx", "argv")
SIZE_COLUMNS = ("size", "reps", "t_us", "t_trimmed_us", "t_default_us", "t_default_reps_us", "score")
# a non-blocking collective's rows also hold IMB-NBC's columns, launch by launch (JSON lists)
NBC_SIZE_COLUMNS = NBC_COLUMNS


def history_frame(study: optuna.Study) -> pd.DataFrame:
    """One row per trial x message size: params, state, score, raw repetitions (t_us: the
    scored quantity, see StudyConfig.objective) and the paired default launches they were
    divided by (t_default_reps_us), what ran; for a non-blocking collective IMB-NBC's columns
    of every launch too (NBC_SIZE_COLUMNS)."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for rec in trial_records(study):
        base: dict[str, Any] = {
            "trial": rec.number,
            "state": rec.state,
            "is_default": rec.is_default,
            "value": rec.value,
            "speedup": rec.speedup,
            "partial_speedup": rec.partial_speedup,
            "fail_reason": rec.fail_reason,
            "sizes_measured": rec.sizes_measured,
            "launches": rec.launch_count,
            "bench_seconds": rec.bench_seconds,
            "baseline_launches": len(rec.baseline_ids),
            "datetime_start": rec.datetime_start,
            "host": str(rec.host.get("host") or ""),
            "mpi": str(rec.host.get("mpi") or ""),
            "ucx": str(rec.host.get("ucx") or ""),
            "argv": " ".join(rec.first_argv),
        }
        base.update({f"param.{k}": v for k, v in rec.params.items()})
        if not rec.raw_us:
            rows.append(base)
            continue
        nbc = rec.nbc_samples()
        for size, values in rec.raw_us.items():
            paired = rec.default_us.get(size) or []
            row = {**base, "size": size, "reps": len(values),
                   "t_us": json.dumps([round(v, 4) for v in values]),
                   "t_trimmed_us": _trimmed_or_none(values),
                   "t_default_us": _trimmed_or_none(paired),
                   "t_default_reps_us": json.dumps([round(v, 4) for v in paired]),
                   "score": rec.scores.get(size)}
            if size in nbc:
                row.update({name: json.dumps([round(getattr(t, name), 4) for t in nbc[size]])
                            for name in NBC_SIZE_COLUMNS})
            rows.append(row)
    return pd.DataFrame(rows)


def _trimmed_or_none(values: list[float]) -> float | None:
    from ..objective import trimmed_mean

    return trimmed_mean(values) if values else None


RERUN = ("interrupted", "abandoned")  # failed by a stop or a kill, and queued to run again


def trials_by_number(study: optuna.Study, numbers: Sequence[int],
                     states: Sequence[optuna.trial.TrialState]) -> list[optuna.trial.FrozenTrial]:
    """The trials of these numbers that are in one of `states`, in the given order, read one by
    one: `study.get_trials` reads every trial with all its attributes, over a second for a
    1,000-trial SQLite study, to return three."""
    storage = study._storage  # noqa: SLF001 - the public Study API reads all trials or none
    found = []
    for number in numbers:
        try:
            trial_id = storage.get_trial_id_from_study_id_trial_number(
                study._study_id, number)  # noqa: SLF001
        except KeyError:
            continue
        trial = storage.get_trial(trial_id)
        if trial.state in states:
            found.append(trial)
    return found


def trials_done(study: optuna.Study) -> int:
    """Trials that ran to an end (complete, pruned or failed by their own configuration): what a
    total count of trials counts (`start --trials-total`, `campaign --trials`). A trial cut short
    by a stop or a kill runs again, so it does not."""
    ended = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED,
             optuna.trial.TrialState.FAIL)
    return sum(1 for t in study.get_trials(deepcopy=False, states=ended)
               if TrialRecord.from_trial(t).fail_reason not in RERUN)
