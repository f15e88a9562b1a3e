"""The per-size rules of a study (RULES_ATTR): every algorithm variant measured per size, the
bands chosen from them, and the composed rule set measured against the untuned stack and the best
single configuration. Written by endgame/stage.py; read by export, status and report."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import optuna

from ..errors import InputError, StorageError
from ..rules import AlgorithmChoice, RuleSet
from ._coerce import (as_bool, as_float, as_int, as_list, as_mapping, as_opt_float, as_str,
                      dict_of_floats)
from ._schema import RULES_ATTR


@dataclass(frozen=True)
class Comparison:
    """Speedup of one arm over another from paired rounds, with its (simultaneous) interval."""

    speedup: float
    low: float
    high: float
    rounds: int
    scores: tuple[float, ...] = ()  # weighted log-ratio of each round (lower: the arm faster)

    def text(self) -> str:
        return f"{self.speedup:.3f}x ({self.low:.3f}x..{self.high:.3f}x, {self.rounds} rounds)"


@dataclass(frozen=True)
class RuleVariant:
    """One algorithm variant measured at every size with the best configuration's other settings."""

    choice: AlgorithmChoice  # algorithm 0: Open MPI's own decision rules
    source: str  # where its sub-parameters come from: "trial 12", "defaults"
    mean_us: dict[int, float]  # geometric mean time per size over the rounds
    failed: str = ""
    round_us: dict[int, list[float]] = field(default_factory=dict)  # every round's time (NaN:
    # no measurement that round), so the choice can be recomputed from what was measured

    @property
    def label(self) -> str:
        return self.choice.label()


@dataclass(frozen=True)
class StoredRules:
    collective: str
    comm_size: int
    trial: int  # the best configuration's trial whose other settings the rules go with
    incumbent: int  # the variant of the best single configuration
    variants: tuple[RuleVariant, ...]
    per_size: dict[int, int]  # size -> variant chosen from the measurements
    rules: RuleSet | None  # None when no rule set could be chosen (see failed)
    rounds: int
    cost: float = 0.0  # weighted mean log-time the bands give up against the per-size choice
    vs_default: Comparison | None = None  # composed rules over the untuned stack
    vs_single: Comparison | None = None  # composed rules over the best single configuration
    single_vs_default: Comparison | None = None
    # per band: the benchmark's disagreement with IMB-MPI1 there (log units), in its interval
    band_terms: dict[str, float] = field(default_factory=dict)
    # the bands checked with IMB-MPI1 (a search timed by another benchmark, where IMB is found):
    # band label -> composed over the best single configuration, as IMB measured it
    imb_band_gains: dict[str, Comparison] = field(default_factory=dict)
    band_gains: dict[str, Comparison] = field(default_factory=dict)  # band label -> composed over
    # the best single configuration at that band's sizes (bands where the two differ)
    adopted: bool = False  # export the rule set instead of the single configuration
    verdict: str = ""
    rules_file: str = ""  # the file the composed launches read
    arms_us: dict[str, dict[int, float]] = field(default_factory=dict)  # composed, single,
    # untuned: geometric mean time per size over the composed rounds
    seconds: float = 0.0
    finished: float | None = None
    failed: str = ""

    @property
    def bands(self) -> int:
        return len(self.rules.bands) if self.rules else 0

    def to_dict(self) -> dict[str, Any]:
        def comparison(c: Comparison | None) -> dict[str, Any] | None:
            return None if c is None else asdict(c)

        return {
            "collective": self.collective, "comm_size": self.comm_size, "trial": self.trial,
            "incumbent": self.incumbent,
            "variants": [{"choice": asdict(v.choice), "source": v.source,
                          "mean_us": {str(s): t for s, t in v.mean_us.items()},
                          "round_us": {str(s): [None if math.isnan(t) else t for t in ts]
                                       for s, ts in v.round_us.items()},
                          "failed": v.failed} for v in self.variants],
            "per_size": {str(s): v for s, v in self.per_size.items()},
            "rules": self.rules.to_dict() if self.rules else None,
            "rounds": self.rounds, "cost": self.cost,
            "vs_default": comparison(self.vs_default), "vs_single": comparison(self.vs_single),
            "single_vs_default": comparison(self.single_vs_default),
            "band_gains": {label: comparison(c) for label, c in self.band_gains.items()},
            "band_terms": dict(self.band_terms),
            "imb_band_gains": {label: comparison(c) for label, c in self.imb_band_gains.items()},
            "adopted": self.adopted, "verdict": self.verdict, "rules_file": self.rules_file,
            "arms_us": {arm: {str(s): t for s, t in per.items()}
                        for arm, per in self.arms_us.items()},
            "seconds": self.seconds, "finished": self.finished, "failed": self.failed}

    @classmethod
    def from_dict(cls, data: Any, where: str) -> StoredRules:
        data = as_mapping(data, where)
        variants = []
        for i, item in enumerate(as_list(data.get("variants") or [], f"{where}: variants")):
            at = f"{where}: variants[{i}]"
            item = as_mapping(item, at)
            choice = as_mapping(item.get("choice"), f"{at}: choice")
            algorithm = choice.get("algorithm")
            if not isinstance(algorithm, (int, str)) or isinstance(algorithm, bool):
                raise StorageError(f"{at}: algorithm is neither a number nor a name")
            variants.append(RuleVariant(
                choice=AlgorithmChoice(algorithm, *(as_int(choice.get(k) or 0, f"{at}: {k}")
                                                    for k in ("segsize", "faninout",
                                                              "max_requests"))),
                source=as_str(item.get("source") or "", f"{at}: source"),
                mean_us=dict_of_floats(item.get("mean_us") or {}, f"{at}: mean_us"),
                failed=as_str(item.get("failed") or "", f"{at}: failed"),
                round_us={int(s): [math.nan if t is None else as_float(t, f"{at}: round_us")
                                   for t in as_list(ts, f"{at}: round_us")]
                          for s, ts in as_mapping(item.get("round_us") or {},
                                                  f"{at}: round_us").items() if str(s).isdigit()}))
        per_size = {int(s): as_int(v, f"{where}: per_size")
                    for s, v in as_mapping(data.get("per_size") or {}, f"{where}: per_size").items()
                    if str(s).isdigit()}
        rules = None
        if data.get("rules"):
            try:
                rules = RuleSet.from_dict(as_mapping(data["rules"], f"{where}: rules"))
            except InputError as exc:
                raise StorageError(f"{where}: {exc}") from None
        return cls(
            collective=as_str(data.get("collective") or "", f"{where}: collective"),
            comm_size=as_int(data.get("comm_size") or 0, f"{where}: comm_size"),
            trial=as_int(data.get("trial", -1), f"{where}: trial"),
            incumbent=as_int(data.get("incumbent") or 0, f"{where}: incumbent"),
            variants=tuple(variants), per_size=per_size, rules=rules,
            rounds=as_int(data.get("rounds") or 0, f"{where}: rounds"),
            cost=as_float(data.get("cost") or 0.0, f"{where}: cost"),
            vs_default=_comparison(data.get("vs_default"), f"{where}: vs_default"),
            vs_single=_comparison(data.get("vs_single"), f"{where}: vs_single"),
            single_vs_default=_comparison(data.get("single_vs_default"),
                                          f"{where}: single_vs_default"),
            band_gains={str(label): c for label, value in as_mapping(
                data.get("band_gains") or {}, f"{where}: band_gains").items()
                if (c := _comparison(value, f"{where}: band_gains")) is not None},
            band_terms={str(label): as_float(v, f"{where}: band_terms") for label, v in
                        as_mapping(data.get("band_terms") or {}, f"{where}: band_terms").items()},
            imb_band_gains={str(label): c for label, value in as_mapping(
                data.get("imb_band_gains") or {}, f"{where}: imb_band_gains").items()
                if (c := _comparison(value, f"{where}: imb_band_gains")) is not None},
            adopted=as_bool(data.get("adopted", False), f"{where}: adopted"),
            verdict=as_str(data.get("verdict") or "", f"{where}: verdict"),
            rules_file=as_str(data.get("rules_file") or "", f"{where}: rules_file"),
            arms_us={str(arm): dict_of_floats(per, f"{where}: arms_us")
                     for arm, per in as_mapping(data.get("arms_us") or {},
                                                f"{where}: arms_us").items()},
            seconds=as_float(data.get("seconds") or 0.0, f"{where}: seconds"),
            finished=as_opt_float(data.get("finished"), f"{where}: finished"),
            failed=as_str(data.get("failed") or "", f"{where}: failed"))


def _comparison(value: Any, where: str) -> Comparison | None:
    if value is None:
        return None
    data = as_mapping(value, where)
    speedup, low, high = (as_float(data.get(k), f"{where}: {k}") for k in ("speedup", "low", "high"))
    if not low <= high:
        raise StorageError(f"{where} is not an interval (low {low} > high {high})")
    scores = tuple(as_float(v, f"{where}: scores")
                   for v in as_list(data.get("scores") or [], f"{where}: scores"))
    return Comparison(speedup, low, high, as_int(data.get("rounds") or 0, f"{where}: rounds"),
                      scores)


def stored_rules(study: optuna.Study) -> StoredRules | None:
    """The study's per-size rules, or None when none were chosen."""
    data = study.user_attrs.get(RULES_ATTR)
    if not data:
        return None
    return StoredRules.from_dict(data, f"study {study.study_name}: {RULES_ATTR}")


def save_rules(study: optuna.Study, rules: StoredRules) -> None:
    study.set_user_attr(RULES_ATTR, rules.to_dict())
