"""Open MPI coll_tuned dynamic rules: the measured algorithm of each message-size band, for the
communicator size measured, in the format the probed Open MPI reads.

Formats (Open MPI sources, open-mpi/ompi):
- classic (every release): `ncoll, collid, ncomsizes, {comsize, nmsgsizes, {msgsize alg faninout
  segsize}}`, `#` starts a comment (ompi/mca/coll/tuned/coll_tuned_dynamic_file.c, getnext);
  the rule for message size 0 comes first, always (the reader refuses the file otherwise);
- v2: the first bytes are `rule-file-version-2`, and a fifth column per rule holds max_requests;
  "A release of Open MPI at least v5.0.7 is required for version 2 features"
  (docs/tuning-apps/coll-tuned.rst);
- json: {"rule_file_version", "module": "tuned", "collectives": {name: [{comm_size_min,
  comm_size_max, rules: [{msg_size_min, msg_size_max (inclusive, or "inf"), alg, faninout,
  seg_size, reqs}]}]}}; "Starting with Open MPI 6.0, dynamic tuning files can be specified in JSON
  format" (docs/tuning-apps/coll-tuned.rst, docs/tuning-apps/tuned_dynamic_file_schema.json). No
  released version before 6.0 reads it.

Communicator sizes: in the classic reader of 4.1/5.0 (coll_tuned_dynamic_rules.c,
ompi_coll_tuned_get_com_rule_ptr) a communicator takes the rules of the largest listed size <= its
own, or the first entry when none is; so the file lists 0 -> fixed decision, N -> measured bands,
N+1 -> fixed decision, and only communicators of exactly N ranks use the measured bands (proved
for 4.1.4 by tests/export/test_ompi_rules_applied.py). JSON states [N, N] directly.

Collective ids: the COLLTYPE enum of ompi/mca/coll/base/coll_base_functions.h. Algorithm ids:
`ompi_info --param coll tuned --level 9` of Open MPI 4.1.4 and docs/tuning-apps/coll-tuned.rst
(main) for 5.0 and later; ids are only ever appended, so 4.1's are valid everywhere.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import replace
from functools import partial

from ..errors import InputError, StorageError
from ..rules import (TIMES_COMM_SIZE, TUNED_PREFIX, AlgorithmChoice, RuleSet, choice_from_params,
                     ompi_message_size, tuned_param_names)
from ._best import BestConfig, check_exportable, header_lines, printable
from ._options import ExportOptions

RULES_FORMATS = ("classic", "v2", "json")
V2_SINCE = (5, 0, 7)
JSON_SINCE = (6, 0, 0)
COLL_IDS = {"allgather": 0, "allreduce": 2, "alltoall": 3, "bcast": 7, "reduce": 11}
# coll_tuned algorithm names by id (index): Open MPI 4.1.4 first, then what 5.0+/main appends
ALGORITHMS_41 = {
    "allgather": ("ignore", "linear", "bruck", "recursive_doubling", "ring", "neighbor",
                  "two_proc"),
    "allreduce": ("ignore", "basic_linear", "nonoverlapping", "recursive_doubling", "ring",
                  "segmented_ring", "rabenseifner"),
    "alltoall": ("ignore", "linear", "pairwise", "modified_bruck", "linear_sync", "two_proc"),
    "bcast": ("ignore", "basic_linear", "chain", "pipeline", "split_binary_tree", "binary_tree",
              "binomial", "knomial", "scatter_allgather", "scatter_allgather_ring"),
    "reduce": ("ignore", "linear", "chain", "pipeline", "binary", "binomial", "in-order_binary",
               "rabenseifner"),
}
ALGORITHMS_LATER = {**ALGORITHMS_41,
                    "allgather": (*ALGORITHMS_41["allgather"], "sparbit", "direct-messaging"),
                    "allreduce": (*ALGORITHMS_41["allreduce"], "allgather_reduce"),
                    "reduce": (*ALGORITHMS_41["reduce"], "knomial")}
INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
_VERSION_RE = re.compile(r"Open MPI v?(\d+)\.(\d+)(?:\.(\d+))?", re.IGNORECASE)


def ompi_version(mpi: object) -> tuple[int, int, int] | None:
    """(4, 1, 4) from the probed `Open MPI 4.1.4`; None when the text names no Open MPI."""
    match = _VERSION_RE.search(str(mpi or ""))
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def pick_format(mpi: object, override: str | None = None) -> tuple[str, str]:
    """(format, why): the newest format the probed version reads, unless the user chose."""
    version = ompi_version(mpi)
    if version is None and mpi and "mpi" in str(mpi).lower():
        raise InputError(f"ompi-rules is an Open MPI format; the study ran {printable(mpi)} "
                         "(MPICH studies: --format mpich-json)")
    if override is not None:
        if override not in RULES_FORMATS:
            raise InputError(f"--rules-format {override!r}: expected one of "
                             f"{', '.join(RULES_FORMATS)}")
        return override, "chosen with --rules-format"
    if version is None:
        return "classic", "MPI version unknown: the classic format, which every release reads"
    text = ".".join(map(str, version))
    if version >= JSON_SINCE:
        return "json", f"Open MPI {text} reads JSON rules (6.0 and later)"
    if version >= V2_SINCE:
        return "v2", f"Open MPI {text} reads rule-file-version-2 (5.0.7 and later)"
    return "classic", f"Open MPI {text} reads the classic format (before 5.0.7)"


def reader_settings(path: str | None) -> dict[str, str]:
    """The MCA settings that make Open MPI read the rules file at `path`."""
    return {"coll_tuned_use_dynamic_rules": "1",
            "coll_tuned_dynamic_rules_filename": path or "<path of this file>"}


def rules_for(best: BestConfig) -> RuleSet:
    """The measured per-size rules, or one band of the forced algorithm (0: Open MPI's fixed
    decision) when none were measured; the fixed decision everywhere when the export is withheld."""
    config = best.config
    if config is None:
        raise InputError(f"study {printable(best.study)} stores no configuration: the collective "
                         "and communicator size of its rules are unknown")
    measured = best.rules_measured
    if best.rules is None and best.force and measured is not None and measured.rules is not None:
        best = replace(best, rules=measured.rules)  # not adopted, written anyway (--force)
    if best.rules is not None and not best.withheld:
        if best.rules.stack != "openmpi":
            raise InputError(f"the measured rules of study {printable(best.study)} are for "
                             f"{printable(best.rules.stack)}, not Open MPI coll_tuned")
        return best.rules
    forced = None if best.withheld else choice_from_params(config.collective, best.mca)
    return RuleSet.single("openmpi", config.collective, config.nodes * config.ppn,
                          forced or AlgorithmChoice(0))


def check_rules(rules: RuleSet, mpi: object) -> tuple[str, ...]:
    """Every value a rules file holds, checked before it is written (rules come from storage):
    returns the algorithm names of the collective for the probed version."""
    if rules.collective not in COLL_IDS:
        raise InputError(f"Open MPI rules files are not written for {printable(rules.collective)} "
                         f"(known: {', '.join(COLL_IDS)})")
    version = ompi_version(mpi)
    table = ALGORITHMS_LATER if version is not None and version >= (5, 0, 0) else ALGORITHMS_41
    names = table[rules.collective]
    where = f"the {rules.collective} rules"
    if not 1 <= rules.comm_size < INT_MAX:
        raise StorageError(f"{where}: communicator size {rules.comm_size} out of range")
    for band in rules.bands:
        choice = band.choice
        alg = choice.algorithm
        if isinstance(alg, bool) or not isinstance(alg, int) or not 0 <= alg < len(names):
            raise StorageError(f"{where}: algorithm {printable(repr(alg))} of band "
                               f"{band.label()} is not a coll_tuned {rules.collective} algorithm "
                               f"id (0..{len(names) - 1})")
        for what, value in (("segment size", choice.segsize), ("fan-in/out", choice.faninout),
                            ("max requests", choice.max_requests)):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT_MAX:
                raise StorageError(f"{where}: {what} {printable(repr(value))} of band "
                                   f"{band.label()} is not an integer in 0..2^31-1")
        if not 0 <= band.min_bytes <= LONG_MAX:
            raise StorageError(f"{where}: band start {band.min_bytes} out of range")
    return names


def ompi_rules_file(best: BestConfig, now: dt.datetime | None = None,
                    options: ExportOptions | None = None) -> str:
    check_exportable(best)
    options = options or ExportOptions()
    now = now or dt.datetime.now(dt.UTC)
    mpi = best.host.get("mpi")
    fmt, why = pick_format(mpi, options.rules_format)
    rules = rules_for(best)
    names = check_rules(rules, mpi)
    if fmt == "json":
        return _json_rules(rules)
    return _classic_rules(best, rules, names, fmt, why, now, options)


def _alg_label(names: tuple[str, ...], choice: AlgorithmChoice) -> str:
    assert isinstance(choice.algorithm, int)
    label = choice.label()
    return f"{label} ({names[choice.algorithm]})" if choice.algorithm else \
        "alg 0 (Open MPI's fixed decision)"


def _classic_rules(best: BestConfig, rules: RuleSet, names: tuple[str, ...], fmt: str, why: str,
                   now: dt.datetime, options: ExportOptions) -> str:
    v2 = fmt == "v2"
    n = rules.comm_size
    coll = rules.collective
    settings = reader_settings(options.path)
    lines = ["rule-file-version-2"] if v2 else []  # the reader matches it at the first byte
    lines += header_lines(best, now)
    lines += [
        f"# Open MPI coll_tuned dynamic rules, {'rule-file-version-2' if v2 else 'classic'} "
        f"format: {why}",
        f"# {coll} at {n} ranks, by message size (bytes, as Open MPI counts them); communicators "
        f"of other sizes keep Open MPI's fixed decision",
        "# Open MPI reads this file with: "
        + " ".join(f"--mca {k} {printable(v)}" for k, v in settings.items()),
        f"#   (or OMPI_MCA_<name>=<value>, or mca-params.conf lines); leave "
        f"{tuned_param_names(coll)['algorithm']} unset: a forced algorithm applies wherever this "
        "file says alg 0",
    ]
    if best.withheld:
        lines.append("# withheld: the rules below restate Open MPI's fixed decision (alg 0); "
                     "--force writes the measured ones")
    lines += _other_settings(best, coll)
    dropped = [b for b in rules.bands if b.choice.max_requests] if not v2 else []
    for band in dropped:
        lines.append(f"# NOTE: band {band.label()} was measured with max_requests "
                     f"{band.choice.max_requests}, which this format cannot hold (Open MPI >= "
                     "5.0.7 reads it: --rules-format v2)")

    lines += _rule_lines(rules, names, v2)
    return "\n".join(lines) + "\n"


def _rule(start: int, choice: AlgorithmChoice, comment: str, v2: bool) -> str:
    """One rule line: msgsize alg faninout segsize [max_requests], then a comment."""
    cols = [start, choice.algorithm, choice.faninout, choice.segsize]
    if v2:
        cols.append(choice.max_requests)
    return f"{' '.join(map(str, cols))}  # {comment}"


def _rule_lines(rules: RuleSet, names: tuple[str, ...], v2: bool) -> list[str]:
    """The rules proper: communicator sizes 0, N and N+1, so that only N ranks use the bands."""
    n = rules.comm_size
    coll = rules.collective

    rule = partial(_rule, v2=v2)
    fixed = AlgorithmChoice(0)
    lines = [
        "1  # collectives in this file",
        f"{COLL_IDS[coll]}  # {coll} (COLLTYPE id)",
        "3  # communicator sizes",
        f"0  # fewer than {n} ranks:" if n > 1 else "0  # (no smaller communicator)",
        "1  # message-size rules",
        rule(0, fixed, "any size: Open MPI's fixed decision"),
        f"{n}  # {n} ranks, as measured",
        f"{len(rules.bands)}  # message-size rules (columns: msgsize alg faninout segsize"
        + (" max_requests)" if v2 else ")"),
    ]
    scaled = coll in TIMES_COMM_SIZE
    for band in rules.bands:
        lines.append(rule(ompi_message_size(coll, n, band.min_bytes), band.choice,
                          f"{band.label()}{' per rank' if scaled else ''}: "
                          f"{_alg_label(names, band.choice)}"))
    lines += [
        f"{n + 1}  # more than {n} ranks:",
        "1  # message-size rules",
        rule(0, fixed, "any size: Open MPI's fixed decision"),
    ]
    return lines


def ompi_rules_text(rules: RuleSet, fmt: str = "classic", mpi: object = None) -> str:
    """A rules file without the export's header (the per-size stage launches with it)."""
    names = check_rules(rules, mpi)
    if fmt == "json":
        return _json_rules(rules)
    lines = ["rule-file-version-2"] if fmt == "v2" else []
    lines.append("# autotune per-size rules: " + ", ".join(
        f"{b.label()} {b.choice.label()}" for b in rules.bands))
    return "\n".join(lines + _rule_lines(rules, names, fmt == "v2")) + "\n"


def _other_settings(best: BestConfig, coll: str) -> list[str]:
    """Settings of the configuration that the rules file does not carry, as comments."""
    tuned = {*tuned_param_names(coll).values(), f"{TUNED_PREFIX}use_dynamic_rules"}
    mca = {k: v for k, v in sorted(best.mca.items()) if k not in tuned}
    if best.withheld or not (mca or best.env or best.mpirun_args):
        return []
    lines = ["# the configuration's other settings, not in this file (autotune export --format env "
             "has them all):"]
    lines += [f"#   --mca {k} {printable(v)}" for k, v in mca.items()]
    lines += [f"#   {k}={printable(v)}" for k, v in sorted(best.env.items())]
    if best.mpirun_args:
        lines.append(f"#   mpirun {printable(' '.join(best.mpirun_args))}")
    return lines


def deployment_with_rules(best: BestConfig, path: str) -> tuple[str, dict[str, str]] | None:
    """What `export --format ompi-rules` deploys when per-size rules are adopted: the file's text
    (written to be read at `path`) and the MCA settings a launch takes with it (the
    configuration's own less those the file carries, and the reader's); None without adopted
    rules or when the export is withheld (then the configuration's settings are the deployment)."""
    if best.rules is None or best.withheld or best.config is None:
        return None
    text = ompi_rules_file(best, options=ExportOptions(path=path))
    carried = {*tuned_param_names(best.config.collective).values(), *reader_settings(None)}
    mca = {k: v for k, v in best.mca.items() if k not in carried}
    return text, {**mca, **reader_settings(path)}


def _json_rules(rules: RuleSet) -> str:
    """JSON has no comments: what and where is in `autotune export --format json` instead."""
    entries = []
    for band in rules.bands:
        choice = band.choice
        size = partial(ompi_message_size, rules.collective, rules.comm_size)
        entry: dict[str, object] = {
            "msg_size_min": size(band.min_bytes),
            "msg_size_max": "inf" if band.max_bytes is None else size(band.max_bytes) - 1,
            "alg": choice.algorithm}
        for key, value in (("faninout", choice.faninout), ("seg_size", choice.segsize),
                           ("reqs", choice.max_requests)):
            if value:
                entry[key] = value
        entries.append(entry)
    doc = {"rule_file_version": 3, "module": "tuned",
           "collectives": {rules.collective: [{"comm_size_min": rules.comm_size,
                                               "comm_size_max": rules.comm_size,
                                               "rules": entries}]}}
    return json.dumps(doc, indent=2) + "\n"



def ompi_rules_campaign(rule_sets: list[tuple[str, RuleSet]], fmt: str = "classic",
                        mpi: object = None, header: tuple[str, ...] = ()) -> str:
    """One rules file for many (label, rules): every collective and communicator size measured.
    A communicator size measured twice (2 nodes x 1 and 1 node x 2) keeps the first, as Open MPI
    keys rules by communicator size alone; sizes between those measured keep the fixed decision."""
    chosen: dict[str, dict[int, tuple[str, RuleSet]]] = {}
    notes: list[str] = []
    for label, rules in rule_sets:
        check_rules(rules, mpi)
        sizes = chosen.setdefault(rules.collective, {})
        if rules.comm_size in sizes:
            first, kept = sizes[rules.comm_size]
            if kept.bands != rules.bands:
                notes.append(f"{label} ({rules.comm_size} ranks) differs from {first} at the same "
                             f"communicator size: {first} kept here; {label}'s own file has it")
            continue
        sizes[rules.comm_size] = (label, rules)
    if fmt == "json":
        doc = {"rule_file_version": 3, "module": "tuned", "collectives": {
            coll: [json.loads(_json_rules(rules))["collectives"][coll][0]
                   for _, (_, rules) in sorted(by_size.items())]
            for coll, by_size in chosen.items()}}
        return json.dumps(doc, indent=2) + "\n"
    v2 = fmt == "v2"
    lines = ["rule-file-version-2"] if v2 else []
    if not v2:
        notes += [f"{label}: band {b.label()} was measured with max_requests "
                  f"{b.choice.max_requests}, which this format cannot hold (Open MPI >= 5.0.7 "
                  "reads it: rule-file-version-2)"
                  for by_size in chosen.values() for label, rules in by_size.values()
                  for b in rules.bands if b.choice.max_requests]
    lines += [printable(h) for h in header] + [f"# NOTE: {printable(n)}" for n in notes]
    lines.append(f"{len(chosen)}  # collectives in this file")
    fixed = AlgorithmChoice(0)
    rule = partial(_rule, v2=v2)
    for coll, by_size in chosen.items():
        names = check_rules(next(iter(by_size.values()))[1], mpi)
        table: dict[int, list[str]] = {0: [rule(0, fixed, "fixed decision")]}
        for n, (label, rules) in sorted(by_size.items()):
            scaled = coll in TIMES_COMM_SIZE
            table[n] = [rule(ompi_message_size(coll, n, b.min_bytes), b.choice,
                             f"{printable(label)}: {b.label()}{' per rank' if scaled else ''}: "
                             f"{_alg_label(names, b.choice)}") for b in rules.bands]
        for n in list(by_size):
            table.setdefault(n + 1, [rule(0, fixed, "fixed decision")])
        lines += [f"{COLL_IDS[coll]}  # {coll} (COLLTYPE id)",
                  f"{len(table)}  # communicator sizes"]
        for n in sorted(table):
            lines += [f"{n}  # communicator size", f"{len(table[n])}  # message-size rules",
                      *table[n]]
    return "\n".join(lines) + "\n"
