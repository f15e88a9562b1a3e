"""The per-size stage, run after the confirmation: with the best configuration's other settings
(UCX, pml, mapping) fixed, every coll_tuned algorithm of the study's collective is measured at
every size in interleaved rounds; the bands are chosen from those measurements (_select), written
as an Open MPI rules file, and the composed rules are measured against the untuned stack and the
best single configuration in rounds of their own before the export may use them.

Why measure instead of reusing the search's per-size data: the search measured each algorithm
with other global settings, under pruning (small sizes only for a loser) and against defaults
taken minutes apart; choosing a band's algorithm needs every (size, algorithm) pair, measured in
the same conditions. The search still supplies each algorithm's best sub-parameters (segment
size, fan-out, request limit).
"""

from __future__ import annotations

import hashlib
import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import optuna
from optuna.trial import TrialState

from ..errors import ClusterLost, StopRequested
from ..export import EXPORTERS
from ..measure import LaunchFailed, Measurer
from ..rules import (AlgorithmChoice, RuleSet, choice_from_params, per_size_choice, plan_bands,
                     rule_set, tuned_param_names)
from ..space import LaunchSettings, SearchSpace, TrialContext
from ..stats import mean_interval, systematic_half_width
from ..storage import (Comparison, RuleVariant, StoredRules, TrialRecord, save_rules,
                       stored_rules)
from .rounds import Arm, RoundsEngine, round_scores

if TYPE_CHECKING:
    from ..baseline import Placement
    from ..benchmarks import Benchmark, Disagreement
    from ..events import Events

READER_MCA = ("coll_tuned_use_dynamic_rules", "coll_tuned_dynamic_rules_filename")


@dataclass
class _Variant:
    """One algorithm of the stage: the engine's arm and where its sub-parameters came from."""

    arm: Arm
    choice: AlgorithmChoice
    source: str


def applies(space: SearchSpace, collective: str, nodes: int) -> bool:
    """The space tunes this collective's coll_tuned algorithm with more than one choice."""
    name = tuned_param_names(collective)["algorithm"]
    ctx = TrialContext(collective, nodes)
    return any(p.name == name and len(p.choices) > 1 for p in space.for_context(ctx))


class PerSizeStage:
    """Called by the controller as `stage(placement, deadline)` after the confirmation."""

    def __init__(self, study: optuna.Study, space: SearchSpace, *, collective: str, nodes: int,
                 ppn: int, weights: Mapping[int, float], default_params: dict[str, Any],
                 default_settings: LaunchSettings, rules_dir: Path, rounds: int = 6,
                 confirm_rounds: int = 6, confidence: float = 0.95, seed: int | None = None,
                 events: Events | None = None, rules_text: Any = None,
                 disagreement: Disagreement | None = None,
                 imb_check: Benchmark | None = None) -> None:
        self.study, self.space = study, space
        self.collective, self.ctx = collective, TrialContext(collective, nodes)
        self.comm_size = nodes * ppn
        self.weights = dict(weights)
        self.default_params, self.default_settings = default_params, default_settings
        self.rules_dir = Path(rules_dir)
        self.rounds, self.confirm_rounds, self.confidence = rounds, confirm_rounds, confidence
        self.rng = random.Random(seed)
        self.events = events
        self.names = tuned_param_names(collective)
        self.rules_text = rules_text or _rules_text
        self.mpi: object = None  # the MPI version the best configuration ran on (the format)
        self.best_settings = self.base = LaunchSettings()  # set from the best configuration
        self.launch_seconds = 0.0  # one launch over every size, estimated from the study
        self.plan_sizes: tuple[int, ...] = ()  # every size a stage launch measures
        # the search benchmark's disagreement with IMB-MPI1 per size: a band must gain more
        self.disagreement = disagreement
        # IMB-MPI1, where the search timed with another benchmark and IMB is found: adopted
        # bands are measured again with it, on the stage's nodes
        self.imb_check = imb_check

    # ------------------------------------------------------------------ arms

    def _best(self) -> tuple[int, dict[str, Any]]:
        """The configuration the export hands out: its trial and params; its stored settings
        (not a re-derivation from a space that may have changed) become the arms' base."""
        from ..export import best_config

        best = best_config(self.study)
        self.mpi = best.host.get("mpi")
        self.best_settings = LaunchSettings(env=tuple(best.env.items()),
                                            mca=tuple(best.mca.items()),
                                            mpirun_args=tuple(best.mpirun_args))
        self.base = LaunchSettings(
            env=self.best_settings.env,
            mca=tuple((k, v) for k, v in best.mca.items()
                      if not self._is_tuned(k) and k not in READER_MCA),
            mpirun_args=self.best_settings.mpirun_args)
        return best.trial, dict(best.params)

    def _with_tuned(self, params: dict[str, Any]) -> LaunchSettings:
        """The best configuration's stored settings with this variant's coll_tuned settings."""
        tuned = self.space.settings({k: v for k, v in params.items() if self._is_tuned(k)},
                                    self.ctx)
        mca = dict(self.base.mca)
        mca.update({k: v for k, v in tuned.mca if self._is_tuned(k) or k in READER_MCA})
        return LaunchSettings(env=self.base.env, mca=tuple(mca.items()),
                              mpirun_args=self.base.mpirun_args)

    def _is_tuned(self, name: str) -> bool:
        """A setting a rules file carries per band (algorithm, segment size, fan-in/out, request
        limit); others (e.g. bcast's k-nomial radix) stay global, in every arm."""
        return name in self.names.values()

    def variants(self, best: dict[str, Any]) -> tuple[list[_Variant], int]:
        """Every algorithm with the best configuration's other settings; the index of the
        incumbent (the best configuration's own algorithm)."""
        param = next(p for p in self.space.for_context(self.ctx) if p.name == self.names["algorithm"])
        globals_ = {k: v for k, v in best.items() if not self._is_tuned(k)}
        best_alg = best.get(self.names["algorithm"], param.default)
        trials = [TrialRecord.from_trial(t) for t in self.study.get_trials(
            deepcopy=False, states=(TrialState.COMPLETE,))]
        if not any(alg == best_alg for alg in param.choices):
            raise StageSkipped(f"the best configuration's {param.name}={best_alg} is not among the "
                               "space's choices any more")
        variants, incumbent = [], 0
        for alg in param.choices:
            if alg == best_alg:
                params, source = dict(best), "the best configuration"
                incumbent = len(variants)
                settings = self.best_settings  # exactly what the export hands out
            else:
                params, source = self._params_for(alg, globals_, trials)
                settings = self._with_tuned(params)
            choice = choice_from_params(self.collective, params) or AlgorithmChoice(0)
            variants.append(_Variant(Arm(choice.label(), settings, params), choice, source))
        return variants, incumbent

    def _params_for(self, alg: Any, globals_: dict[str, Any],
                    trials: list[TrialRecord]) -> tuple[dict[str, Any], str]:
        """The algorithm's best measured sub-parameters with these globals, else the defaults."""
        same = [t for t in trials if t.params.get(self.names["algorithm"]) == alg
                and {k: v for k, v in t.params.items() if not self._is_tuned(k)} == globals_
                and t.value is not None]
        if same:
            top = min(same, key=lambda t: t.value)  # type: ignore[arg-type, return-value]
            return dict(top.params), f"trial {top.number}"
        params = {**globals_, self.names["algorithm"]: alg}
        for p in self.space.for_context(self.ctx):
            if self._is_tuned(p.name) and p.name != self.names["algorithm"] and p.active(params):
                params[p.name] = p.default
        return params, "defaults"

    # ------------------------------------------------------------------ rounds

    def _rounds(self, measurer: Measurer, arms: list[Arm], rounds: int,
                deadline: float | None) -> tuple[int, RoundsEngine]:
        """Up to `rounds` rounds of the endgame's engine, each launch over every size (no
        pruning here); none starts that would not end before the deadline. Returns the rounds
        run and the engine (why it stopped)."""
        self.plan_sizes = tuple(sorted(measurer.plan.sizes))
        engine = RoundsEngine(measurer, self.rng, blocks=[self.plan_sizes],
                              seconds_per_arm=self.launch_seconds)
        return engine.run(arms, rounds, deadline=deadline), engine

    def _estimate(self, measurer: Measurer) -> float:
        """Seconds of one launch over every size: the study's recent default launches (one per
        size block) added up, else the plan's timeout floor."""
        from ..storage import load_baselines

        recent = load_baselines(self.study)[-20:]
        if not recent:
            return measurer.plan.timeout_floor
        per_block: dict[int, list[float]] = {}
        for launch in recent:
            per_block.setdefault(launch.block, []).append(launch.seconds)
        return sum(max(v) for v in per_block.values())

    # ------------------------------------------------------------------ the stage

    def __call__(self, placed: Placement, deadline: float | None) -> StoredRules | None:
        """Run the stage; a stage that cannot run or fails is said and stored nowhere: the study,
        its confirmation and any earlier rules stay as they are."""
        try:
            return self._run(placed, deadline)
        except (StopRequested, ClusterLost):
            raise
        except LaunchFailed as exc:
            if exc.reason == "interrupted":
                raise
            self._tell("ruling_skipped", f"{exc.reason}: {exc.detail}")
        except StageSkipped as exc:
            self._tell("ruling_skipped", str(exc))
        except Exception as exc:  # a bug or a bad record: the run still ends in order
            self._tell("ruling_skipped", f"failed: {exc.__class__.__name__}: {exc}"[:300])
        return None

    def _run(self, placed: Placement, deadline: float | None) -> StoredRules | None:
        t0 = time.perf_counter()
        trial, best = self._best()
        variants, incumbent = self.variants(best)
        sizes = sorted(self.weights) or list(placed.measurer.plan.sizes)
        self.launch_seconds = self._estimate(placed.measurer)
        needed = self.launch_seconds * 2 * (len(variants) + 3)  # 2 rounds of each part at least
        if deadline is not None and time.time() + needed > deadline:
            raise StageSkipped(f"not enough time left (about {needed:.0f} s needed)")
        self._tell("ruling", len(variants), self.rounds)
        done, _ = self._rounds(placed.measurer, [v.arm for v in variants], self.rounds, deadline)
        stored = self._choose(variants, incumbent, sizes, done, trial)
        if stored.rules is not None and not stored.failed and stored.bands > 1:
            stored = self._compose(placed.measurer, stored, variants[incumbent], deadline)
        stored = replace(stored, seconds=time.perf_counter() - t0, finished=time.time())
        earlier = stored_rules(self.study)
        if stored.failed and earlier is not None and earlier.trial == trial and not earlier.failed:
            self._tell("ruling_skipped", f"{stored.failed}; the rules measured earlier for trial "
                       f"{trial} stay")
            return earlier
        save_rules(self.study, stored)
        self._tell("ruled", stored)
        return stored

    def _choose(self, variants: list[_Variant], incumbent: int, sizes: list[int], done: int,
                trial: int) -> StoredRules:
        measured = [v.arm.log_times(self.plan_sizes, done) for v in variants]
        stored_variants = tuple(RuleVariant(choice=v.choice, source=v.source,
                                            mean_us=_geo_means(log_t), failed=v.arm.failed,
                                            round_us={s: [math.exp(x) for x in vals]
                                                      for s, vals in log_t.items()})
                                for v, log_t in zip(variants, measured))
        base = dict(collective=self.collective, comm_size=self.comm_size, trial=trial,
                    incumbent=incumbent, variants=stored_variants, rounds=done)
        if variants[incumbent].arm.failed:
            return StoredRules(**base, per_size={}, rules=None, failed="the best configuration "
                               f"failed: {variants[incumbent].arm.failed}")
        usable = {i: log_t for i, (v, log_t) in enumerate(zip(variants, measured))
                  if v.arm.open and all(s in log_t for s in sizes)}
        if done < 2:
            return StoredRules(**base, per_size={}, rules=None,
                               failed=f"{done} round(s) measured: at least 2 are needed "
                               "(time budget or failures)")
        choices = per_size_choice(usable, sizes, incumbent)
        plan = plan_bands(choices, usable, incumbent, self.weights)
        rules = rule_set(plan, sizes, {i: variants[i].choice for i in usable},
                         stack="openmpi", collective=self.collective, comm_size=self.comm_size)
        verdict = ""
        if len(rules.bands) == 1:
            verdict = (f"one band ({rules.bands[0].choice.label()}): no algorithm beats the best "
                       "configuration's own over a band of sizes; nothing to compose")
        return StoredRules(**base, per_size={c.size: c.variant for c in choices}, rules=rules,
                           cost=plan.cost, verdict=verdict)

    def _compose(self, measurer: Measurer, stored: StoredRules, incumbent: _Variant,
                 deadline: float | None) -> StoredRules:
        assert stored.rules is not None
        path = self.rules_dir / rules_file_name(self.study.study_name)
        from ..files import write_output_atomically

        self.rules_dir.mkdir(parents=True, exist_ok=True)
        write_output_atomically(path, self.rules_text(stored.rules, self.mpi),
                                "per-size rules file")
        composed = Arm("composed rules", LaunchSettings(
            env=self.base.env, mca=self.base.mca + (
                ("coll_tuned_use_dynamic_rules", "1"),
                ("coll_tuned_dynamic_rules_filename", str(path.resolve()))),
            mpirun_args=self.base.mpirun_args),
            {k: v for k, v in (incumbent.arm.params or {}).items() if not self._is_tuned(k)})
        default = Arm("untuned stack", self.default_settings, dict(self.default_params),
                      is_default=True)
        single = Arm("best single", incumbent.arm.settings, incumbent.arm.params)
        arms = [default, single, composed]
        self._tell("composing", stored.bands, self.confirm_rounds)
        done, engine = self._rounds(measurer, arms, self.confirm_rounds, deadline)
        failed = next((f"{a.name} failed: {a.failed}" for a in arms if a.failed), "")
        if failed or done < 2:
            why = failed or f"{done} round(s): too few to compare" + (
                f" ({engine.stopped})" if engine.stopped else "")
            return replace(stored, rules_file=str(path), verdict="composed rules not measured",
                           failed=why)
        sizes = sorted(self.weights)
        changed = [b for b in stored.rules.bands if b.choice != incumbent.choice]
        family = 3 + len(changed)
        vs_default = self._compare(composed, default, sizes, family)
        vs_single = self._compare(composed, single, sizes, family)
        single_vs_default = self._compare(single, default, sizes, family)
        in_bands = {b.label(): self._compare(composed, single, [s for s in sizes if b.holds(s)],
                                             family)
                    for b in changed if any(b.holds(s) for s in sizes)}
        if None in (vs_default, vs_single, single_vs_default, *in_bands.values()):
            return replace(stored, rules_file=str(path), verdict="composed rules not measured",
                           failed="fewer than 2 rounds with both arms measured")
        terms = {b.label(): self._band_term([s for s in sizes if b.holds(s)])
                 for b in changed if any(b.holds(s) for s in sizes)}
        adopted, verdict = _judge(stored.bands, vs_default, vs_single, in_bands, terms,
                                  self.confidence)
        imb_gains: dict[str, Comparison] = {}
        if adopted and self.imb_check is not None:
            adopted, verdict, imb_gains = self._check_with_imb(
                measurer, arms, changed, sizes, family, verdict, deadline)
        return replace(stored, vs_default=vs_default, vs_single=vs_single,
                       single_vs_default=single_vs_default, band_gains=in_bands, adopted=adopted,
                       verdict=verdict, rules_file=str(path), band_terms=terms,
                       imb_band_gains=imb_gains,
                       arms_us={a.name: _geo_means(a.log_times(self.plan_sizes, done))
                                for a in arms})

    def _band_term(self, sizes: list[int]) -> float:
        """The search benchmark's disagreement with IMB-MPI1 over a band's sizes (0: IMB)."""
        return self.disagreement.size_term(sizes) if self.disagreement is not None else 0.0

    def _check_with_imb(self, measurer: Measurer, arms: list[Arm], changed: list[Any],
                        sizes: list[int], family: int, verdict: str,
                        deadline: float | None) -> tuple[bool, str, dict[str, Comparison]]:
        """The adopted bands measured again with IMB-MPI1 (the search's benchmark reads them a
        little off IMB's): composed rules against the best single configuration, in rounds of
        their own; adopted only if IMB too finds each band faster beyond doubt."""
        assert self.imb_check is not None
        checker = measurer.with_benchmark(self.imb_check)
        fresh = [Arm(a.name, a.settings, a.params, is_default=a.is_default) for a in arms]
        default, single, composed = fresh
        done, engine = self._rounds(checker, fresh, self.confirm_rounds, deadline)
        gains = {b.label(): c for b in changed
                 if (c := self._compare(composed, single, [s for s in sizes if b.holds(s)],
                                        family)) is not None}
        base = verdict.rsplit(": adopted", 1)[0]
        failed = next((f"{a.name} failed: {a.failed}" for a in fresh if a.failed), "")
        if done < 2 or failed or len(gains) < len(changed):
            why = failed or engine.stopped or f"{done} round(s)"
            return False, f"{base}: not adopted (IMB-MPI1 could not check the bands: {why})", gains
        unproven = [label for label, c in gains.items() if not c.low > 1.0]
        where = "; ".join(f"{label}: {c.text()}" for label, c in gains.items())
        if unproven:
            return False, (f"{base}: not adopted (IMB-MPI1 does not find {', '.join(unproven)} "
                           f"faster beyond doubt: {where})"), gains
        return True, verdict + f"; IMB-MPI1 agrees ({where})", gains

    def _compare(self, arm: Arm, other: Arm, sizes: list[int],
                 family: int) -> Comparison | None:
        """Weighted log-ratio per round over `sizes`, Student t, simultaneous over the stage's
        comparisons (3 overall, one per band where the rules differ from the best)."""
        _, scores = round_scores(arm, other, self.weights, sizes)
        if len(scores) < 2:
            return None  # nothing can be said from one paired round
        interval = mean_interval(scores, self.confidence, family=family)
        speed, low, high = interval.speedup()
        return Comparison(speed, low, high, len(scores), tuple(scores))

    def _tell(self, event: str, *args: Any) -> None:
        handler = getattr(self.events, event, None)
        if handler is not None:
            handler(*args)


def _judge(bands: int, vs_default: Comparison, vs_single: Comparison,
           in_bands: Mapping[str, Comparison], terms: Mapping[str, float] | None = None,
           confidence: float = 0.95) -> tuple[bool, str]:
    """Adopted when every band where the rules differ from the best single configuration is
    faster there beyond doubt, also after its interval is widened by the benchmark's
    disagreement with IMB-MPI1 at those sizes (`terms`, log units: a band gaining less than the
    benchmark may be off there is not a gain IMB would see), and the whole is surely slower than
    neither the best single configuration nor the untuned stack. (Over all sizes a gain confined
    to a few of them is often too small to tell from noise: the bands are judged where they
    act.)"""
    terms = terms or {}
    where = "; ".join(f"{label}: {c.text()} over the best single configuration"
                      for label, c in in_bands.items())
    text = (f"{bands} bands ({where}); overall {vs_default.speedup:.3f}x "
            f"({vs_default.low:.3f}x..{vs_default.high:.3f}x) over the untuned stack, "
            f"{vs_single.speedup:.3f}x ({vs_single.low:.3f}x..{vs_single.high:.3f}x) over the best "
            "single configuration: ")
    unproven = [label for label, c in in_bands.items() if not c.low > 1.0]
    if unproven:
        return False, text + f"not adopted ({', '.join(unproven)} not faster there beyond doubt)"
    within = [label for label, c in in_bands.items()
              if not _widened_low(c, terms.get(label, 0.0), confidence) > 1.0]
    if within:
        return False, text + (f"not adopted ({', '.join(within)}: the gain is within the "
                              "benchmark's disagreement with IMB-MPI1 at those sizes)")
    if vs_single.high < 1.0 or vs_default.high < 1.0:
        return False, text + "not adopted (slower overall beyond doubt)"
    if not in_bands:
        return False, text + "not adopted (the rules differ from the best nowhere measured)"
    return True, text + "adopted (ompi-rules exports them)"


def _widened_low(c: Comparison, term: float, confidence: float) -> float:
    """The low end of a comparison's speedup interval widened in quadrature by a benchmark's
    disagreement `term` (log units), as a claim's is (stats.with_systematic)."""
    if term <= 0:
        return c.low
    low, high = math.log(c.low), math.log(c.high)
    half = math.hypot((high - low) / 2, systematic_half_width(term, confidence))
    return math.exp((low + high) / 2 - half)


def _geo_means(log_t: Mapping[int, list[float]]) -> dict[int, float]:
    out = {}
    for size, values in log_t.items():
        finite = [v for v in values if not math.isnan(v)]
        if finite:
            out[size] = float(math.exp(np.mean(finite)))
    return out


def rules_file_name(study: str, purpose: str = "") -> str:
    """A file name per study (and purpose: the stage's composed rules, the exported file a check
    measures): readable, and distinct even where two names read the same."""
    readable = "".join(c if c.isalnum() or c in "-_." else "_" for c in study)[:80] or "study"
    suffix = EXPORTERS["ompi-rules"].suffix
    tag = f"-{purpose}" if purpose else ""
    return f"{readable}-{hashlib.sha256(study.encode()).hexdigest()[:10]}{tag}{suffix}"


class StageSkipped(Exception):
    """The per-size stage cannot run now; said, nothing stored."""


def _rules_text(rules: RuleSet, mpi: object) -> str:
    """The rules file in the format this Open MPI reads (export/_ompi_rules)."""
    from ..export import ompi_rules_text, pick_format

    return ompi_rules_text(rules, pick_format(mpi)[0], mpi)
