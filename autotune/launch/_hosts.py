"""Host lists: Open MPI hostfiles and Slurm's compressed node lists (node[01-04,07])."""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import subprocess
from pathlib import Path

from ..errors import InputError

HOST_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,252}")


def check_host(name: str, origin: str) -> str:
    if not HOST_RE.fullmatch(name):
        raise InputError(f"{origin}: {name!r} is not a valid host name")
    return name


def read_hostfile(path: str | Path) -> list[str]:
    """Host names of a hostfile, in order, once each: Open MPI's form (`host [slots=N] ...`) or
    Hydra's (`host[:N]`), # comments."""
    from ..files import HOSTFILE_MAX_BYTES, read_text_input

    text = read_text_input(path, "hostfile", HOSTFILE_MAX_BYTES)
    hosts: list[str] = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            first = line.split()[0]
            name, _, count = first.partition(":")  # Hydra's host:N
            if count and not count.isdigit():
                raise InputError(f"{path}: {first!r} is not host or host:N")
            host = check_host(name, str(path))
            if host not in hosts:
                hosts.append(host)
    if not hosts:
        raise InputError(f"hostfile {path} lists no host")
    return hosts


def expand_nodelist(nodelist: str) -> list[str]:
    """Slurm's compressed form: `a[01-03,07],b5` -> a01 a02 a03 a07 b5 (zero padding kept), each
    host once (a host listed twice would end up in two "disjoint" node groups)."""
    hosts: list[str] = []
    for item in re.findall(r"[^,\[]+(?:\[[^\]]*\])?[^,]*", nodelist.strip()):
        if item.count("[") > 1:
            raise InputError(f"SLURM_JOB_NODELIST: {item!r} has several bracket ranges; install "
                             "scontrol (it expands every form Slurm writes)")
        match = re.fullmatch(r"([^\[]*)\[([^\]]+)\](.*)", item)
        if not match:
            hosts.append(check_host(item, "SLURM_JOB_NODELIST"))
            continue
        prefix, ranges, suffix = match.groups()
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            if not lo.isdigit() or (hi and not hi.isdigit()) or int(hi or lo) < int(lo):
                raise InputError(f"SLURM_JOB_NODELIST: cannot read {part!r} in {item!r}")
            for number in range(int(lo), int(hi or lo) + 1):
                hosts.append(check_host(f"{prefix}{str(number).zfill(len(lo))}{suffix}",
                                        "SLURM_JOB_NODELIST"))
    return list(dict.fromkeys(hosts))


def slurm_hosts(nodelist: str) -> list[str]:
    """The allocation's hosts: `scontrol show hostnames` when present, else our own expansion."""
    if shutil.which("scontrol"):
        try:
            out = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True,
                                 text=True, timeout=30, check=True).stdout
            return list(dict.fromkeys(check_host(h, "scontrol") for h in out.split()))
        except (OSError, subprocess.SubprocessError):
            pass
    return expand_nodelist(nodelist)


def slurm_end_time() -> float | None:
    """The Slurm job's end (unix time): SLURM_JOB_END_TIME, else squeue; None outside Slurm."""
    value = os.environ.get("SLURM_JOB_END_TIME")
    if value and value.isdigit():
        return float(value)
    job = os.environ.get("SLURM_JOB_ID")
    if not job or not shutil.which("squeue"):
        return None
    try:
        out = subprocess.run(["squeue", "-h", "-j", job, "-o", "%e"], capture_output=True,
                             text=True, timeout=20).stdout.strip()
        return dt.datetime.fromisoformat(out).timestamp()
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
