"""The default configuration's launches, interleaved with the trials they are a reference for,
stored one per study attribute (BASELINE_PREFIX + id) so concurrent writers never collide."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import optuna

from ..errors import StorageError
from ._coerce import (as_float, as_int, as_mapping, as_opt_float, as_str, as_str_tuple,
                      dict_of_floats)
from ._schema import BASELINE_PREFIX


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
    def from_dict(cls, data: dict[str, Any], where: str = "baseline launch") -> BaselineLaunch:
        """Unknown keys (a newer version) are ignored; a missing or ill-typed one is a StorageError."""
        data = as_mapping(data, where)
        missing = [k for k in _REQUIRED if k not in data]
        if missing:
            raise StorageError(f"{where} lacks {', '.join(missing)}; the study was written by "
                               "another version or edited by hand")
        return cls(id=as_int(data["id"], f"{where}: id"),
                   run_id=as_str(data["run_id"], f"{where}: run_id"),
                   block=as_int(data["block"], f"{where}: block"),
                   started=as_float(data["started"], f"{where}: started"),
                   seconds=as_float(data["seconds"], f"{where}: seconds"),
                   t_max_us=dict_of_floats(data["t_max_us"], f"{where}: t_max_us"),
                   argv=list(as_str_tuple(data.get("argv") or [], f"{where}: argv")),
                   hosts=list(as_str_tuple(data.get("hosts") or [], f"{where}: hosts")),
                   drift=as_opt_float(data.get("drift"), f"{where}: drift"))


_REQUIRED = ("id", "run_id", "block", "started", "seconds", "t_max_us")


def baseline_key(launch_id: int) -> str:
    """The study attribute that holds default launch `launch_id`."""
    return f"{BASELINE_PREFIX}{launch_id:06d}"


def save_baseline(study: optuna.Study, launch: BaselineLaunch) -> None:
    study.set_user_attr(baseline_key(launch.id), launch.to_dict())


def load_baselines(study: optuna.Study) -> list[BaselineLaunch]:
    attrs = study.user_attrs
    return [BaselineLaunch.from_dict(attrs[k], f"study {study.study_name}: {k}")
            for k in sorted(attrs) if k.startswith(BASELINE_PREFIX)]
