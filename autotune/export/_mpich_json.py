"""MPICH collective selection file (MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE): the measured
algorithm of each message-size band as a csel decision tree.

Grammar (pmodels/mpich src/mpi/coll/src/csel.c, parse_json_tree; spaces in keys are ignored):
every JSON object is a chain of keys tried in order; `collective=<name>`, `comm_type=intra|inter`,
`avg_msg_size<=N`, ... are operators whose value is the subtree taken when they hold, the next key
being the path when they do not; `...=any` (or `any`) always holds and must come last; a key
`algorithm=MPIR_<Coll>_<kind>_<name>` ends the path (src/mpi/coll/src/csel_container.c names every
container MPICH knows, an unknown one aborts). avg_msg_size is the per-rank buffer in bytes (IMB's
#bytes), compared as a C int.

MPICH reads this file *instead of* its built-in selection (src/mpi/coll/src/coll_impl.c), and a
collective with no branch aborts (MPIR_Assert(cnt) after MPIR_Csel_search): on its own the file
covers only the tuned collective, so give MPICH's own selection file (e.g. maint/tuning/coll/mpir/
generic.json of the installed version) with `--mpich-base` and the tuned branch replaces its own.
JSON has no comments: what was measured where is in `autotune export --format json`.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from ..errors import InputError, StorageError
from ..files import read_text_input
from ..rules import AlgorithmChoice, RuleSet, SizeBand
from ._best import BestConfig, check_exportable, printable
from ._options import ExportOptions

BASE_MAX_BYTES = 4 * 1024 * 1024
INT_MAX = 2**31 - 1
# MPIR_CVAR_<COLL>_INTRA_ALGORITHM values (search_spaces/mpich.yaml) -> csel container names
ALGORITHMS: dict[str, dict[str, str]] = {
    "allreduce": {"smp": "MPIR_Allreduce_intra_smp",
                  "recursive_doubling": "MPIR_Allreduce_intra_recursive_doubling",
                  "reduce_scatter_allgather": "MPIR_Allreduce_intra_reduce_scatter_allgather",
                  "nb": "MPIR_Allreduce_allcomm_nb"},
    "allgather": {"brucks": "MPIR_Allgather_intra_brucks",
                  "recursive_doubling": "MPIR_Allgather_intra_recursive_doubling",
                  "ring": "MPIR_Allgather_intra_ring", "nb": "MPIR_Allgather_allcomm_nb"},
    "alltoall": {"brucks": "MPIR_Alltoall_intra_brucks",
                 "pairwise": "MPIR_Alltoall_intra_pairwise",
                 "pairwise_sendrecv_replace": "MPIR_Alltoall_intra_pairwise_sendrecv_replace",
                 "scattered": "MPIR_Alltoall_intra_scattered", "nb": "MPIR_Alltoall_allcomm_nb"},
    "bcast": {"binomial": "MPIR_Bcast_intra_binomial",
              "scatter_recursive_doubling_allgather":
                  "MPIR_Bcast_intra_scatter_recursive_doubling_allgather",
              "scatter_ring_allgather": "MPIR_Bcast_intra_scatter_ring_allgather",
              "smp": "MPIR_Bcast_intra_smp", "tree": "MPIR_Bcast_intra_tree",
              "pipelined_tree": "MPIR_Bcast_intra_pipelined_tree",
              "nb": "MPIR_Bcast_allcomm_nb"},
    "reduce": {"binomial": "MPIR_Reduce_intra_binomial", "smp": "MPIR_Reduce_intra_smp",
               "reduce_scatter_gather": "MPIR_Reduce_intra_reduce_scatter_gather",
               "nb": "MPIR_Reduce_allcomm_nb"},
}
# further intra-communicator containers of csel_container.c a measured rule may name directly
MORE_CONTAINERS = {
    "allreduce": ("MPIR_Allreduce_intra_recursive_multiplying", "MPIR_Allreduce_intra_tree",
                  "MPIR_Allreduce_intra_recexch", "MPIR_Allreduce_intra_ring",
                  "MPIR_Allreduce_intra_k_reduce_scatter_allgather"),
    "allgather": ("MPIR_Allgather_intra_k_brucks", "MPIR_Allgather_intra_recexch_doubling",
                  "MPIR_Allgather_intra_recexch_halving"),
    "alltoall": ("MPIR_Alltoall_intra_k_brucks",),
    "bcast": (),
    "reduce": (),
}
# the one inter-communicator algorithm of each (MPICH's own selection uses it for comm_type=inter)
INTER = {"allreduce": "MPIR_Allreduce_inter_reduce_exchange_bcast",
         "allgather": "MPIR_Allgather_inter_local_gather_remote_bcast",
         "alltoall": "MPIR_Alltoall_inter_pairwise_exchange",
         "bcast": "MPIR_Bcast_inter_remote_send_local_bcast",
         "reduce": "MPIR_Reduce_inter_local_reduce_remote_send"}


def cvar(collective: str) -> str:
    return f"MPIR_CVAR_{collective.upper()}_INTRA_ALGORITHM"


def known_containers(collective: str) -> set[str]:
    return {*ALGORITHMS.get(collective, {}).values(), *MORE_CONTAINERS.get(collective, ())}


def container(collective: str, algorithm: object) -> str:
    """The csel container of an MPIR_CVAR value (`recursive_doubling`) or container name."""
    name = str(algorithm)
    if name in known_containers(collective):
        return name
    if name in ALGORITHMS.get(collective, {}):
        return ALGORITHMS[collective][name]
    raise StorageError(f"{printable(name)!r} is not an MPICH {collective} algorithm (known: "
                       f"{', '.join(sorted(ALGORITHMS.get(collective, {})))})")


def reader_settings(path: str | None, collective: str) -> dict[str, str]:
    """The environment that makes MPICH select by this file (MPIR-level selection: the device's
    own collectives off, the collective's algorithm left to the selection)."""
    return {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": path or "<path of this file>",
            cvar(collective): "auto", "MPIR_CVAR_DEVICE_COLLECTIVES": "none"}


def _is_mpich(best: BestConfig) -> bool:
    mpi = str(best.host.get("mpi") or "").lower()
    space = (best.config.space if best.config else "").lower()
    return "mpich" in mpi or "mpich" in space or any(k.startswith("MPIR_CVAR_") for k in best.env)


def rules_for(best: BestConfig) -> RuleSet:
    config = best.config
    if config is None:
        raise InputError(f"study {printable(best.study)} stores no configuration: its collective "
                         "is unknown")
    if best.withheld:
        raise InputError("the independent check disagrees with the search and an MPICH selection "
                         "file cannot restate MPICH's own choice: nothing written (--force writes "
                         "the measured rules)")
    if best.rules is not None:
        if best.rules.stack != "mpich":
            raise InputError(f"the measured rules of study {printable(best.study)} are for "
                             f"{printable(best.rules.stack)}, not MPICH")
        return best.rules
    if not _is_mpich(best):
        raise InputError(f"mpich-json is an MPICH format; study {printable(best.study)} ran "
                         f"{printable(best.host.get('mpi') or 'another MPI')} (Open MPI studies: "
                         "--format ompi-rules)")
    name = cvar(config.collective)
    algorithm = best.env.get(name) or best.params.get(name)
    if not algorithm or algorithm == "auto":
        raise InputError(f"the best configuration of study {printable(best.study)} leaves "
                         f"{name} to MPICH (auto): no algorithm to select")
    return RuleSet.single("mpich", config.collective, config.nodes * config.ppn,
                          AlgorithmChoice(str(algorithm)))


def selection_tree(rules: RuleSet) -> dict[str, Any]:
    """{collective=C: {comm_type=intra: {avg_msg_size<=B: {algorithm=...}, ..., any}, inter}}."""
    coll = rules.collective
    if coll not in ALGORITHMS:
        raise InputError(f"MPICH selection files are not written for {printable(coll)}")
    intra: dict[str, Any] = {}
    for band in rules.bands:
        name = container(coll, band.choice.algorithm)
        key = "avg_msg_size=any" if band.max_bytes is None else _le(band)
        intra[key] = {f"algorithm={name}": {}}
    return {f"collective={coll}": {"comm_type=intra": intra,
                                   "comm_type=inter": {f"algorithm={INTER[coll]}": {}}}}


def _le(band: SizeBand) -> str:
    assert band.max_bytes is not None
    if not 0 < band.max_bytes <= INT_MAX:
        raise StorageError(f"band {band.label()}: MPICH compares message sizes as a C int")
    return f"avg_msg_size<={band.max_bytes - 1}"


def merge_into(base_path: str, tree: dict[str, Any], collective: str) -> dict[str, Any]:
    """MPICH's own selection with its branch for `collective` replaced by the tuned one."""
    text = read_text_input(base_path, "MPICH selection file", BASE_MAX_BYTES)
    try:
        base = json.loads(text)
    except ValueError as exc:
        raise InputError(f"MPICH selection file {base_path}: not JSON ({exc})") from None
    if not isinstance(base, dict) or not base or not all(
            isinstance(k, str) and k.replace(" ", "").startswith("collective=") for k in base):
        raise InputError(f"MPICH selection file {base_path}: not a csel tree (its top-level keys "
                         "must all be collective=<name>)")
    key = f"collective={collective}"
    merged = {key: tree[key]}
    merged.update((k, v) for k, v in base.items() if k.replace(" ", "") != key)
    return merged


def mpich_json_file(best: BestConfig, now: dt.datetime | None = None,
                    options: ExportOptions | None = None) -> str:
    """`now` is unused: JSON holds no comment to date the file in."""
    check_exportable(best)
    options = options or ExportOptions()
    rules = rules_for(best)
    tree = selection_tree(rules)
    if options.mpich_base:
        tree = merge_into(options.mpich_base, tree, rules.collective)
    return json.dumps(tree, indent=2) + "\n"
