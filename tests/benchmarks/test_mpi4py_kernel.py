"""The real kernel under real mpirun, 2 ranks, every collective."""
import pytest

from autotune.benchmarks import COLLECTIVES, Mpi4pyBenchmark
from autotune.launch import LocalLauncher
from autotune.measure import MeasurementPlan, Measurer
from autotune.space import LaunchSettings

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("collective", COLLECTIVES)
def test_kernel_measures_every_size_of_every_collective(mpirun, collective):
    sizes = (4, 4096, 262144)
    plan = MeasurementPlan(collective=collective, nodes=1, ppn=2, sizes=sizes, repetitions=3,
                           stages=1, time_per_size=0.005)
    record = Measurer(plan, LocalLauncher(), Mpi4pyBenchmark()).run_launch(LaunchSettings(), plan.launches()[0], seed=5)
    assert sorted(record.t_max_us) == list(sizes)
    assert all(t > 0 for t in record.t_max_us.values())
    # larger messages take longer: a sanity check that the buffers really have those sizes
    assert record.t_max_us[262144] > record.t_max_us[4]
    assert record.argv[0] == mpirun and "-np" in record.argv


def test_config_that_breaks_mpi_init_is_a_failed_launch(mpirun):
    from autotune.measure import LaunchFailed

    plan = MeasurementPlan(collective="allreduce", nodes=1, ppn=2, sizes=(8,), repetitions=3,
                           stages=1, time_per_size=0.005)
    settings = LaunchSettings(env=(("UCX_TLS", "self"),),
                              mca=(("pml", "ucx"), ("pml_ucx_devices", "any"), ("pml_ucx_tls", "any")))
    with pytest.raises(LaunchFailed) as info:
        Measurer(plan, LocalLauncher(), Mpi4pyBenchmark()).run_launch(settings, plan.launches()[0], seed=1)
    assert info.value.reason == "config"
    assert "-x" in info.value.record.argv and "UCX_TLS=self" in info.value.record.argv
