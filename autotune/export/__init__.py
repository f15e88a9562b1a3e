"""Hand the best configuration back, in the format a user picks by name (EXPORTERS):

- ``env``: a file to `source` before mpirun (env vars, OMPI_MCA_*, mpirun options in a variable);
- ``json``: one JSON document with params, settings, speedup and its confirmed interval;
- ``mca-params``: an Open MPI mca-params.conf with the MCA settings.

Every exporter takes a BestConfig and returns text; settings read from storage are checked
against the search-space allow-lists first (check_exportable).
"""

from collections.abc import Callable

from ._best import (BestConfig, best_config, check_exportable, describe_sizes, header_lines,
                    printable, withhold)
from ._env import MPIRUN_ARGS_VAR, env_file
from ._json import json_file
from ._mca_params import mca_params_file

Exporter = Callable[[BestConfig], str]

EXPORTERS: dict[str, Exporter] = {
    "env": env_file,
    "json": json_file,
    "mca-params": mca_params_file,
}

__all__ = ["EXPORTERS", "MPIRUN_ARGS_VAR", "BestConfig", "Exporter", "best_config",
           "check_exportable", "describe_sizes", "env_file", "header_lines", "json_file",
           "mca_params_file", "printable", "withhold"]
