#!/usr/bin/env bash
# Install what autotune needs on Debian/Ubuntu: Open MPI + UCX tools from Debian packages (when
# missing; needs root), then a virtualenv in .venv with autotune and its Python dependencies from
# PyPI. mpi4py is built from source against the installed Open MPI. Safe to run again.
# --mpich: also MPICH beside Open MPI (Debian's mpich: mpiexec.mpich; Open MPI keeps mpirun and
# mpiexec) and, for the kernel under MPICH, a second mpi4py built against it in .venv/mpi4py-mpich.
# --test: also what the test suite needs beyond that (headless Chromium renders the report;
# slurm-wlm and munge run a private Slurm cluster for the tests of real jobs; MPICH as --mpich;
# LAMMPS and its examples, a real application for --benchmark app).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
for_tests=0
mpich=0
for option in "$@"; do
    case "$option" in
        --test) for_tests=1; mpich=1 ;;
        --mpich) mpich=1 ;;
        *) echo "install.sh: unknown option ${option} (--test: also what the test suite needs;" \
                "--mpich: also MPICH)" >&2; exit 2 ;;
    esac
done

PY="${PYTHON:-python3}"
pkgs=(openmpi-bin libopenmpi-dev ucx-utils gcc iproute2)  # iproute2: the tests' multi-host bed
[ "$for_tests" = 1 ] && pkgs+=(chromium)  # the report test renders the page as a person sees it
if ! command -v "$PY" >/dev/null 2>&1; then
    pkgs+=(python3 python3-venv python3-dev)
else
    "$PY" -c 'import ensurepip, venv' >/dev/null 2>&1 || pkgs+=(python3-venv)
    "$PY" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
        || pkgs+=(python3-dev)
fi
missing=()
for pkg in "${pkgs[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
# the tests' private Slurm cluster (launchers/private-slurm.sh); no recommends: no mail server
lean=()
leans=()
[ "$for_tests" = 1 ] && leans+=(slurm-wlm munge lammps lammps-examples)
[ "$mpich" = 1 ] && leans+=(mpich libmpich-dev)
for pkg in "${leans[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || lean+=("$pkg")
done
if [ $((${#missing[@]} + ${#lean[@]})) -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "install.sh: missing Debian packages: ${missing[*]} ${lean[*]} (run as root, or install them)" >&2
        exit 1
    fi
    echo "install.sh: apt-get install ${missing[*]} ${lean[*]}"
    apt-get update -qq
    if [ ${#missing[@]} -gt 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    if [ ${#lean[@]} -gt 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${lean[@]}" >/dev/null
    fi
fi

"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || { echo "install.sh: Python >= 3.11 required, $PY is $("$PY" --version 2>&1)" >&2; exit 1; }
[ -x .venv/bin/python ] || "$PY" -m venv .venv
export PIP_DISABLE_PIP_VERSION_CHECK=1
.venv/bin/python -m pip install -q --upgrade pip
echo "install.sh: pip install autotune and dependencies into .venv (mpi4py compiles once)"
.venv/bin/python -m pip install -q --no-binary mpi4py -e ".[test]"
.venv/bin/python -c 'import mpi4py, optuna; print(f"install.sh: ready (optuna {optuna.__version__}, mpi4py {mpi4py.__version__})")'
# autotune's C benchmark (IMB-MPI1's method), built now with this MPI's mpicc rather than on the
# first study's start; a machine where it cannot be built times with the mpi4py kernel instead
.venv/bin/python - <<'PY'
from autotune.benchmarks._cbench import build_cbench
from autotune.errors import EnvironmentProblem
try:
    print(f"install.sh: autotune's C benchmark built: {build_cbench()}")
except EnvironmentProblem as exc:
    print(f"install.sh: {exc}: studies time with the mpi4py kernel instead")
PY
if [ "$mpich" = 1 ] && ! ldd .venv/mpi4py-mpich/mpi4py/MPI*.so 2>/dev/null | grep -q libmpich; then
    # one extension module links one MPI: the kernel's ranks under MPICH import this build first
    echo "install.sh: build mpi4py against MPICH into .venv/mpi4py-mpich (compiles once)"
    version=$(.venv/bin/python -c 'import mpi4py; print(mpi4py.__version__)')
    rm -rf .venv/mpi4py-mpich
    MPI4PY_BUILD_MPICC=mpicc.mpich .venv/bin/python -m pip install -q --no-cache-dir \
        --no-binary mpi4py --no-deps --target .venv/mpi4py-mpich "mpi4py==$version"
fi
