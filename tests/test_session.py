"""Which launcher `--launcher auto` and which benchmark `--benchmark auto` pick, and why, from
the options, the environment and the stored study."""
from dataclasses import replace

import pytest

from autotune.errors import InputError
from autotune.session import StartOptions, pick_launcher, ranks_per_node


@pytest.mark.parametrize("options, env, expected", [
    ({}, {}, ("local", "no allocation found")),
    ({"launcher": "hostfile", "hostfile": "hosts"}, {"RAY_ADDRESS": "h:1"}, ("hostfile", "--launcher")),
    ({"ray_address": "h:1"}, {"SLURM_JOB_NODELIST": "n[1-2]"}, ("ray", "--ray-address given")),
    ({}, {"SLURM_JOB_NODELIST": "n[1-2]", "RAY_ADDRESS": "h:1"}, ("slurm", "SLURM_JOB_NODELIST is set")),
    ({"hostfile": "hosts"}, {"RAY_ADDRESS": "h:1"}, ("hostfile", "--hostfile given")),
    ({"hostfile": "hosts"}, {"SLURM_JOB_NODELIST": "n[1-2]"}, ("hostfile", "--hostfile given")),
    ({}, {"RAY_ADDRESS": "h:1"}, ("ray", "RAY_ADDRESS is set")),
])
def test_auto_picks_from_options_then_environment(monkeypatch, options, env, expected):
    for name in ("SLURM_JOB_NODELIST", "RAY_ADDRESS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert pick_launcher(StartOptions(collective="allreduce", **options)) == expected


@pytest.mark.parametrize("options, message", [
    ({"launcher": "slurm", "ray_address": "h:1"}, "--ray-address is for --launcher ray"),
    ({"launcher": "local", "hostfile": "hosts"}, "--hostfile is for --launcher hostfile"),
    ({"hostfile": "hosts", "ray_address": "h:1"}, "give one"),
])
def test_contradicting_options_are_refused(options, message):
    with pytest.raises(InputError, match=message):
        pick_launcher(StartOptions(collective="allreduce", **options))


@pytest.mark.parametrize("options", [{"hostfile": "hosts"}, {"ray_address": "h:1"}])
def test_ppn_is_required_where_this_machine_may_not_be_a_node(options):
    with pytest.raises(InputError, match="--ppn is required"):
        ranks_per_node(StartOptions(collective="allreduce", **options))
    assert ranks_per_node(StartOptions(collective="allreduce", ppn=36, **options)) == 36


def test_the_ucx_liveness_check_runs_a_pml_ucx_configuration():
    from autotune.probe import Capabilities
    from autotune.checks import ucx_trial_params
    from autotune.space import TrialContext, load_space, resolve

    ctx = TrialContext("allreduce", 1)
    space = load_space("openmpi-ucx")
    ob1_here = Capabilities(mpi_family="openmpi", mpi_version="4.1.4",
                            components={"pml": ["ob1", "ucx"]}, mca_defaults={"pml": "^ucx"},
                            ucx_transports={"self": ["memory"], "posix": ["memory"]})
    resolved = resolve(space, ob1_here, ctx).space
    params = ucx_trial_params(resolved, ctx, resolved.defaults(ctx, {"NPS": 1}))
    assert params["pml"] == "ucx" and params["UCX_TLS"] == "all"
    assert dict(resolved.settings(params, ctx).mca)["pml_ucx_devices"] == "any"

    ucx_here = Capabilities(mpi_family="openmpi", mpi_version="4.1.4",
                            components={"pml": ["ob1", "ucx"]},
                            mca_defaults={"pml_ucx_devices": "mlx*"},
                            ucx_transports={"rc_mlx5": ["mlx5_0:1"], "self": ["memory"]})
    resolved = resolve(space, ucx_here, ctx).space
    defaults = resolved.defaults(ctx, {"NPS": 1})
    params = ucx_trial_params(resolved, ctx, defaults)
    assert params["pml"] == "unset" and "UCX_TLS" in params  # the untuned stack runs ucx there
    assert resolved.settings(params, ctx) == resolved.settings(defaults, ctx)

    no_ucx = resolve(load_space("openmpi-tuned"), ob1_here, ctx).space
    assert ucx_trial_params(no_ucx, ctx, no_ucx.defaults(ctx)) is None


def test_the_job_end_margin_is_the_signal_lead_or_a_quarter_of_a_short_job(monkeypatch):
    import time

    from autotune.errors import InputError
    from autotune.session import JOB_END_MARGIN_ENV, job_end_margin

    monkeypatch.delenv(JOB_END_MARGIN_ENV, raising=False)
    now = time.time()
    assert job_end_margin(now + 3600) == 120.0  # a long job: two minutes
    assert 14.0 <= job_end_margin(now + 60) <= 15.0  # a one-minute job: a quarter of it
    monkeypatch.setenv(JOB_END_MARGIN_ENV, "20")
    assert job_end_margin(now + 3600) == 20.0
    monkeypatch.setenv(JOB_END_MARGIN_ENV, "soon")
    with pytest.raises(InputError, match="AUTOTUNE_JOB_END_MARGIN='soon': expected seconds"):
        job_end_margin(now + 60)


def test_auto_benchmark_is_imb_where_found_the_kernel_elsewhere_and_a_study_keeps_its_own(
        tmp_path, monkeypatch):
    import optuna

    from autotune.session import with_benchmark_chosen
    from autotune.storage import CONFIG_ATTR, StudyConfig
    from tests.benchmarks.test_imb import IMB_DIR

    monkeypatch.setenv("AUTOTUNE_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no IMB on it
    url = f"sqlite:///{tmp_path / 's.db'}"
    given = StartOptions(collective="allreduce", ppn=2, storage=url, imb_dir=str(IMB_DIR))
    assert with_benchmark_chosen(given).benchmark == "imb"
    # no IMB: autotune's C benchmark, built with the MPI's mpicc; without a wrapper, the kernel
    assert with_benchmark_chosen(StartOptions(collective="allreduce", ppn=2,
                                              storage=url)).benchmark == "cbench"
    monkeypatch.setenv("AUTOTUNE_MPICC", "/bin/false")
    monkeypatch.setenv("AUTOTUNE_KERNEL_CACHE", str(tmp_path / "empty-cache"))
    assert with_benchmark_chosen(StartOptions(collective="allreduce", ppn=2,
                                              storage=url)).benchmark == "mpi4py"
    monkeypatch.delenv("AUTOTUNE_MPICC")
    assert with_benchmark_chosen(StartOptions(collective="iallreduce", ppn=2, storage=url,
                                              imb_dir=str(IMB_DIR))).benchmark == "imb"
    named = StartOptions(collective="allreduce", ppn=2, storage=url, imb_dir=str(IMB_DIR),
                         benchmark="mpi4py")
    assert with_benchmark_chosen(named).benchmark == "mpi4py"  # named: never changed
    with pytest.raises(Exception, match="IMB-MPI1 not found"):  # a wrong folder is no fallback
        with_benchmark_chosen(StartOptions(collective="allreduce", ppn=2, storage=url,
                                           imb_dir=str(tmp_path)))
    # a study measured by the kernel resumes with the kernel, though IMB is found now
    study = optuna.create_study(study_name="allreduce-1n2p-openmpi-ucx+openmpi-tuned",
                                storage=url)
    study.set_user_attr(CONFIG_ATTR, StudyConfig(
        collective="allreduce", nodes=1, ppn=2, space="openmpi-ucx+openmpi-tuned", sizes=(8,),
        weights={8: 1.0}, repetitions=3, stages=1, time_per_size=0.01,
        benchmark="mpi4py kernel").to_dict())
    assert with_benchmark_chosen(given).benchmark == "mpi4py"
    assert with_benchmark_chosen(replace(given, new_study=True)).benchmark == "imb"
