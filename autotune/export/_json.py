"""The best configuration as one JSON document, for tools and job scripts that read settings."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from ..claims import below_noise_floor
from ._best import BestConfig, check_exportable


def json_file(best: BestConfig, now: dt.datetime | None = None) -> str:
    check_exportable(best)
    now = now or dt.datetime.now(dt.UTC)
    confirmed: dict[str, Any] | None = None
    if best.confirmed_speedup:
        speed, low, high = best.confirmed_speedup
        confirmed = {"speedup": speed, "interval": [low, high], "confidence": best.confidence,
                     "level": best.confirmed_level, "systematic": best.confirmed_systematic}
    config = best.config
    settings = {"env": dict(sorted(best.env.items())), "mca": dict(sorted(best.mca.items())),
                "mpirun_args": list(best.mpirun_args)}
    check = best.verification
    measured = best.rules_measured
    rules = best.rules
    if rules is None and best.force and measured is not None and measured.rules is not None:
        rules = measured.rules  # measured but not adopted: written on request
    doc = {
        "study": best.study,
        "trial": best.trial,
        "is_default": best.is_default,
        # measured in the search, against the interleaved default, and the weighted mean
        # log-ratio (lower: better); None for a trial the search pruned
        "speedup": best.search_figures[0],
        "value": best.search_figures[1],
        "pruned": best.pruned,
        "confirmed": confirmed,  # None when no confirmation ran or the default stayed best
        # the independent check of this trial (another benchmark against the untuned stack)
        "verification": check.to_dict() if check is not None else None,
        "verification_text": check.describe() if check is not None else None,
        "noise_floor": best.noise.to_dict() if best.noise is not None else None,
        "below_noise_floor": below_noise_floor(best.noise, best.claimed),
        # False: the check disagrees, so the untuned stack is recommended and the settings are
        # under "withheld" (env/mca/mpirun_args empty) unless exported with --force
        "recommended": not best.disagrees,
        "forced": best.force and best.disagrees,
        "params": best.params,
        **({"env": {}, "mca": {}, "mpirun_args": [], "withheld": settings} if best.withheld
           else settings),
        "context": best.context,
        "host": best.host,
        "measured": None if config is None else {
            "collective": config.collective, "nodes": config.nodes, "ppn": config.ppn,
            "space": config.space, "sizes": list(config.sizes),
            # what measured it: `mpi4py kernel`, `IMB-MPI1 (...)`, or `app: PROGRAM ...; metric:
            # ...` (an application's study: sizes [0], one value per launch)
            "benchmark": config.benchmark},
        # the per-size rules exported (autotune.rules.RuleSet.to_dict): adopted ones, or measured
        # ones with --force; None for one global setting; withheld like the settings
        "rules": None if rules is None or best.withheld else rules.to_dict(),
        # how the per-size rules were chosen and measured (storage.StoredRules.to_dict), if they were
        "per_size": measured.to_dict() if measured is not None else None,
        "completed_trials": best.n_complete,
        "exported": now.isoformat(timespec="seconds"),
    }
    return json.dumps(doc, indent=2, default=str) + "\n"
