"""Building the project's C code with the running MPI's compiler wrapper, into a cache shared by
the processes of a node (and by nodes sharing a home): the kernel's C loops (`_c_loops`) and the
C benchmark (`_cbench`). A build lands under a temporary name and is renamed into place, so
ranks, parallel trials and nodes can build at once. No mpi4py here: the controller builds the C
benchmark without starting MPI."""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
from pathlib import Path

BUILD_TIMEOUT_S = 120


class BuildFailed(Exception):
    """Why the C code cannot be built here (one line, for a launch record or an error)."""


def wrappers(library: str = "") -> list[str]:
    """The compiler wrappers to try, the running library's family first (`AUTOTUNE_MPICC`
    overrides): mpicc.openmpi or mpicc.mpich where both families are installed, else mpicc."""
    forced = os.environ.get("AUTOTUNE_MPICC", "").strip()
    if forced:
        return [forced]
    if "Open MPI" in library:
        names: tuple[str, ...] = ("mpicc.openmpi", "mpicc")
    elif "MPICH" in library:
        names = ("mpicc.mpich", "mpicc")
    else:
        names = ("mpicc",)
    return [path for name in names if (path := shutil.which(name))]


def cache_dir() -> Path:
    """AUTOTUNE_KERNEL_CACHE, else $XDG_CACHE_HOME/autotune/kernel (~/.cache/...)."""
    forced = os.environ.get("AUTOTUNE_KERNEL_CACHE", "").strip()
    if forced:
        return Path(forced)
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "autotune" / "kernel"


def wrapper_identity(wrapper: str) -> str:
    """What the wrapper compiles against (its `-show`/`-showme` line), so that a build for one
    MPI is never taken for another's: the wrapper's own path alone can point elsewhere later."""
    for flag in ("-showme", "-show"):
        try:
            proc = subprocess.run([wrapper, flag], capture_output=True, text=True, timeout=30,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.returncode == 0 and proc.stdout.strip():
            return proc.stdout.strip()
    return os.path.realpath(wrapper)


def build(source: Path, stem: str, flags: tuple[str, ...], wrappers_to_try: list[str],
          key_extra: str = "", ask_wrapper: bool = True) -> Path:
    """`source` built by the first wrapper that can into the cache as `stem-<key>` (`flags`
    decide what: a shared object or a program), or BuildFailed naming why. The key holds what
    the wrapper compiles against (`ask_wrapper`: its -showme line; else its path alone, for a
    caller inside an MPI process, where a fork on every launch is best avoided, whose
    `key_extra` names the library)."""
    if not wrappers_to_try:
        raise BuildFailed("no MPI compiler wrapper (mpicc) on PATH")
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BuildFailed(f"cannot create {directory}: {exc.strerror}") from None
    text = source.read_bytes()
    failure = ""
    for wrapper in wrappers_to_try:
        ident = wrapper_identity(wrapper) if ask_wrapper else wrapper
        key = hashlib.sha256(text + key_extra.encode() + ident.encode()
                             + " ".join(flags).encode()).hexdigest()[:16]
        suffix = ".so" if "-shared" in flags else ""
        target = directory / f"{stem}-{key}{suffix}"
        if target.exists():
            return target
        partial = directory / f".{target.name}.{socket.gethostname()}.{os.getpid()}"
        try:
            proc = subprocess.run([wrapper, *flags, "-o", str(partial), str(source)],
                                  capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            failure = f"{wrapper}: {exc}"
            continue
        if proc.returncode == 0:
            os.replace(partial, target)
            return target
        partial.unlink(missing_ok=True)
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        failure = f"{wrapper} failed: {lines[-1] if lines else f'exit {proc.returncode}'}"
    raise BuildFailed(failure[:300])
