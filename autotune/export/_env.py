"""An env file a user can `source` before running mpirun: env vars, MCA parameters as OMPI_MCA_*,
and the mpirun options in one variable to splice into the mpirun command line."""

from __future__ import annotations

import datetime as dt
import shlex

from ._best import BestConfig, check_exportable, header_lines, withhold

MPIRUN_ARGS_VAR = "AUTOTUNE_MPIRUN_ARGS"


def env_file(best: BestConfig, now: dt.datetime | None = None) -> str:
    check_exportable(best)
    now = now or dt.datetime.now(dt.UTC)
    lines = header_lines(best, now)
    for name, value in sorted(best.env.items()):
        lines.append(f"export {name}={shlex.quote(value)}")
    for name, value in sorted(best.mca.items()):
        lines.append(f"export OMPI_MCA_{name}={shlex.quote(value)}")
    if best.env:
        forward = " ".join(f"-x {name}" for name in sorted(best.env))
        lines.append(f"# across nodes, mpirun forwards these only when asked: mpirun {forward} ...")
    if best.mpirun_args:
        lines.append(f"# mpirun options that no environment variable carries: "
                     f"mpirun ${MPIRUN_ARGS_VAR} ...")
        lines.append(f"export {MPIRUN_ARGS_VAR}={shlex.quote(' '.join(best.mpirun_args))}")
    return "\n".join(withhold(best, lines)) + "\n"
