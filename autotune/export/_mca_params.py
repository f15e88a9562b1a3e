"""An Open MPI `mca-params.conf`: the MCA settings of the best configuration as `name = value`
lines, for $HOME/.openmpi/mca-params.conf, <prefix>/etc/openmpi-mca-params.conf or a file named
by OMPI_MCA_mca_param_files. Env vars and mpirun options cannot be expressed there: they are
listed as comments (use the env exporter for them)."""

from __future__ import annotations

import datetime as dt
import shlex

from ._best import BestConfig, check_exportable, header_lines, withhold


def mca_params_file(best: BestConfig, now: dt.datetime | None = None) -> str:
    check_exportable(best)
    now = now or dt.datetime.now(dt.UTC)
    lines = header_lines(best, now)
    lines.append("# Open MPI mca-params.conf: copy to $HOME/.openmpi/mca-params.conf or point "
                 "OMPI_MCA_mca_param_files at it.")
    if best.env or best.mpirun_args:
        lines.append("# Not expressible in this file (environment variables and mpirun options); "
                     "set them yourself, or use `autotune export --format env`:")
        for name, value in sorted(best.env.items()):
            lines.append(f"#   export {name}={shlex.quote(value)}")
        if best.mpirun_args:
            lines.append(f"#   mpirun {' '.join(best.mpirun_args)} ...")
    if not best.mca:
        lines.append("# This configuration sets no MCA parameter.")
    for name, value in sorted(best.mca.items()):
        lines.append(f"{name} = {value}")
    return "\n".join(withhold(best, lines)) + "\n"
