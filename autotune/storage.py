"""Where studies live: Optuna storage URLs, the study's own settings, baselines, flat history.

Everything is kept in the one Optuna storage (SQLite by default; any RDB URL or a journal file):
trial params/values/states by Optuna, raw measurements and what ran as trial user attributes,
the study settings and every baseline measurement as study user attributes.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import optuna
import pandas as pd

from .errors import InputError, StorageError

CONFIG_ATTR = "autotune.config"
BASELINE_PREFIX = "autotune.baseline."


def autotune_home() -> Path:
    return Path(os.environ.get("AUTOTUNE_HOME") or Path.home() / ".autotune").expanduser()


def default_storage_url() -> str:
    return f"sqlite:///{autotune_home() / 'autotune.db'}"


def redact(url: str) -> str:
    return re.sub(r"(://[^:/@]+:)[^@]+@", r"\1***@", url)


def quiet_optuna() -> None:
    """Optuna's per-trial INFO logs and experimental warnings would drown our own progress."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def open_storage(url: str | None) -> optuna.storages.BaseStorage:
    """Open (and create) a storage; any failure is one readable StorageError."""
    quiet_optuna()
    url = url or default_storage_url()
    try:
        if url.startswith("journal:"):
            from optuna.storages.journal import JournalFileBackend, JournalStorage

            path = Path(url[len("journal:"):].removeprefix("//"))
            path.parent.mkdir(parents=True, exist_ok=True)
            return JournalStorage(JournalFileBackend(str(path)))
        if url.startswith("sqlite:///"):
            path = Path(url[len("sqlite:///"):])
            if url == default_storage_url():
                path.parent.mkdir(parents=True, exist_ok=True)
            elif not path.parent.is_dir():
                raise StorageError(f"cannot open storage {redact(url)}: directory {path.parent} "
                                   "does not exist")
            return optuna.storages.RDBStorage(url, engine_kwargs={"connect_args": {"timeout": 60}})
        return optuna.storages.RDBStorage(url)
    except StorageError:
        raise
    except Exception as exc:  # sqlalchemy/optuna raise many types; the user needs one line
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        raise StorageError(f"cannot open storage {redact(url)}: {reason[:200]}") from None


def study_names(storage: optuna.storages.BaseStorage) -> list[str]:
    return [s.study_name for s in storage.get_all_studies()]


def load_existing_study(storage: optuna.storages.BaseStorage, name: str | None,
                        url: str | None = None) -> optuna.Study:
    """The named study, or the only one in the storage when no name is given."""
    names = study_names(storage)
    where = redact(url or default_storage_url())
    if name is None:
        if not names:
            raise InputError(f"no study in {where}: run `autotune start` first")
        if len(names) > 1:
            raise InputError(f"{len(names)} studies in {where}; choose one with --study: "
                             + ", ".join(sorted(names)))
        name = names[0]
    elif name not in names:
        raise InputError(f"no study named {name!r} in {where}"
                         + (f" (studies: {', '.join(sorted(names))})" if names else ""))
    return optuna.load_study(study_name=name, storage=storage)


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

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["sizes"] = list(self.sizes)
        data["weights"] = {str(k): v for k, v in self.weights.items()}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "StudyConfig":
        data = dict(data)
        data["sizes"] = tuple(int(s) for s in data["sizes"])
        data["weights"] = {int(k): float(v) for k, v in data["weights"].items()}
        return cls(**data)

    def differences(self, other: "StudyConfig") -> list[str]:
        keys = ("collective", "nodes", "ppn", "space", "sizes", "weights", "repetitions", "stages",
                "time_per_size")
        return [k for k in keys if getattr(self, k) != getattr(other, k)]


def stored_config(study: optuna.Study) -> StudyConfig | None:
    data = study.user_attrs.get(CONFIG_ATTR)
    return StudyConfig.from_dict(data) if data else None


@dataclass
class BaselineLaunch:
    """One launch of the default configuration, interleaved with the trials it is a reference for."""

    id: int
    run_id: str
    block: int
    started: float
    seconds: float
    t_max_us: dict[int, float]
    argv: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    drift: float | None = None  # weighted log-ratio to the run's first default launch of this block

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["t_max_us"] = {str(k): v for k, v in self.t_max_us.items()}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "BaselineLaunch":
        data = dict(data)
        data["t_max_us"] = {int(k): float(v) for k, v in data["t_max_us"].items()}
        return cls(**data)


def save_baseline(study: optuna.Study, launch: BaselineLaunch) -> None:
    study.set_user_attr(f"{BASELINE_PREFIX}{launch.id:06d}", launch.to_dict())


def load_baselines(study: optuna.Study) -> list[BaselineLaunch]:
    attrs = study.user_attrs
    return [BaselineLaunch.from_dict(attrs[k]) for k in sorted(attrs) if k.startswith(BASELINE_PREFIX)]


def history_frame(study: optuna.Study) -> pd.DataFrame:
    """One row per trial x message size: params, state, score, raw repetitions (t_us) and the
    paired default launches they were divided by (t_default_reps_us), what ran."""
    rows: list[dict[str, Any]] = []
    for trial in study.get_trials(deepcopy=False):
        attrs = trial.user_attrs
        base = {
            "trial": trial.number,
            "state": trial.state.name,
            "is_default": bool(attrs.get("is_default", False)),
            "value": trial.value,
            "speedup": attrs.get("speedup"),
            "partial_speedup": attrs.get("partial_speedup"),
            "fail_reason": attrs.get("fail_reason", ""),
            "sizes_measured": attrs.get("sizes_measured", 0),
            "launches": attrs.get("launch_count", 0),
            "bench_seconds": attrs.get("bench_seconds", 0.0),
            "baseline_launches": len(attrs.get("baseline_ids") or []),
            "datetime_start": trial.datetime_start,
            "host": (attrs.get("host") or {}).get("host", ""),
            "mpi": (attrs.get("host") or {}).get("mpi", ""),
            "ucx": (attrs.get("host") or {}).get("ucx", ""),
            "argv": " ".join((attrs.get("launches") or [{}])[0].get("argv", [])),
        }
        base.update({f"param.{k}": v for k, v in trial.params.items()})
        raw = attrs.get("raw_us") or {}
        scores = attrs.get("scores") or {}
        paired = attrs.get("default_us") or {}
        if not raw:
            rows.append(base)
            continue
        for size_text in sorted(raw, key=int):
            values = raw[size_text]
            rows.append({**base, "size": int(size_text), "reps": len(values),
                         "t_us": json.dumps([round(v, 4) for v in values]),
                         "t_trimmed_us": _trimmed_or_none(values),
                         "t_default_us": _trimmed_or_none(paired.get(size_text) or []),
                         "t_default_reps_us": json.dumps([round(v, 4) for v in paired.get(size_text) or []]),
                         "score": scores.get(size_text)})
    return pd.DataFrame(rows)


def _trimmed_or_none(values: list[float]) -> float | None:
    from .objective import trimmed_mean

    return trimmed_mean(values) if values else None
