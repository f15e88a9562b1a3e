import json

import pytest

from autotune.benchmarks import buffer_counts, kernel_program, parse_kernel_output
from autotune.errors import BenchmarkOutputError


def line(**record):
    return "AUTOTUNE " + json.dumps(record)


START = line(kind="start", ranks=2, hosts=["a"], mpi_library="Open MPI v4.1.4")


def size(s, t=1.5):
    return line(kind="size", size=s, iters=100, t_max_us=t, t_min_us=t, t_avg_us=t)


def test_parses_clean_output_ignoring_noise():
    text = "\n".join(["some MPI warning", START, size(16, 2.5), size(8), line(kind="done")])
    out = parse_kernel_output(text, (8, 16), ranks=2)
    assert out.timings[16].t_max_us == 2.5 and out.hosts == ("a",)


@pytest.mark.parametrize("lines, message", [
    ([size(8), line(kind="done")], "no start record"),
    ([START, size(8)], "no done record"),
    ([START, size(8), size(8), line(kind="done")], "duplicate"),
    ([START, size(32), line(kind="done")], "unrequested"),
    ([START, line(kind="size", size=8, iters=1, t_max_us="fast", t_min_us=1, t_avg_us=1)], "not a number"),
    ([START, line(kind="size", size=8, iters=1, t_max_us=float("inf"), t_min_us=1, t_avg_us=1)], "finite"),
    ([START, "AUTOTUNE [1, 2]"], "not an object"),
    ([line(kind="start", ranks=4, hosts=["a"]), size(8), line(kind="done")], "expected 2"),
    ([START, line(kind="boom")], "unknown record kind"),
])
def test_rejects_bad_output(lines, message):
    with pytest.raises(BenchmarkOutputError, match=message):
        parse_kernel_output("\n".join(lines), (8,), ranks=2)


def test_kernel_program_has_no_shell():
    argv = kernel_program("allreduce", (8, 1024), 0.02, 7, python="/usr/bin/python3")
    assert argv[:3] == ("/usr/bin/python3", "-m", "autotune.benchmarks.mpi4py_kernel")
    assert "8,1024" in argv and "7" in argv


@pytest.mark.parametrize("collective, size, ranks, send, recv, dtype", [
    ("allreduce", 4096, 8, 1024, 1024, "float32"),  # 4 KiB of MPI_FLOAT
    ("reduce", 8, 2, 2, 2, "float32"),
    ("allgather", 1024, 8, 1024, 8192, "uint8"),  # IMB: #bytes sent per rank, np blocks received
    ("alltoall", 1024, 8, 8192, 8192, "uint8"),  # IMB: #bytes per peer
    ("bcast", 65536, 4, 65536, 65536, "uint8"),
])
def test_buffer_counts_follow_imb(collective, size, ranks, send, recv, dtype):
    counts = buffer_counts(collective, size, ranks)
    assert (counts.send, counts.recv, counts.dtype) == (send, recv, dtype)
