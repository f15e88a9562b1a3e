"""The single-host launcher builds Open MPI (mpirun) or MPICH/Hydra (mpiexec) argv by MPI family;
building argv needs no MPI on PATH (nor does the host-list launcher's).

The MPICH spaces produce correct mpiexec (Hydra) launches: every variable through -genv, never an
MCA parameter. (Real MPICH launches: tests/launch/test_mpich.py.)"""
import pytest

from autotune.errors import EnvironmentProblem
from autotune.launch import HostListLauncher, LaunchSpec, LocalLauncher
from autotune.space import TrialContext, load_space


def mpich(program="mpiexec"):
    return LocalLauncher(family="mpich", mpiexec=program)


def test_mpich_space_gives_genv_arguments():
    space = load_space("mpich")
    ctx = TrialContext("allreduce", 1)
    params = {**space.defaults(ctx), "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "recursive_doubling",
              "MPIR_CVAR_DEVICE_COLLECTIVES": "none"}
    settings = space.settings(params, ctx)
    spec = LaunchSpec(nodes=1, ppn=4, program=("python3", "-m", "bench"), env=settings.env,
                      mca=settings.mca, mpirun_args=settings.mpirun_args)
    argv = list(mpich("/usr/bin/mpiexec.hydra").command(spec).argv)
    assert argv[:5] == ["/usr/bin/mpiexec.hydra", "-n", "4", "-ppn", "4"]
    genv = {argv[i + 1]: argv[i + 2] for i, a in enumerate(argv) if a == "-genv"}
    assert genv == dict(settings.env)  # every variable of the configuration, each through -genv
    assert {"MPIR_CVAR_DEVICE_COLLECTIVES": "none",
            "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "recursive_doubling"}.items() <= genv.items()
    defaults = space.defaults(ctx)  # MPICH 4.x defaults; algorithms only matter without device colls
    assert defaults == {"MPIR_CVAR_DEVICE_COLLECTIVES": "percoll"}
    assert argv[-3:] == ["python3", "-m", "bench"]
    assert "--mca" not in argv


def test_cray_space_sets_only_what_is_not_unset():
    space = load_space("cray-mpich")
    ctx = TrialContext("allreduce", 1)
    params = {**space.defaults(ctx), "MPICH_SMP_SINGLE_COPY_SIZE": 1024}
    settings = space.settings(params, ctx)
    spec = LaunchSpec(nodes=1, ppn=2, program=("bench",), env=settings.env)
    argv = list(mpich().command(spec).argv)
    assert argv.count("-genv") == 1 and "MPICH_SMP_SINGLE_COPY_SIZE" in argv and "1024" in argv


def test_mca_parameters_are_refused_by_mpich():
    spec = LaunchSpec(nodes=1, ppn=2, program=("bench",), mca=(("pml", "ucx"),))
    with pytest.raises(EnvironmentProblem, match="Open MPI's"):
        mpich().command(spec)


def test_open_mpi_argv():
    spec = LaunchSpec(nodes=1, ppn=3, program=("bench", "-x"), env=(("UCX_TLS", "sm"),),
                      mca=(("pml", "ucx"),), mpirun_args=("--bind-to", "core"), oversubscribe=True)
    command = LocalLauncher(mpirun="/opt/mpirun").command(spec)
    argv = [a for a in command.argv if a != "--allow-run-as-root"]
    assert argv == ["/opt/mpirun", "-np", "3", "--oversubscribe", "--mca", "pml", "ucx",
                    "-x", "UCX_TLS=sm", "--bind-to", "core", "bench", "-x"]
    assert command.hosts == LocalLauncher().hosts()


@pytest.mark.parametrize("launcher, name, message", [
    (LocalLauncher(mpirun="mpirun"), "local", "the local launcher has 1 host"),
    (LocalLauncher(family="intelmpi", mpirun="mpirun"), "local", "the local launcher has 1 host"),
    (mpich(), "mpich", "the mpich launcher has 1 host"),
])
def test_one_host_only(launcher, name, message):
    assert launcher.name == name and launcher.on_hosts(("a", "b")) is launcher
    with pytest.raises(EnvironmentProblem, match=message):
        launcher.command(LaunchSpec(nodes=2, ppn=1, program=("bench",)))


def test_argv_is_built_without_mpi_on_path(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing there
    spec = LaunchSpec(nodes=1, ppn=2, program=("bench",))
    assert LocalLauncher().command(spec).argv[0] == "mpirun"
    assert LocalLauncher(family="mpich").command(spec).argv[0] == "mpiexec"
    assert HostListLauncher("hostfile", ["n1"]).command(spec).argv[0] == "mpirun"
    assert HostListLauncher("slurm", ["n1"], method="srun").command(spec).argv[0] == "srun"


def test_program_found_on_path_is_recorded_by_its_full_path(monkeypatch, tmp_path):
    for name in ("mpirun", "mpiexec"):
        tool = tmp_path / name
        tool.write_text("#!/bin/sh\n")
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    spec = LaunchSpec(nodes=1, ppn=1, program=("bench",))
    assert LocalLauncher().command(spec).argv[0] == str(tmp_path / "mpirun")
    assert LocalLauncher(family="mpich").command(spec).argv[0] == str(tmp_path / "mpiexec")
