"""The MPICH spaces produce correct mpiexec (Hydra) launches: every variable through -genv,
never an MCA parameter. (MPICH is not installed next to Open MPI here: Debian's mpich package
switches the mpirun/mpiexec alternatives, so only the launch spec is checked.)"""
import pytest

from autotune.errors import EnvironmentProblem
from autotune.launch import LaunchSpec, MpichLauncher
from autotune.space import TrialContext, load_space


def test_mpich_space_gives_genv_arguments():
    space = load_space("mpich")
    ctx = TrialContext("allreduce", 1)
    params = {**space.defaults(ctx), "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "recursive_doubling",
              "MPIR_CVAR_DEVICE_COLLECTIVES": "none"}
    settings = space.settings(params, ctx)
    spec = LaunchSpec(nodes=1, ppn=4, program=("python3", "-m", "bench"), env=settings.env,
                      mca=settings.mca, mpirun_args=settings.mpirun_args)
    argv = list(MpichLauncher(mpiexec="/usr/bin/mpiexec.hydra").command(spec).argv)
    assert argv[:5] == ["/usr/bin/mpiexec.hydra", "-n", "4", "-ppn", "4"]
    genv = {argv[i + 1]: argv[i + 2] for i, a in enumerate(argv) if a == "-genv"}
    assert genv == {"MPIR_CVAR_DEVICE_COLLECTIVES": "none", "MPIR_CVAR_ENABLE_SMP_COLLECTIVES": "1",
                    "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "recursive_doubling"}
    defaults = space.defaults(ctx)  # MPICH 4.x defaults; algorithms only matter without device colls
    assert defaults == {"MPIR_CVAR_DEVICE_COLLECTIVES": "percoll", "MPIR_CVAR_ENABLE_SMP_COLLECTIVES": 1}
    assert argv[-3:] == ["python3", "-m", "bench"]
    assert "--mca" not in argv


def test_cray_space_sets_only_what_is_not_unset():
    space = load_space("cray-mpich")
    ctx = TrialContext("allreduce", 1)
    params = {**space.defaults(ctx), "MPICH_SMP_SINGLE_COPY_SIZE": 1024}
    settings = space.settings(params, ctx)
    spec = LaunchSpec(nodes=1, ppn=2, program=("bench",), env=settings.env)
    argv = list(MpichLauncher(mpiexec="mpiexec").command(spec).argv)
    assert argv.count("-genv") == 1 and "MPICH_SMP_SINGLE_COPY_SIZE" in argv and "1024" in argv


def test_mca_parameters_are_refused():
    spec = LaunchSpec(nodes=1, ppn=2, program=("bench",), mca=(("pml", "ucx"),))
    with pytest.raises(EnvironmentProblem, match="Open MPI's"):
        MpichLauncher(mpiexec="mpiexec").command(spec)
