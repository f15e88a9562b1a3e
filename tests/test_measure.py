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
