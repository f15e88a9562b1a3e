"""What this machine offers: MPI and version, its components and MCA enumerations, UCX transports
and devices, NUMA layout, and whether pml ucx would really be used. Called explicitly, never at
import; every reader tolerates a missing tool (an MPICH machine has no ompi_info)."""

from __future__ import annotations

import fnmatch
import functools
import json
import os
import platform
import re
import shutil
import socket
import subprocess
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path


@dataclass(frozen=True)
class HostInfo:
    host: str
    cpu_model: str
    cores: int  # cores this process may use (affinity), what ranks can be bound to
    mpi: str  # e.g. "Open MPI 4.1.4"
    ucx: str  # e.g. "1.13.1", "" when ucx_info is absent
    python: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class NumaLayout:
    sockets: int
    numa_nodes: int
    cores: int

    @property
    def nps(self) -> int:
        """NUMA nodes per socket: a BIOS setting the tuner reads but cannot change per trial."""
        return max(1, self.numa_nodes // max(1, self.sockets))

    @property
    def cores_per_numa(self) -> int:
        return max(1, self.cores // max(1, self.numa_nodes))


@dataclass(frozen=True)
class Capabilities:
    """Everything a search space is checked against before a study starts."""

    mpi_family: str  # "openmpi", "mpich", "intelmpi" or "unknown"
    mpi_version: str
    components: dict[str, list[str]] = field(default_factory=dict)  # framework -> components
    enumerators: dict[str, list[int]] = field(default_factory=dict)  # MCA param -> allowed values
    mca_defaults: dict[str, str] = field(default_factory=dict)
    ucx_version: str = ""
    ucx_transports: dict[str, list[str]] = field(default_factory=dict)  # transport -> devices
    ucx_features: list[str] = field(default_factory=list)  # e.g. "split-thresholds"
    numa: NumaLayout = NumaLayout(1, 1, 1)
    host: str = ""
    cvars: dict[str, str] = field(default_factory=dict)  # MPICH control variable -> its default

    @property
    def mpi(self) -> str:
        names = {"openmpi": "Open MPI", "mpich": "MPICH", "intelmpi": "Intel MPI"}
        return f"{names.get(self.mpi_family, 'unknown MPI')} {self.mpi_version}".strip()

    def has_component(self, framework: str, component: str) -> bool:
        return component in self.components.get(framework, [])

    def has_ucx_transport(self, pattern: str) -> bool:
        """`rc` matches rc_verbs, rc_mlx5; `dc` matches dc_mlx5; exact names match themselves."""
        return any(t == pattern or t.startswith(pattern + "_") for t in self.ucx_transports)

    def ucx_devices(self) -> list[str]:
        return sorted({d for devices in self.ucx_transports.values() for d in devices})

    def pml_ucx_selected_by_default(self) -> bool:
        """Open MPI 4.x only uses pml ucx when a device matches pml_ucx_devices (default mlx*)."""
        if not self.has_component("pml", "ucx"):
            return False
        patterns = self.mca_defaults.get("pml_ucx_devices", "any")
        if patterns in ("", "any"):
            return True
        devices = self.ucx_devices()
        return any(fnmatch.fnmatch(d.split(":")[0], p) for p in patterns.split(",") for d in devices)

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["numa"]["nps"] = self.numa.nps
        data["numa"]["cores_per_numa"] = self.numa.cores_per_numa
        data["pml_ucx_selected_by_default"] = self.pml_ucx_selected_by_default()
        return data


def _output(argv: list[str], timeout: float = 60) -> str:
    if not shutil.which(argv[0]):
        return ""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def mpi_version() -> str:
    text = _output(["ompi_info", "--version"])
    match = re.search(r"Open MPI v?(\d+\.\d+[\w.]*)", text)
    if match:
        return f"Open MPI {match.group(1)}"
    text = _output(["mpirun", "--version"])
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first or "unknown"


def ucx_version() -> str:
    match = re.search(r"Version\s+(\d+\.\d+[\w.]*)", _output(["ucx_info", "-v"]))
    return match.group(1) if match else ""


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def probe_host(caps: "Capabilities | None" = None) -> HostInfo:
    """This host; with capabilities already probed, their MPI/UCX versions (no second probe)."""
    mpi = caps.mpi if caps and caps.mpi_version else mpi_version()
    ucx = caps.ucx_version if caps else ucx_version()
    return HostInfo(host=socket.gethostname(), cpu_model=cpu_model(), cores=usable_cores(),
                    mpi=mpi, ucx=ucx, python=platform.python_version())


# ----------------------------------------------------------------------------- parsers


def parse_ompi_info(text: str) -> tuple[str, dict[str, list[str]], dict[str, list[int]], dict[str, str]]:
    """From `ompi_info --all --parsable`: version, components per framework, MCA enumerators and
    default values."""
    version = ""
    components: dict[str, list[str]] = {}
    enumerators: dict[str, list[int]] = {}
    defaults: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":")
        if line.startswith("ompi:version:full:") and len(parts) > 3:
            version = parts[3]
        elif line.startswith("mca:") and len(parts) >= 4 and parts[3] == "version":
            framework, component = parts[1], parts[2]
            if component not in components.setdefault(framework, []):
                components[framework].append(component)
        elif line.startswith("mca:") and len(parts) >= 6 and parts[3] == "param":
            name = parts[4]
            if parts[5] == "enumerator" and len(parts) >= 8 and parts[6] == "value":
                try:
                    enumerators.setdefault(name, []).append(int(parts[7]))
                except ValueError:
                    pass
            elif parts[5] == "value":
                defaults[name] = ":".join(parts[6:])
    return version, components, enumerators, defaults


def parse_ucx_devices(text: str) -> dict[str, list[str]]:
    """From `ucx_info -d`: transport name -> device names."""
    transports: dict[str, list[str]] = {}
    transport = None
    for line in text.splitlines():
        match = re.match(r"#\s+Transport:\s+(\S+)", line)
        if match:
            transport = match.group(1)
            transports.setdefault(transport, [])
            continue
        match = re.match(r"#\s+Device:\s+(\S+)", line)
        if match and transport and match.group(1) not in transports[transport]:
            transports[transport].append(match.group(1))
    return transports


def read_numa_layout(sys_root: str = "/sys/devices/system") -> NumaLayout:
    """Sockets from the CPUs' package ids, NUMA nodes from /sys (1 when the kernel shows none)."""
    root = Path(sys_root)
    packages = set()
    for topo in root.glob("cpu/cpu[0-9]*/topology/physical_package_id"):
        try:
            packages.add(topo.read_text().strip())
        except OSError:
            continue
    numa = len(list(root.glob("node/node[0-9]*")))
    return NumaLayout(sockets=max(1, len(packages)), numa_nodes=max(1, numa), cores=usable_cores())


def ucx_accepts(name: str, value: str) -> bool:
    """Whether this UCX parses `name=value`: `ucx_info -c` stops before a variable it rejects."""
    if not shutil.which("ucx_info"):
        return False
    try:
        out = subprocess.run(["ucx_info", "-c"], capture_output=True, text=True, timeout=30,
                             env={**os.environ, name: value}, stdin=subprocess.DEVNULL).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return any(line.startswith(f"{name}=") for line in out.splitlines())


def ucx_features() -> list[str]:
    features = []
    if ucx_accepts("UCX_RNDV_THRESH", "intra:8kb,inter:64kb"):
        features.append("split-thresholds")  # UCX_*_THRESH=intra:X,inter:Y (seeds/000)
    return features


def parse_mpivars(text: str) -> dict[str, str]:
    """From MPICH's `mpivars` (its MPI_T listing): control variable -> default value."""
    cvars = {}
    for line in text.splitlines():
        match = re.match(r"\s+(MPIR_CVAR_\w+)\s*=([^\t]*)\t", line)
        if match:
            cvars[match.group(1)] = match.group(2).strip()
    return cvars


@functools.lru_cache(maxsize=None)
def mpich_accepts(name: str, value: str) -> bool:
    """Whether this MPICH starts with `name=value`: it parses its control variables in MPI_Init
    and aborts on a value it does not know ("Invalid MPIR_CVAR_... value"); `mpivars` is one
    such start, a singleton that takes 50 ms."""
    if not shutil.which("mpivars"):
        return False
    try:
        proc = subprocess.run(["mpivars"], capture_output=True, text=True, timeout=30,
                              env={**os.environ, name: value}, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0 and f"Invalid {name} value" not in proc.stderr + proc.stdout


def installed_families() -> list[str]:
    """The MPI families this machine has (Debian installs MPICH beside Open MPI: `mpirun` and
    `mpiexec` stay Open MPI's, MPICH's are `mpiexec.mpich`, `mpichversion`, `mpivars`)."""
    found = []
    if shutil.which("ompi_info"):
        found.append("openmpi")
    if shutil.which("mpichversion") or "HYDRA" in _output(["mpiexec", "--version"]):
        found.append("mpich")
    return found


def _mpich_capabilities() -> tuple[str, str, dict[str, str]]:
    banner = _output(["mpichversion"]) or _output(["mpiexec", "--version"])
    if "Intel(R) MPI" in banner:
        match = re.search(r"Version (\S+)", banner)
        return "intelmpi", match.group(1) if match else "", {}
    if "HYDRA" in banner or "MPICH" in banner:
        match = re.search(r"(?:MPICH )?Version:\s+(\S+)", banner)
        return "mpich", match.group(1) if match else "", parse_mpivars(_output(["mpivars"]))
    return "unknown", "", {}


def probe_capabilities(family: str | None = None) -> Capabilities:
    """What this machine offers: Open MPI where ompi_info is found, else MPICH (or another
    Hydra MPI); `family` "mpich" probes MPICH where both are installed (a space for MPICH)."""
    text = "" if family == "mpich" else _output(["ompi_info", "--all", "--parsable"])
    cvars: dict[str, str] = {}
    if text:
        version, components, enumerators, defaults = parse_ompi_info(text)
        found = "openmpi"
    else:
        components, enumerators, defaults = {}, {}, {}
        found, version, cvars = _mpich_capabilities()
    return Capabilities(mpi_family=found, mpi_version=version, components=components,
                        enumerators=enumerators, mca_defaults=defaults, ucx_version=ucx_version(),
                        ucx_transports=parse_ucx_devices(_output(["ucx_info", "-d"])),
                        ucx_features=ucx_features(),
                        numa=read_numa_layout(), host=socket.gethostname(), cvars=cvars)


# ----------------------------------------------------------------------------- on a compute node

NODE_PROBE_MARK = "AUTOTUNE-NODE-PROBE "


def capabilities_from_dict(data: dict) -> Capabilities:
    """The inverse of Capabilities.to_dict (derived fields dropped)."""
    numa = NumaLayout(**{f.name: int(data["numa"][f.name]) for f in fields(NumaLayout)})
    return Capabilities(**{f.name: data[f.name] for f in fields(Capabilities) if f.name != "numa"},
                        numa=numa)


def parse_node_probe(stdout: str) -> tuple[Capabilities, HostInfo]:
    """What `python -m autotune.probe` printed on a node; ValueError when it is not there."""
    for line in stdout.splitlines():
        if line.startswith(NODE_PROBE_MARK):
            try:
                data = json.loads(line[len(NODE_PROBE_MARK):])
                return (capabilities_from_dict(data["capabilities"]),
                        HostInfo(**{f.name: data["host"][f.name] for f in fields(HostInfo)}))
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"unreadable node probe: {type(exc).__name__}: {exc}") from None
    raise ValueError("the node probe printed no result")


def main(argv: list[str] | None = None) -> None:
    """Run on a compute node (under mpirun, mpiexec or srun, unbound) by the launchers of other
    hosts; `--family mpich` probes MPICH where both MPIs are installed."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m autotune.probe")
    parser.add_argument("--family", choices=("openmpi", "mpich"), default=None)
    caps = probe_capabilities(parser.parse_args(argv).family)
    print(NODE_PROBE_MARK + json.dumps({"capabilities": caps.to_dict(),
                                        "host": probe_host(caps).to_dict()}), flush=True)


if __name__ == "__main__":
    main()
