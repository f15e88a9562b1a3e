"""Campaign exports: a directory with one file per case and format, named by case
(`allreduce-2n8p.env`, `allreduce-2n8p.rules`, ...), and one Open MPI rules file covering every
collective and communicator size measured (`campaign.rules`)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import AutotuneError, InputError
from ..export import printable
from ._status import case_studies

DEFAULT_FORMATS = ("env", "json", "ompi-rules")
COMBINED = "campaign.rules"


@dataclass(frozen=True)
class Written:
    path: str
    case: str  # a case label, or "all" for the combined rules file
    note: str = ""


@dataclass(frozen=True)
class Skipped:
    case: str
    why: str


@dataclass(frozen=True)
class CampaignExport:
    directory: str
    written: tuple[Written, ...]
    skipped: tuple[Skipped, ...]


def export_campaign(storage_url: str | None, name: str, out_dir: str | Path,
                    formats: tuple[str, ...] = DEFAULT_FORMATS, only: str | None = None,
                    force: bool = False) -> CampaignExport:
    """Every case with a completed trial, in every format it can be written in (a format that
    does not apply to the case's stack is skipped, said why); then the combined rules file."""
    from ..export import EXPORTERS, ExportOptions, best_config, export_text
    from ..export import COLL_IDS, ompi_rules_campaign, ompi_version, pick_format, rules_for
    from ..files import check_output_path, write_output_atomically

    unknown = [f for f in formats if f not in EXPORTERS]
    if unknown:
        raise InputError(f"--formats: unknown {', '.join(unknown)} (choose from "
                         f"{', '.join(EXPORTERS)})")
    out = Path(out_dir)
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise InputError(f"campaign export -o {out}: not a directory")
    cases = case_studies(storage_url, name)
    if only is not None:
        cases = [c for c in cases if c[0].label == only]
        if not cases:
            raise InputError(f"campaign {name!r} has no case {only!r}")
    out.mkdir(parents=True, exist_ok=True)
    written: list[Written] = []
    skipped: list[Skipped] = []
    rule_sets = []
    mpi = None
    for case, study, _mark in cases:
        try:
            best = dataclasses.replace(best_config(study), force=force)
        except AutotuneError as exc:
            skipped.append(Skipped(case.label, str(exc)))
            continue
        for fmt in formats:
            path = out / f"{case.label}{EXPORTERS[fmt].suffix}"
            check_output_path(path, "campaign export -o")
            try:
                text = export_text(fmt, best, ExportOptions(path=os.path.abspath(path)))
            except AutotuneError as exc:
                skipped.append(Skipped(f"{case.label} {fmt}", str(exc)))
                continue
            write_output_atomically(path, text, "campaign export -o")
            written.append(Written(str(path), case.label,
                                   "untuned stack" if best.is_default else ""))
        if ("ompi-rules" in formats and ompi_version(best.host.get("mpi")) is not None
                and case.collective in COLL_IDS):  # coll_tuned has no non-blocking collectives
            try:
                rule_sets.append((case.label, rules_for(best)))
                mpi = mpi or best.host.get("mpi")
            except AutotuneError:
                pass  # not a coll_tuned collective (a non-blocking one): said per case
    if rule_sets and only is None:
        fmt, why = pick_format(mpi)
        path = out / (COMBINED if fmt != "json" else "campaign.rules.json")
        check_output_path(path, "campaign export -o")
        settings = (f"--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename "
                    f"{os.path.abspath(path)}")
        header = (f"# autotune campaign {printable(name)}: coll_tuned rules of every case measured, "
                  f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC ({fmt} format: {why})",
                  "# each communicator size measured takes its case's rules; other sizes keep "
                  "Open MPI's fixed decision",
                  f"# Open MPI reads it with: {printable(settings)}",
                  "# the cases' other settings (UCX, pml, mapping) are in their own env files")
        text = ompi_rules_campaign(rule_sets, fmt, mpi, header if fmt != "json" else ())
        write_output_atomically(path, text, "campaign export -o")
        count = len(rule_sets)
        written.append(Written(str(path), "all", f"{count} case{'s' if count != 1 else ''}"))
    return CampaignExport(directory=str(out), written=tuple(written), skipped=tuple(skipped))
