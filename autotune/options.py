"""What `autotune start` is asked to do, as one typed value: the CLI builds it from the command
line, a campaign from its file, `verify` for its own launch; the session turns it into a run."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from .benchmarks import AUTO_BENCHMARK
from .strategy import DEFAULT_STRATEGY

DEFAULT_SPACE = "openmpi-ucx+openmpi-tuned"


@dataclass(frozen=True)
class StartOptions:
    collective: str
    nodes: int = 1
    ppn: int | None = None
    space: str = DEFAULT_SPACE
    sizes: tuple[int, ...] | None = None
    weights_file: str | None = None
    repetitions: int = 5
    stages: int = 2
    time_per_size: float = 0.02
    baseline_every: int | None = None  # None: as the strategy measures best (strategy.baseline_every)
    prune: bool = True
    prune_after: int = 4
    p_threshold: float = 0.1
    oversubscribe: bool = False
    seed: int | None = None
    study_name: str | None = None
    storage: str | None = None
    warm_start: str | None = None
    check_live: bool = True
    time_budget: float | None = None  # seconds
    new_study: bool = False
    force: bool = False
    timeout_floor: float = 60.0
    infra_pause: float = 300.0
    confirm_top: int = 3
    confirm_rounds: int = 5  # rounds before the first judgement
    confirm_max_rounds: int = 80
    confirm_confidence: float = 0.95
    launcher: str = "auto"  # auto | local | hostfile | slurm | ray
    hostfile: str | None = None
    launcher_mca: tuple[tuple[str, str], ...] = ()  # site settings: remote agent, interfaces
    launch_with: str = "mpirun"  # mpirun | srun (slurm launcher only)
    parallel: int = 1  # trials at once, on disjoint node groups
    ray_address: str | None = None
    ray_resource: str = "mpi_node"
    ray_head_grace: float = 30.0  # seconds without the Ray head before the run stops
    strategy: str = DEFAULT_STRATEGY  # strategy.STRATEGIES
    benchmark: str = AUTO_BENCHMARK  # auto, or one of benchmarks.BENCHMARKS
    imb_dir: str | None = None  # where IMB-MPI1 is (else PATH)
    imb_mem_gb: float | None = None  # IMB -mem (GB per process)
    imb_off_cache: str | None = None  # IMB -off_cache CACHE_SIZE[,CACHE_LINE_SIZE]
    numactl: bool = False  # run the benchmark under `numactl -l` (seeds/000)
    app_command: tuple[str, ...] = ()  # --benchmark app: the program's argv (after --)
    metric: str | None = None  # --benchmark app: REGEX with one group, or "wall" (the default)
    higher_is_better: bool = False  # --benchmark app: the metric is a rate
    verify: str = "auto"  # auto | yes | no: the independent check at the end (endgame/verify.py)
    verify_rounds: int = 20
    per_size: bool = True  # per-size algorithm rules after the confirmation (endgame/stage.py)
    per_size_rounds: int = 6
    objective: str = "latency"  # latency | overlap | t_ovrl (objective.OBJECTIVES)
    # values of options a registry entry declares (optionspec) that have no field above: a new
    # strategy, benchmark or launcher brings its options without a change here
    declared: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, **values: Any) -> StartOptions:
        """From a command line's values: a field each, the rest (an entry's own options) in
        `declared`."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known},
                   declared=tuple(sorted((k, v) for k, v in values.items() if k not in known)))
