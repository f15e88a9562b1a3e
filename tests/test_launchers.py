"""The launchers/ templates users copy: valid bash, and they ask Slurm, Ray and autotune for the
right things. srun, scontrol, ray and autotune are stubs that record every call (no Slurm here)."""
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = sorted((ROOT / "launchers").glob("*.sbatch"))

STUB = """#!/bin/bash
echo "$(basename "$0") $*" >> "$STUB_LOG"
case "$(basename "$0") $*" in
  "scontrol show hostnames"*) printf 'node01\\nnode02\\nnode03\\n' ;;
  srun*hostname*) echo "10.1.0.1 fe80::1" ;;
  "ray status"*) printf ' 0.0/3.0 CPU\\n 0.0/3.0 mpi_node\\n' ;;
  srun*--block*|autotune*)
    trap 'echo "$(basename "$0") got TERM" >> "$STUB_LOG"; exit "${STUB_TERM_EXIT:-75}"' TERM
    if [ -n "${STUB_EXIT:-}" ] && [ "$(basename "$0")" = autotune ]; then exit "$STUB_EXIT"; fi
    while true; do sleep 0.1; done ;;
esac
"""


@pytest.fixture
def stubs(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("srun", "scontrol", "ray", "autotune"):
        (bin_dir / name).write_text(STUB)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "calls.log"
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", STUB_LOG=str(log),
               SLURM_JOB_ID="4242", SLURM_JOB_NUM_NODES="3", SLURM_JOB_NODELIST="node[01-03]",
               SLURM_CPUS_ON_NODE="8",
               AUTOTUNE_HOME=str(tmp_path / "home"))
    return env, log


def calls(log):
    return log.read_text().splitlines() if log.exists() else []


def wait_for(log, text, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        if any(text in line for line in calls(log)):
            return
        time.sleep(0.1)
    raise AssertionError(f"{text!r} never called; calls: {calls(log)}")


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.name)
def test_templates_are_valid_bash_with_the_stop_signal(template):
    subprocess.run(["bash", "-n", str(template)], check=True)
    text = template.read_text()
    assert "#SBATCH --signal=B:TERM@120" in text and "#SBATCH --requeue" in text


def run_template(name, env, *args):
    return subprocess.Popen(["bash", str(ROOT / "launchers" / name), *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_sbatch_passes_the_time_limit_signal_on_and_requeues(stubs):
    env, log = stubs
    proc = run_template("autotune.sbatch", env, "--ppn", "4")
    wait_for(log, "autotune start")
    proc.send_signal(signal.SIGTERM)  # what Slurm does 120 s before the limit
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    lines = calls(log)
    assert lines[0] == ("autotune start --collective allreduce --nodes 3 --trials-total 100 "
                        "--launcher slurm --foreground --ppn 4")
    assert "autotune got TERM" in lines
    assert lines[-1] == "scontrol requeue 4242"
    assert "requeueing job 4242" in out


def test_sbatch_does_not_requeue_a_finished_study_or_past_the_limit(stubs):
    env, log = stubs
    proc = run_template("autotune.sbatch", {**env, "STUB_EXIT": "0"})
    proc.communicate(timeout=30)
    assert proc.returncode == 0 and not [c for c in calls(log) if c.startswith("scontrol")]
    log.unlink()
    proc = run_template("autotune.sbatch", {**env, "SLURM_RESTART_COUNT": "5"})
    wait_for(log, "autotune start")
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert "not requeued (MAX_REQUEUES=5)" in out
    assert not [c for c in calls(log) if c.startswith("scontrol requeue")]


@pytest.mark.parametrize("template", ["autotune.sbatch", "ray-on-slurm.sbatch"])
def test_a_study_that_ended_just_before_the_signal_is_not_requeued(stubs, template):
    """The TERM came while autotune was printing its summary: it exits 0, the study is done."""
    env, log = stubs
    proc = run_template(template, {**env, "STUB_TERM_EXIT": "0"}, "--nodes", "1")
    wait_for(log, "autotune start")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "autotune got TERM" in calls(log)
    assert not [c for c in calls(log) if c.startswith("scontrol requeue")]
    assert "autotune ended before the time limit (the study is done, or was stopped); not " \
           "requeued" in out


@pytest.mark.parametrize("term_exit", ["143", "1"])
def test_requeued_when_the_signal_came_before_autotune_could_handle_it(stubs, term_exit):
    env, log = stubs
    proc = run_template("autotune.sbatch", {**env, "STUB_TERM_EXIT": term_exit})
    wait_for(log, "autotune start")
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == 0 and calls(log)[-1] == "scontrol requeue 4242"


@pytest.mark.parametrize("template", ["autotune.sbatch", "ray-on-slurm.sbatch"])
def test_requeued_when_autotune_stops_for_the_jobs_end(stubs, template):
    """autotune stops before the limit on its own (no trial would finish): exit 75 -> requeue."""
    env, log = stubs
    proc = run_template(template, {**env, "STUB_EXIT": "75"}, "--nodes", "1")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "scontrol requeue 4242" in calls(log), out


def test_sbatch_returns_autotunes_failure(stubs):
    env, _ = stubs
    proc = run_template("autotune.sbatch", {**env, "STUB_EXIT": "2"})
    proc.communicate(timeout=30)
    assert proc.returncode == 2


def test_ray_on_slurm_starts_head_and_workers_then_autotune(stubs):
    env, log = stubs
    proc = run_template("ray-on-slurm.sbatch", env, "--nodes", "2", "--parallel", "1")
    wait_for(log, "autotune start")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    lines = calls(log)
    head = next(c for c in lines if "--head" in c)
    assert head.startswith("srun --overlap --nodes=1 --ntasks=1 --cpus-per-task=8 -w node01 "
                           "ray start --head --block")
    assert '--node-ip-address=10.1.0.1 --port=6379' in head and '{"mpi_node": 1}' in head
    workers = next(c for c in lines if "--address=10.1.0.1:6379" in c)
    assert "--nodes=2 --ntasks=2 --ntasks-per-node=1 --cpus-per-task=8 --exclude=node01" in workers
    assert '{"mpi_node": 1}' in workers
    auto = next(c for c in lines if c.startswith("autotune"))
    assert auto == ("autotune start --collective allreduce --trials-total 100 --launcher ray "
                    "--ray-address 10.1.0.1:6379 --ray-resource mpi_node --foreground "
                    "--nodes 2 --parallel 1")
    assert "srun got TERM" in lines  # the Ray steps are stopped at the end
    assert lines[-1] == "scontrol requeue 4242" or "scontrol requeue 4242" in lines


def test_ray_on_slurm_gives_up_when_nodes_do_not_join(stubs, tmp_path):
    env, log = stubs
    ray = tmp_path / "bin" / "ray"
    ray.write_text("#!/bin/bash\necho \"ray $*\" >> \"$STUB_LOG\"\nprintf ' 0.0/1.0 mpi_node\\n'\n")
    env = {**env, "PATH": env["PATH"]}
    fast = (ROOT / "launchers" / "ray-on-slurm.sbatch").read_text().replace("seq 1 120", "seq 1 2")
    script = tmp_path / "fast.sbatch"
    script.write_text(fast)
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "only 1 of 3 Ray nodes joined" in proc.stderr
    assert not [c for c in calls(log) if c.startswith("autotune")]
