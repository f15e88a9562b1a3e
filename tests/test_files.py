"""Inputs without limits (issue 13): devices, FIFOs, huge or deeply nested files, symlinked
outputs, readers that would create storage, an empty study name. Each ends fast with one line."""

from __future__ import annotations

import math
import os
import stat
import time

import pytest

from autotune.errors import InputError, SpaceError, StorageError
from autotune.files import check_yaml_depth, read_text_input, write_output_atomically
from tests.cli import assert_one_line_error
from tests.storage import add_trial, controller_attrs, new_study

START = ("start", "--collective", "allreduce")


# ---- the module itself --------------------------------------------------------------------

@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_is_not_read(device):
    t0 = time.monotonic()
    with pytest.raises(InputError, match=f"^weights file {device}: not a regular file"):
        read_text_input(device, "weights file", 1024)
    assert time.monotonic() - t0 < 1


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    with pytest.raises(InputError, match="not a regular file .a FIFO."):
        read_text_input(fifo, "hostfile", 1024)
    assert time.monotonic() - t0 < 1


def test_size_cap_and_encoding(tmp_path):
    path = tmp_path / "w"
    path.write_bytes(b"x" * 1025)
    with pytest.raises(InputError, match="larger than 1 KiB"):
        read_text_input(path, "weights file", 1024)
    path.write_bytes(b"x" * 1024)
    assert read_text_input(path, "weights file", 1024) == "x" * 1024
    path.write_bytes(b"8: 1\n\xff")
    with pytest.raises(InputError, match="not UTF-8 text .byte 5."):
        read_text_input(path, "weights file", 1024)
    with pytest.raises(InputError, match="^cannot read weights file .*No such file"):
        read_text_input(tmp_path / "none", "weights file", 1024)


def test_a_file_that_reports_size_zero_is_still_capped():
    # /proc files report st_size 0; the cap holds by reading at most cap+1 bytes
    assert os.stat("/proc/self/maps").st_size == 0
    with pytest.raises(InputError, match="larger than 1 KiB"):
        read_text_input("/proc/self/maps", "weights file", 1024)


def test_yaml_depth_is_checked_fast():
    t0 = time.monotonic()
    with pytest.raises(InputError, match="nested deeper than 32 levels"):
        check_yaml_depth("[" * 200_000, "x")
    check_yaml_depth("[" * 32 + "]" * 32, "x")
    assert time.monotonic() - t0 < 1


def test_atomic_write_keeps_mode_and_refuses_links_and_fifos(tmp_path):
    out = tmp_path / "out.env"
    write_output_atomically(out, "A=1\n", "export -o")
    assert out.read_text() == "A=1\n" and stat.S_IMODE(out.stat().st_mode) & 0o044
    out.chmod(0o600)
    write_output_atomically(out, b"B=2\n", "export -o")
    assert out.read_bytes() == b"B=2\n" and stat.S_IMODE(out.stat().st_mode) == 0o600
    target = tmp_path / "target"
    target.write_text("keep")
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(InputError, match="^export -o .*link: is a symlink; not followed$"):
        write_output_atomically(link, "A=1\n", "export -o")
    assert target.read_text() == "keep" and link.is_symlink()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file .a FIFO."):
        write_output_atomically(fifo, "A=1\n", "export -o")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "link", "out.env", "target"]


# ---- wired into the loaders -----------------------------------------------------------------

def test_loaders_refuse_devices_and_deep_nesting(tmp_path):
    from autotune.launch import read_hostfile
    from autotune.objective import load_weights
    from autotune.space import load_space
    from autotune.storage._grid import read_grid
    from autotune.warmstart import load_warm_start

    with pytest.raises(InputError, match="^weights file /dev/zero: not a regular file"):
        load_weights("/dev/zero")
    with pytest.raises(InputError, match="^hostfile /dev/urandom: not a regular file"):
        read_hostfile("/dev/urandom")
    deep = tmp_path / "deep.yaml"
    deep.write_text("8: " + "[" * 100 + "]" * 100 + "\n")
    with pytest.raises(InputError, match="nested deeper than 32"):
        load_weights(deep)
    with pytest.raises(SpaceError, match="nested deeper than 32"):
        load_space(str(deep))
    with pytest.raises(InputError, match="nested deeper than 32"):
        load_warm_start(str(deep))
    fifo = tmp_path / "g.csv"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="^grid .*g.csv: not a regular file"):
        read_grid(fifo)


def test_a_200kb_bracket_space_fails_in_under_a_second(tmp_path):
    from autotune.space import load_space

    path = tmp_path / "brackets.yaml"
    path.write_text("[" * 200_000)
    t0 = time.monotonic()
    with pytest.raises(SpaceError, match="nested deeper than 32 levels"):
        load_space(str(path))
    assert time.monotonic() - t0 < 1


def test_readers_never_create_storage_and_journal_fifo_is_refused(tmp_path):
    from autotune.storage import open_storage

    db = tmp_path / "none.db"
    with pytest.raises(StorageError, match=f"^no autotune storage at {db}"):
        open_storage(f"sqlite:///{db}", create=False)
    fifo = tmp_path / "journal"
    os.mkfifo(fifo)
    with pytest.raises(StorageError, match="is not a regular file"):
        open_storage(f"journal:{fifo}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["journal"]


# ---- the CLI, as a user runs it (timeouts: a regression fails instead of hanging) -----------

@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
@pytest.mark.parametrize("option", ["--weights", "--hostfile"])
@pytest.mark.parametrize("foreground", [True, False], ids=["foreground", "background"])
def test_start_with_a_device_input(autotune_cli, device, option, foreground):
    what = "weights file" if option == "--weights" else "hostfile"
    t0 = time.monotonic()
    ppn = ["--ppn", "2"] if option == "--hostfile" else []
    proc = autotune_cli(*START, option, device, *ppn, *(["--foreground"] if foreground else []),
                        timeout=60)
    assert_one_line_error(proc, f"{what} {device}: not a regular file")
    assert time.monotonic() - t0 < 30


@pytest.fixture
def study_url(tmp_path):
    study = new_study(tmp_path, name="allreduce-test")
    add_trial(study, "all", attrs=controller_attrs(is_default=True, speedup=1.01), value=-0.01)
    add_trial(study, "self,sm", attrs=controller_attrs(speedup=1.2), value=-math.log(1.2))
    return f"sqlite:///{tmp_path / 't.db'}"


def test_fifo_as_weights_journal_and_export_output(autotune_cli, tmp_path, study_url):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    proc = autotune_cli(*START, "--weights", str(fifo), "--foreground", timeout=20)
    assert_one_line_error(proc, f"weights file {fifo}: not a regular file (a FIFO)")
    proc = autotune_cli(*START, "--foreground", "--storage", f"journal:{fifo}", timeout=20)
    assert_one_line_error(proc, "is not a regular file")
    proc = autotune_cli("status", "--storage", f"journal:{fifo}", timeout=20)
    assert_one_line_error(proc, "is not a regular file")
    proc = autotune_cli("export", "-o", str(fifo), "--storage", study_url, timeout=20)
    assert_one_line_error(proc, f"export -o {fifo}: not a regular file (a FIFO)")


@pytest.mark.parametrize("command", [("export",), ("history", "--format", "csv"),
                                     ("history", "--format", "parquet")])
def test_symlinked_output_is_refused(autotune_cli, tmp_path, study_url, command):
    target = tmp_path / "precious"
    target.write_text("keep me\n")
    link = tmp_path / "out"
    link.symlink_to(target)
    proc = autotune_cli(*command, "-o", str(link), "--storage", study_url, timeout=60)
    assert_one_line_error(proc, f"{command[0]} -o {link}: is a symlink; not followed")
    assert target.read_text() == "keep me\n" and link.is_symlink()
    # a regular path is written whole, with no temporary file left behind
    out = tmp_path / "real"
    autotune_cli(*command, "-o", str(out), "--storage", study_url, timeout=60, check=True)
    assert out.stat().st_size > 0
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("command", ["status", "history", "best", "export", "verify", "logs",
                                     "stop"])
def test_readers_do_not_create_storage(autotune_cli, tmp_path, command):
    proc = autotune_cli(command, "--storage", "sqlite:///relative.db", timeout=60)
    assert_one_line_error(proc, "no autotune storage at relative.db")
    assert not (tmp_path / "relative.db").exists()
    proc = autotune_cli(command, "--storage", f"journal:{tmp_path / 'j.log'}", timeout=60)
    assert_one_line_error(proc, "no autotune storage at")
    assert not (tmp_path / "j.log").exists()


def test_default_storage_is_not_created_by_status(autotune_cli, tmp_path):
    proc = autotune_cli("status", timeout=60)
    assert_one_line_error(proc, "no study")
    assert not (tmp_path / "home" / "autotune.db").exists()


@pytest.mark.parametrize("command, name", [
    (START + ("--foreground",), ""), (START + ("--foreground",), " \t"), (("status",), ""),
    (("status",), "  "), (("history",), ""), (("best",), ""), (("export",), ""), (("logs",), ""),
    (("stop",), ""), (("verify",), "")])
def test_empty_study_name(autotune_cli, study_url, command, name):
    proc = autotune_cli(*command, "--study", name, "--storage", study_url, timeout=60)
    assert_one_line_error(proc, "--study: the study name must not be empty")
