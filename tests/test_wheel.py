"""A wheel built with `pip wheel .` and installed (not editable) into a fresh venv lists every
space and runs `start --warm-start seed000-winners --foreground`; a broken install says so."""
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from autotune.errors import EnvironmentProblem
from autotune.space import _load

ROOT = Path(__file__).resolve().parent.parent
# Build from a copy: an in-tree build leaves build/ behind, whose stale files a later build packs.
NOT_COPIED = shutil.ignore_patterns(".venv", ".git", "build", "dist", "*.egg-info", "__pycache__",
                                    ".pytest_cache", ".ruff_cache", "*.db")


def run(cmd, cwd, env=None, timeout=300):
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, (f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n"
                                  f"{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(ROOT, src, symlinks=True, ignore=NOT_COPIED)
    # .venv's setuptools is too old for pyproject.toml (>=68), so pip builds in isolation.
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", tmp / "dist", src], cwd=tmp)
    (whl,) = (tmp / "dist").glob("autotune-*.whl")
    return whl, src


def test_wheel_ships_every_space_and_module(wheel):
    whl, src = wheel
    names = set(zipfile.ZipFile(whl).namelist())
    shipped = {f"autotune/search_spaces/{p.relative_to(src / 'search_spaces')}"
               for p in (src / "search_spaces").rglob("*.yaml")}
    assert shipped and "autotune/search_spaces/warm-start/seed000-winners.yaml" in shipped
    assert shipped <= names, sorted(shipped - names)
    modules = {str(p.relative_to(src)) for p in (src / "autotune").rglob("*.py")
               if "__pycache__" not in p.parts}
    assert modules <= names, f"modules missing from the wheel: {sorted(modules - names)}"
    assert "autotune/export/json-export.schema.json" in names  # `export --format json`'s schema
    assert "autotune/benchmarks/timed_loops.c" in names  # the kernel's timed loops, built on use


@pytest.fixture(scope="module")
def fresh_venv(wheel, tmp_path_factory):
    """A venv with the wheel installed, which borrows the other dependencies (mpi4py, optuna,
    ray...) from this test's venv without installing them again."""
    whl, _ = wheel
    env_dir = tmp_path_factory.mktemp("venv") / "fresh"
    run([sys.executable, "-m", "venv", "--without-pip", env_dir], cwd=env_dir.parent)
    python = env_dir / "bin" / "python"
    run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps",
         "--no-index", whl], cwd=env_dir.parent)
    site = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                    cwd=env_dir.parent).stdout.strip())
    # Paths named in a .pth go AFTER the venv's own site-packages, and .pth files in them are not
    # run: the installed autotune comes first and .venv's editable-install finder stays inactive.
    deps = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    (site / "zz_borrowed_deps.pth").write_text("".join(f"{p}\n" for p in deps))
    return env_dir, site


@pytest.fixture
def fresh_env(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "AUTOTUNE_STORAGE")}
    return dict(env, AUTOTUNE_HOME=str(tmp_path / "home"), COLUMNS="200")


@pytest.mark.mpi
def test_installed_wheel_lists_spaces_and_runs_a_warm_started_study(fresh_venv, fresh_env,
                                                                     tmp_path, mpirun):
    env_dir, site = fresh_venv
    python, exe = env_dir / "bin" / "python", env_dir / "bin" / "autotune"
    # Run outside the repository, so neither cwd nor the editable install can supply the source.
    where = run([python, "-c", "import sys, autotune, autotune.space._load as l;"
                 "import autotune.warmstart as w;"
                 "print(autotune.__file__); print(l.SPACES_DIR); print(w.SHIPPED);"
                 "print(*[getattr(f, '__module__', '?') for f in sys.meta_path])"],
                cwd=tmp_path, env=fresh_env).stdout.splitlines()
    module, spaces_dir, warm_dir, finders = where
    assert Path(module).is_relative_to(site), module
    assert Path(spaces_dir) == site / "autotune" / "search_spaces"
    assert Path(warm_dir) == site / "autotune" / "search_spaces" / "warm-start"
    assert "__editable__" not in finders, finders

    listed = run([exe, "spaces", "list"], cwd=tmp_path, env=fresh_env).stdout
    names = {p.stem for p in (ROOT / "search_spaces").glob("*.yaml")}
    first_words = {line.split()[0] for line in listed.splitlines() if line.strip()}
    assert names and names <= first_words, listed

    proc = run([exe, "start", "--collective", "allreduce", "--nodes", "1", "--ppn", "2",
                "--trials", "2", "--warm-start", "seed000-winners", "--foreground",
                "--sizes", "8:64", "--repetitions", "3", "--stages", "1", "--confirm", "0",
                "--time-per-size", "0.005"], cwd=tmp_path, env=fresh_env, timeout=600)
    out = proc.stdout + proc.stderr
    assert "warm start: queued" in out, out
    assert "Traceback" not in out, out
    schema = run([python, "-c", "from autotune.export import json_schema; "
                  "print(json_schema()['$schema'])"], cwd=tmp_path, env=fresh_env).stdout
    assert "json-schema.org" in schema, schema


def test_missing_shipped_spaces_are_a_broken_install_not_an_empty_list(monkeypatch, tmp_path):
    monkeypatch.setattr(_load, "SPACES_DIR", tmp_path / "search_spaces")
    with pytest.raises(EnvironmentProblem, match="install is broken"):
        _load.available_spaces()
    with pytest.raises(EnvironmentProblem, match="install is broken"):
        _load.load_space("openmpi-ucx")
