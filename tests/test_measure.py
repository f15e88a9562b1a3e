from autotune.measure import MeasurementPlan


def plan(**kw):
    args = dict(collective="allreduce", nodes=1, ppn=2, sizes=(8, 16, 32, 64, 128),
                repetitions=3, stages=2, time_per_size=0.01)
    args.update(kw)
    return MeasurementPlan(**args)


def test_blocks_are_ascending_and_cover_every_size():
    blocks = plan().blocks()
    assert blocks == [(8, 16, 32), (64, 128)]


def test_launches_are_block_major_with_repetitions():
    launches = plan().launches()
    assert [(l.block, l.rep) for l in launches] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert [l.index for l in launches] == list(range(6))


def test_more_stages_than_sizes_is_capped():
    assert len(plan(stages=10, sizes=(8, 16)).blocks()) == 2


def _canned(stdout):
    """An executor that returns `stdout` as a clean exit of the launch (no MPI run)."""
    from autotune.launch import RunResult

    return lambda command, timeout: RunResult(argv=tuple(command.argv), returncode=0,
                                              stdout=stdout, stderr="", seconds=0.1,
                                              started=1000.0)


def _run(collective, objective, stdout):
    from autotune.benchmarks import Mpi4pyBenchmark
    from autotune.launch import LocalLauncher
    from autotune.measure import Measurer
    from autotune.space import LaunchSettings

    p = plan(collective=collective, sizes=(8,), stages=1, objective=objective)
    return Measurer(p, LocalLauncher(), Mpi4pyBenchmark(), executor=_canned(stdout)).run_launch(
        LaunchSettings(), p.launches()[0], seed=1)


START = 'AUTOTUNE {"kind": "start", "ranks": 2, "hosts": ["a"]}'
DONE = 'AUTOTUNE {"kind": "done", "sizes": 1}'
NBC = ('AUTOTUNE {"kind": "size", "size": 8, "iters": 9, "t_max_us": 2.5, "t_min_us": 2.0, '
       '"t_avg_us": 2.2, "t_pure_us": 2.0, "t_ovrl_us": 3.0, "t_cpu_us": 2.0, '
       '"overlap_pct": 50.0}')


def test_the_plans_objective_decides_what_a_launch_scores():
    text = "\n".join([START, NBC, DONE])
    assert _run("iallreduce", "latency", text).t_max_us == {8: 2.5}  # t_max over ranks
    assert _run("iallreduce", "t_ovrl", text).t_max_us == {8: 3.0}
    record = _run("iallreduce", "overlap", text)
    assert record.t_max_us == {8: 1.5}  # 2 - 50/100
    assert record.to_dict()["nbc"] == {"8": {"t_pure_us": 2.0, "t_ovrl_us": 3.0,
                                             "t_cpu_us": 2.0, "overlap_pct": 50.0}}


def test_a_blocking_launch_is_stored_as_before():
    size = ('AUTOTUNE {"kind": "size", "size": 8, "iters": 9, "t_max_us": 2.5, '
            '"t_min_us": 2.0, "t_avg_us": 2.2}')
    record = _run("allreduce", "latency", "\n".join([START, size, DONE]))
    assert record.t_max_us == {8: 2.5} and record.nbc == {} and "nbc" not in record.to_dict()
