"""UCC tuning string (UCC_TL_UCP_TUNE) for configurations where Open MPI hands collectives to UCC
(coll_ucc_enable=1), as a file to `source` like the env export.

Grammar (openucx/ucc src/coll_score/ucc_coll_score.c, ucc_coll_score_alloc_from_str and
ucc_coll_score_parse_str): sections separated by `#`; each a `:`-separated list of tokens, each
classified in this order: collective names (`allreduce,bcast`), memory types (`host,cuda`), a
score (digits or `inf`), message ranges (`start-end,...`, UCS memory units: digits with an
optional B/K/M/G/T suffix, or `inf`; start inclusive, end exclusive), team sizes (`[2-8,16]`) and
an algorithm (`@name` or `@id`). Algorithm names of TL/UCP: the ucc_tl_ucp_<coll>_algs tables of
src/components/tl/ucp/<coll>/<coll>.c.
"""

from __future__ import annotations

import datetime as dt
import shlex

from ..errors import InputError, StorageError
from ..rules import RuleSet
from ._best import BestConfig, check_exportable, header_lines, printable, withhold
from ._options import ExportOptions

TL = "UCP"
TUNE_VAR = f"UCC_TL_{TL}_TUNE"
UCC_ALGORITHMS = {
    "allreduce": ("knomial", "sra_knomial", "dbt", "sliding_window"),
    "allgather": ("knomial", "ring", "neighbor", "bruck", "sparbit", "linear", "batched"),
    "alltoall": ("pairwise", "bruck", "onesided"),
    "bcast": ("knomial", "sag_knomial", "dbt"),
    "reduce": ("knomial", "dbt", "srg"),
}
_TRUE = {"1", "true", "yes", "on", "enabled", "t", "y"}  # what Open MPI takes as a true bool
_UNITS = (("T", 1024**4), ("G", 1024**3), ("M", 1024**2), ("K", 1024))


def ucc_in_use(best: BestConfig) -> bool:
    return str(best.mca.get("coll_ucc_enable", "")).strip().lower() in _TRUE


def memunits(size: int | None) -> str:
    """UCS memory units as ucs_str_to_memunits reads them: 4096 -> 4K, None -> inf."""
    if size is None:
        return "inf"
    for suffix, factor in _UNITS:
        if size and size % factor == 0:
            return f"{size // factor}{suffix}"
    return str(size)


def tune_string(rules: RuleSet) -> str:
    coll = rules.collective
    if coll not in UCC_ALGORITHMS:
        raise InputError(f"UCC tuning is not written for {printable(coll)}")
    sections = []
    for band in rules.bands:
        alg = band.choice.algorithm
        if not isinstance(alg, str) or alg not in UCC_ALGORITHMS[coll]:
            raise StorageError(f"{printable(repr(alg))} is not a TL/{TL} {coll} algorithm (known: "
                               f"{', '.join(UCC_ALGORITHMS[coll])})")
        sections.append(f"{coll}:{memunits(band.min_bytes)}-{memunits(band.max_bytes)}:@{alg}")
    return "#".join(sections)


def ucc_tune_file(best: BestConfig, now: dt.datetime | None = None,
                  options: ExportOptions | None = None) -> str:
    check_exportable(best)
    now = now or dt.datetime.now(dt.UTC)
    if not ucc_in_use(best):
        raise InputError(f"the best configuration of study {printable(best.study)} does not use "
                         "UCC (coll_ucc_enable is not set): no UCC tuning to export")
    if best.rules is None:  # a search space cannot set it: the value allow-list has no `@` or `#`
        raise InputError(f"the best configuration of study {printable(best.study)} uses UCC with "
                         f"its own algorithm choice; nothing measured to put in {TUNE_VAR} "
                         "(--format env has the UCC settings)")
    if best.rules.stack != "ucc":
        raise InputError(f"the measured rules of study {printable(best.study)} are for "
                         f"{printable(best.rules.stack)}, not UCC")
    tune = tune_string(best.rules)
    lines = header_lines(best, now)
    lines += [f"# UCC TL/{TL} algorithm selection: {printable(best.rules.collective)} at "
              f"{best.rules.comm_size} ranks, by message size; the configuration's other settings "
              "are in `autotune export --format env`",
              f"# UCC reads it from every rank's environment: source this file, then "
              f"mpirun -x {TUNE_VAR} ... (Open MPI forwards a variable only when asked)",
              f"export OMPI_MCA_coll_ucc_enable={shlex.quote(best.mca['coll_ucc_enable'])}",
              f"export {TUNE_VAR}={shlex.quote(tune)}"]
    return "\n".join(withhold(best, lines)) + "\n"
