"""Bounded file input and safe file output: every user-named file goes through here.

Inputs: regular files only (a FIFO, a device such as /dev/zero, a directory is refused without
blocking: the file is opened with O_NONBLOCK and checked with fstat before any read), a size cap
checked both with fstat and by reading at most cap+1 bytes (a /proc file reports size 0, a file
may grow while read), UTF-8 text without NUL, and YAML nested at most MAX_YAML_DEPTH levels, checked
on the event stream before any object is built (PyYAML's scanner is quadratic in the flow nesting
depth, so 200 KB of `[` would take minutes and then hit the recursion limit).

Caps (bytes): weights and hostfiles 1 MiB (a profile has a few hundred sizes, a hostfile a few
thousand hosts), a search space 256 KiB (space/_load.MAX_SPACE_BYTES), a warm-start file 1 MiB, a
CSV grid 256 MiB (a recorded campaign: millions of rows), a Parquet grid 1 GiB (size checked only).

Outputs: written to a temporary file in the same directory, fsynced, then renamed onto the final
path, so a reader never sees half a file and an interrupted write leaves the old file whole. The
final path is refused when it is a symlink (not followed: `export -o` must not overwrite whatever
a link points at) or exists and is not a regular file (a FIFO would block, a device is no file).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import yaml

from .errors import InputError


def autotune_home() -> Path:
    """Where autotune keeps its own files (the default storage, daemon logs, IMB size lists):
    $AUTOTUNE_HOME, else ~/.autotune."""
    return Path(os.environ.get("AUTOTUNE_HOME") or Path.home() / ".autotune").expanduser()


KiB = 1024
MiB = 1024 * KiB
WEIGHTS_MAX_BYTES = 1 * MiB
HOSTFILE_MAX_BYTES = 1 * MiB
WARMSTART_MAX_BYTES = 1 * MiB
GRID_CSV_MAX_BYTES = 256 * MiB
GRID_PARQUET_MAX_BYTES = 1024 * MiB
MAX_YAML_DEPTH = 32


def _size(n: int) -> str:
    return f"{n // MiB} MiB" if n >= MiB and n % MiB == 0 else f"{n // KiB} KiB"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _not_regular(what: str, path: str | Path, mode: int) -> InputError:
    kind = _kind(mode)
    suffix = "" if kind == "not a regular file" else f" ({kind})"
    return InputError(f"{what} {path}: not a regular file{suffix}")


def check_input_file(path: str | Path, what: str, max_bytes: int,
                     error: type[InputError] = InputError) -> Path:
    """A regular file no larger than max_bytes (for readers that open the file themselves, such as
    pyarrow); stat follows a symlink, as reading would."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise error(str(_not_regular(what, path, info.st_mode)))
    if info.st_size > max_bytes:
        raise error(f"{what} {path}: larger than {_size(max_bytes)}")
    return Path(path)


def read_bytes_input(path: str | Path, what: str, max_bytes: int,
                     error: type[InputError] = InputError) -> bytes:
    """The bytes of a regular file of at most max_bytes; anything else is one `error` line."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(str(_not_regular(what, path, info.st_mode)))
        if info.st_size > max_bytes:
            raise error(f"{what} {path}: larger than {_size(max_bytes)}")
        chunks: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, MiB))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:
            raise error(f"{what} {path}: larger than {_size(max_bytes)}")
        return b"".join(chunks)
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def decode_text(data: bytes, what: str, path: str | Path,
                error: type[InputError] = InputError) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{what} {path}: not UTF-8 text (byte {exc.start})") from None
    if "\x00" in text:
        raise error(f"{what} {path}: contains a NUL byte")
    return text


def read_text_input(path: str | Path, what: str, max_bytes: int,
                    error: type[InputError] = InputError) -> str:
    """UTF-8 text of a regular file of at most max_bytes, e.g.
    `read_text_input(p, "weights file", WEIGHTS_MAX_BYTES)`; errors read
    "weights file /dev/zero: not a regular file (a device)"."""
    return decode_text(read_bytes_input(path, what, max_bytes, error), what, path, error)


def check_yaml_depth(text: str, origin: str, max_depth: int = MAX_YAML_DEPTH,
                     error: type[InputError] = InputError,
                     loader: type[Any] = yaml.SafeLoader) -> None:
    """Refuse YAML nested deeper than max_depth, reading events only up to the offending one (the
    scan stops there, so its cost stays bounded by the depth allowed). YAML syntax errors are left
    to the caller's own load, which reports them in its words."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                depth += 1
                if depth > max_depth:
                    line = event.start_mark.line + 1 if event.start_mark else 0
                    raise error(f"{origin} (line {line}): nested deeper than {max_depth} levels")
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
    except yaml.YAMLError:
        return


def check_output_path(path: str | Path, what: str = "") -> None:
    """Refuse a final path that is a symlink or exists and is not a regular file."""
    label = f"{what} {path}" if what else str(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(f"cannot write {label}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(info.st_mode):
        raise InputError(f"{label}: is a symlink; not followed")
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"{label}: not a regular file ({_kind(info.st_mode)}); not written")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_output_atomically(path: str | Path, data: str | bytes, what: str = "") -> None:
    """Write text or bytes to path through a temporary file in the same directory, fsync, rename.

    The rename replaces a symlink created after the check rather than following it, so the
    target of a link is never written. An existing file keeps its permission bits; a new one
    gets the usual 0666 & ~umask (mkstemp alone would give 0600)."""
    check_output_path(path, what)
    label = f"{what} {path}" if what else str(path)
    final = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        mode = stat.S_IMODE(os.stat(final).st_mode)
    except OSError:
        mode = 0o666 & ~_umask()
    directory = final.parent if str(final.parent) else Path(".")
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{final.name}.", suffix=".tmp")
        try:
            view = memoryview(payload)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, final)
        tmp = None
        try:
            dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError:
            pass  # the rename happened; a directory that cannot be fsynced is no error
    except OSError as exc:
        raise InputError(f"cannot write {label}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
