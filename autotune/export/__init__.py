"""Hand the best configuration back, in the format a user picks by name (EXPORTERS):

- ``env``: a file to `source` before mpirun (env vars, OMPI_MCA_*, mpirun options in a variable);
- ``json``: one JSON document with params, settings, speedup and its confirmed interval;
- ``mca-params``: an Open MPI mca-params.conf with the MCA settings;
- ``ompi-rules``: an Open MPI coll_tuned dynamic rules file (classic, rule-file-version-2 or JSON,
  by the probed version), the algorithm of each message-size band at the measured size;
- ``mpich-json``: an MPICH collective selection file (MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE);
- ``ucc-tune``: a file to `source` that sets UCC_TL_UCP_TUNE where the best configuration uses UCC.

Every exporter takes a BestConfig and returns text; settings read from storage are checked
against the search-space allow-lists first (check_exportable). The rule formats also take
ExportOptions (where the file goes, a format override): call them through export_text.
"""

from collections.abc import Callable
from dataclasses import dataclass

from ._best import (BestConfig, best_config, check_exportable, describe_sizes, header_lines,
                    printable, withhold)
from ._env import MPIRUN_ARGS_VAR, env_file
from ._json import json_file
from ._mca_params import mca_params_file
from ._mpich_json import mpich_json_file
from ._ompi_rules import (COLL_IDS, RULES_FORMATS, deployment_with_rules, ompi_rules_campaign,
                          ompi_rules_file, ompi_rules_text, ompi_version, pick_format, rules_for)
from ._options import ExportOptions
from ._ucc_tune import TUNE_VAR, ucc_tune_file

Exporter = Callable[..., str]  # (best[, options=ExportOptions]) -> the file's text


@dataclass(frozen=True)
class ExportFormat:
    """One format a user picks by name: how it is written, the file suffix a campaign gives
    it, and whether it takes ExportOptions (the rule formats)."""

    name: str
    write: Exporter
    suffix: str
    summary: str  # what the file is, for --format's help
    takes_options: bool = False


# The registry: a new format is one module and one entry here (the CLI's choices and the
# campaign's file names come from it).
EXPORTERS: dict[str, ExportFormat] = {f.name: f for f in (
    ExportFormat("env", env_file, ".env", "a file to `source` before mpirun"),
    ExportFormat("json", json_file, ".json", "everything in one document, for tools"),
    ExportFormat("mca-params", mca_params_file, ".mca-params.conf",
                 "an Open MPI mca-params.conf"),
    ExportFormat("ompi-rules", ompi_rules_file, ".rules", "Open MPI coll_tuned dynamic rules",
                 takes_options=True),
    ExportFormat("mpich-json", mpich_json_file, ".mpich.json", "MPICH collective selection",
                 takes_options=True),
    ExportFormat("ucc-tune", ucc_tune_file, ".ucc-tune.env", "UCC_TL_UCP_TUNE",
                 takes_options=True),
)}
JSON_SCHEMA = "json-export.schema.json"  # package data: the JSON Schema of --format json


def format_help() -> str:
    """Every format with what it is, for --format's help."""
    return "; ".join(f"{f.name}: {f.summary}" for f in EXPORTERS.values())


def json_schema() -> dict:
    """The JSON Schema that every `--format json` document satisfies (tools can validate)."""
    import json
    from importlib.resources import files

    return json.loads(files(__name__).joinpath(JSON_SCHEMA).read_text("utf-8"))


def export_text(fmt: str, best: BestConfig, options: ExportOptions | None = None) -> str:
    """The file of format `fmt`; options reach the formats that use them."""
    export = EXPORTERS[fmt]
    if export.takes_options:
        return export.write(best, options=options or ExportOptions())
    return export.write(best)


def reader_hint(fmt: str, best: BestConfig, path: str) -> str | None:
    """One line for the rule formats: what makes the MPI library read the file just written to
    `path` (a JSON rules file has no room for it; the others say it in their header)."""
    from . import _mpich_json, _ompi_rules

    if fmt == "ompi-rules":
        settings = _ompi_rules.reader_settings(path)
        return "Open MPI reads it with " + " ".join(f"--mca {k} {v}" for k, v in settings.items())
    if fmt == "mpich-json" and best.config is not None:
        settings = _mpich_json.reader_settings(path, best.config.collective)
        return "MPICH reads it with " + " ".join(f"{k}={v}" for k, v in settings.items()) + (
            "; it replaces MPICH's whole selection (--mpich-base merges it into MPICH's own)")
    return None


__all__ = ["BestConfig", "COLL_IDS", "EXPORTERS", "ExportFormat", "ExportOptions", "Exporter",
           "JSON_SCHEMA", "MPIRUN_ARGS_VAR", "RULES_FORMATS", "TUNE_VAR", "best_config",
           "check_exportable", "deployment_with_rules", "describe_sizes", "env_file",
           "export_text", "format_help", "header_lines",
           "json_file", "json_schema", "mca_params_file", "mpich_json_file",
           "ompi_rules_campaign", "ompi_rules_file", "ompi_rules_text", "ompi_version",
           "pick_format", "printable", "reader_hint", "rules_for", "ucc_tune_file", "withhold"]
