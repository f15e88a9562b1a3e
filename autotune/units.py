"""Message sizes: parse `4kb`/`1m`/`8` style values and ranges, format them for humans."""

from __future__ import annotations

import re

from .errors import InputError

_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2,
          "mib": 1024**2, "g": 1024**3, "gb": 1024**3, "gib": 1024**3}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")
MAX_SIZE = 1 << 30  # 1 GiB (msglog 30, the largest size in seeds/000); counts stay below INT_MAX


def parse_size(text: str | int) -> int:
    """Parse a byte count such as `8`, `4k`, `64kb`, `1m` (binary multiples)."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        match = _SIZE_RE.match(str(text))
        if not match or match.group(2).lower() not in _UNITS:
            raise InputError(f"invalid size {text!r}: expected a number with optional k/m/g suffix")
        value = int(match.group(1)) * _UNITS[match.group(2).lower()]
    if value < 1 or value > MAX_SIZE:
        raise InputError(f"size {text!r} out of range 1 B..1 GiB")
    return value


def parse_size_range(text: str) -> tuple[int, ...]:
    """`MIN:MAX` gives the powers of two in [MIN, MAX]; `a,b,c` gives exactly those sizes."""
    text = text.strip()
    if ":" in text:
        lo_text, _, hi_text = text.partition(":")
        lo, hi = parse_size(lo_text), parse_size(hi_text)
        if lo > hi:
            raise InputError(f"invalid size range {text!r}: minimum is larger than maximum")
        first = 1 << (lo - 1).bit_length()  # smallest power of two >= lo
        sizes = []
        size = first
        while size <= hi:
            sizes.append(size)
            size <<= 1
        if not sizes:
            raise InputError(f"size range {text!r} contains no power of two")
        return tuple(sizes)
    parts = [p for p in text.split(",") if p.strip()]
    if not parts:
        raise InputError("empty size list")
    return tuple(sorted({parse_size(p) for p in parts}))


def format_size(size: int) -> str:
    """Human form used in tables and file headers: 8 B, 4 KiB, 1 MiB."""
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} B"


def size_label(size: int) -> str:
    """A measured size in a per-size table: format_size, or `per run` for an application's one
    value per launch (benchmarks.APP_RUN, size 0; a rule band's 0 B stays 0 B)."""
    return "per run" if size == 0 else format_size(size)


def is_app_run(sizes: tuple[int, ...] | list[int]) -> bool:
    """The sizes of an application's study (benchmarks.APP_RUN alone): one value per launch."""
    return list(sizes) == [0]


def describe_sizes(sizes: tuple[int, ...] | list[int]) -> str:
    """`18 sizes 8 B..1 MiB`, or what an application's study measures instead."""
    if is_app_run(sizes):
        return "one value per launch (the application's metric)"
    return f"{len(sizes)} sizes {format_size(sizes[0])}..{format_size(sizes[-1])}"
