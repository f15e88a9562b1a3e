"""What a search space may set: allow-lists of variable and MCA parameter names, a deny-list no
space can override (anything that loads code, runs a command, writes a file or redirects the
launch), and the mpirun options a space may use, each with the pattern of its value."""

from __future__ import annotations

import re
from typing import Any

from ..errors import SpaceError
from ._model import APPLY_KINDS

ENV_NAME_RE = re.compile(r"^[A-Z][A-Z0-9_]{0,127}$")
MCA_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,127}$")
PARAM_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,127}$")

# Allow-lists: a space may only set variables of MPI stacks and MCA parameters of the frameworks
# that shape collectives and transports...
ENV_PREFIXES = ("UCX_", "MPICH_", "MPIR_CVAR_", "FI_", "I_MPI_", "HCOLL_", "UCC_", "PSM2_")
MCA_PREFIXES = ("coll_", "btl_", "pml_", "mtl_", "osc_", "mpi_")
MCA_FRAMEWORKS = ("coll", "btl", "pml", "mtl", "osc")  # component selection: `--mca pml ucx`
# ...and never one that loads code, runs a command, writes a file or redirects the launch.
DENIED_ENV = re.compile(
    r"(FILE|PATH|DIR|DEST|LIB|PRELOAD|COMMAND|CMD|EXEC|LOG|STATS|DEBUG|TRACE|MAIL|GDB|MODULE|"
    r"HANDLE_ERRORS|PROFILE|HYDRA|PMI|BOOTSTRAP|LAUNCH|TMP|OUTPUT|ENV_DISPLAY|GTOOL|TUNING|DUMP|"
    r"BIN|SCRIPT|HOOK|PLUGIN|PROVIDER)")
DENIED_MCA = re.compile(
    r"(file|path|dir|prefix|agent|exec|cmd|command|xterm|debug|tmp|output|log|verbose|report|uri|"
    r"server|launch|wrapper|base_param|stats|dump)")
# mpirun options a space may use, each with its value pattern (None: a flag without value).
MPIRUN_OPTIONS: dict[str, re.Pattern | None] = {
    "--map-by": re.compile(r"^[A-Za-z0-9_:,=.]+$"),
    "--rank-by": re.compile(r"^[A-Za-z0-9_:,=.]+$"),
    "--bind-to": re.compile(r"^[A-Za-z0-9_:,=.]+$"),
    "--core-spec": re.compile(r"^[0-9]{1,3}$"),  # srun
    "--distribution": re.compile(r"^[A-Za-z0-9_:,]+$"),  # srun
    "--cpu-bind": re.compile(r"^[A-Za-z0-9_:,=]+$"),  # srun
    "--hint": re.compile(r"^[A-Za-z0-9_]+$"),  # srun
    "--report-bindings": None,
}


def check_name(apply: str, name: Any, where: str) -> str:
    if not isinstance(name, str):
        raise SpaceError(f"{where}: name: must be a string")
    if apply == "env":
        if not ENV_NAME_RE.fullmatch(name):
            raise SpaceError(f"{where}: {name!r} is not a valid environment variable name")
        if not name.startswith(ENV_PREFIXES) or DENIED_ENV.search(name[name.index("_"):]):
            raise SpaceError(f"{where}: {name} may not be set by a search space (allowed: "
                             f"{', '.join(p + '*' for p in ENV_PREFIXES)} without file, path, log, "
                             "debug or command variables)")
    elif apply == "mca":
        if not MCA_NAME_RE.fullmatch(name):
            raise SpaceError(f"{where}: {name!r} is not a valid MCA parameter name")
        if not (name.startswith(MCA_PREFIXES) or name in MCA_FRAMEWORKS) or DENIED_MCA.search(name):
            raise SpaceError(f"{where}: {name} may not be set by a search space (allowed: "
                             f"{', '.join(p + '*' for p in MCA_PREFIXES)} without file, path, "
                             "agent, debug or output parameters)")
    elif apply in ("mpirun", "template", "context"):
        if not PARAM_NAME_RE.fullmatch(name):
            raise SpaceError(f"{where}: {name!r} is not a valid parameter name")
    else:
        raise SpaceError(f"{where}: apply: must be one of {', '.join(APPLY_KINDS)}, not {apply!r}")
    return name


def check_args(args: Any, where: str) -> tuple[str, ...]:
    """mpirun arguments: allow-listed options, each with a value of its own pattern. A bare word
    would become the program mpirun runs, so none is accepted."""
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise SpaceError(f"{where}: mpirun args must be a list of strings")
    i = 0
    while i < len(args):
        option, has_value, value = args[i].partition("=")
        if option not in MPIRUN_OPTIONS:
            raise SpaceError(f"{where}: mpirun argument {args[i]!r} is not allowed (allowed: "
                             f"{', '.join(MPIRUN_OPTIONS)})")
        pattern = MPIRUN_OPTIONS[option]
        if pattern is None:
            if has_value:
                raise SpaceError(f"{where}: {option} takes no value")
            i += 1
            continue
        if not has_value:
            if i + 1 >= len(args):
                raise SpaceError(f"{where}: {option} needs a value")
            value = args[i + 1]
            i += 1
        if not pattern.fullmatch(value) or value.startswith("-"):
            raise SpaceError(f"{where}: value {value!r} of {option} has unsafe characters")
        i += 1
    return tuple(args)
