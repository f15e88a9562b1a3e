"""Launch over a list of hosts (a hostfile or a Slurm allocation): the first `--nodes` of them,
`--ppn` ranks each, placed node by node. Two launch methods:

- mpirun: `mpirun --host h1:ppn,h2:ppn`, site settings (remote agent, interfaces) as --mca;
- srun (Slurm only): `srun --nodelist h1,h2 --ntasks-per-node ppn --mpi=pmix`, MCA parameters as
  OMPI_MCA_* variables (srun exports the environment), mapping options translated.

MPICH runs under its own Hydra mpiexec instead of mpirun: `mpiexec -n N -ppn P -hosts h1,h2`,
variables as -genv. Hydra is told how to reach the hosts the way a site tells it, by its own
environment variables (HYDRA_LAUNCHER_EXEC, HYDRA_IFACE, ...), not by MCA parameters; inside a
Slurm job Hydra starts its proxies with srun by itself.

Building argv needs neither program on PATH here (the bare name is used then): the session
checks the tool up front and the executor reports a missing program as an infrastructure failure.
"""

from __future__ import annotations

import shutil

from ..errors import EnvironmentProblem, InputError
from ._base import Command, LaunchSpec
from ._local import hydra_argv, launch_program, mpich_env, mpirun_base_args, spec_args

METHODS = ("mpirun", "srun")

# mpirun mapping/binding options -> srun's; srun's own options pass through.
SRUN_EQUIVALENTS = {
    ("--bind-to", "core"): "--cpu-bind=cores",
    ("--bind-to", "socket"): "--cpu-bind=sockets",
    ("--bind-to", "none"): "--cpu-bind=none",
    ("--map-by", "core"): "--distribution=block:block",
    ("--map-by", "socket"): "--distribution=block:cyclic",
    ("--map-by", "numa"): "--distribution=block:cyclic",
}
SRUN_NATIVE = ("--distribution", "--cpu-bind", "--hint", "--core-spec")


def srun_mapping_args(mpirun_args: tuple[str, ...]) -> list[str]:
    """Translate a configuration's (option, value) pairs for srun, or say which one cannot be
    (an InputError: that configuration cannot run this way, so its trial fails as `config`)."""
    out, i = [], 0
    while i < len(mpirun_args):
        option = mpirun_args[i]
        if "=" in option:
            option, value = option.split("=", 1)
            i += 1
        elif i + 1 < len(mpirun_args) and not mpirun_args[i + 1].startswith("-"):
            value = mpirun_args[i + 1]
            i += 2
        else:
            raise InputError(f"mpirun option {option} has no srun equivalent; "
                             "use --launch-with mpirun")
        if option in SRUN_NATIVE:
            out.append(f"{option}={value}")
        elif (option, value) in SRUN_EQUIVALENTS:
            out.append(SRUN_EQUIVALENTS[(option, value)])
        else:
            raise InputError(f"mpirun option {option} {value} has no srun equivalent; "
                             "use --launch-with mpirun")
    return out


class HostListLauncher:
    def __init__(self, name: str, hosts: list[str] | tuple[str, ...],
                 site_mca: tuple[tuple[str, str], ...] = (), mpirun: str | None = None,
                 method: str = "mpirun", srun: str | None = None, family: str = "openmpi"
                 ) -> None:
        if method not in METHODS:
            raise EnvironmentProblem(f"unknown launch method {method!r} (use {' or '.join(METHODS)})")
        self.family = "mpich" if family == "mpich" else "openmpi"
        if self.family == "mpich" and method == "srun":
            raise InputError("--launch-with srun runs Open MPI (srun --mpi=pmix); MPICH "
                                     "runs under its mpiexec, which uses srun inside the job itself")
        if self.family == "mpich" and site_mca:
            raise InputError("--launcher-mca sets Open MPI's MCA parameters; MPICH's "
                                     "mpiexec takes its site settings from its own environment "
                                     "variables (HYDRA_LAUNCHER_EXEC, HYDRA_IFACE, ...)")
        self.name = name
        self._hosts = tuple(hosts)
        self.site_mca = site_mca
        self.method = method
        tool = launch_program(self.family)
        self.mpirun = mpirun or shutil.which(tool) or tool
        self.srun = srun or shutil.which("srun") or "srun"

    def hosts(self) -> tuple[str, ...]:
        return self._hosts

    def on_hosts(self, hosts: tuple[str, ...]) -> "HostListLauncher":
        return HostListLauncher(self.name, hosts, self.site_mca, self.mpirun, self.method, self.srun,
                                family=self.family)

    def command(self, spec: LaunchSpec) -> Command:
        if spec.nodes > len(self._hosts):
            raise EnvironmentProblem(f"--nodes {spec.nodes} but the {self.name} launcher has "
                                     f"{len(self._hosts)} host(s): {', '.join(self._hosts)}")
        hosts = self._hosts[:spec.nodes]
        if self.method == "srun":
            return self._srun_command(spec, hosts)
        if self.family == "mpich":
            return Command(argv=tuple(hydra_argv(self.mpirun, spec, hosts)), env=mpich_env(),
                           hosts=hosts)
        argv = [self.mpirun, *mpirun_base_args(), "-np", str(spec.ranks),
                "--host", ",".join(f"{h}:{spec.ppn}" for h in hosts)]
        for name, value in self.site_mca:
            argv += ["--mca", name, value]
        argv += [*spec_args(spec), *spec.program]
        return Command(argv=tuple(argv), hosts=hosts)

    def _srun_command(self, spec: LaunchSpec, hosts: tuple[str, ...]) -> Command:
        argv = [self.srun, f"--nodes={spec.nodes}", f"--ntasks={spec.ranks}",
                f"--ntasks-per-node={spec.ppn}", f"--nodelist={','.join(hosts)}", "--mpi=pmix",
                "--kill-on-bad-exit=1", "--export=ALL"]
        if spec.oversubscribe:
            argv.append("--overcommit")
        argv += [*srun_mapping_args(spec.mpirun_args), *spec.program]
        env = [(f"OMPI_MCA_{name}", value) for name, value in (*self.site_mca, *spec.mca)]
        env += list(spec.env)
        return Command(argv=tuple(argv), env=tuple(env), hosts=hosts)
