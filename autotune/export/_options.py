"""What some export formats need beyond the configuration itself."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExportOptions:
    """A rules file is named by path in the settings that make the MPI library read it, so the
    exporter is told where it will live; the rest are per-format choices the user may override."""

    path: str | None = None  # absolute path of the written file (None: standard output)
    rules_format: str | None = None  # ompi-rules: classic | v2 | json (None: from the version)
    mpich_base: str | None = None  # mpich-json: MPICH's own selection file to merge into
