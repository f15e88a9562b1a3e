"""`--parallel K`: up to K trials at once, each on its own node group, in worker threads."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol

from ..errors import NoNodes, NothingNew

if TYPE_CHECKING:
    from ..events import RunSummary, TrialOutcome
    from ..launch import NodePool


class TrialLoop(Protocol):
    """What the parallel mode needs of the study loop (the Controller is one)."""

    parallel: int
    stopping: threading.Event
    summary: RunSummary
    pool: NodePool
    lock: threading.Lock

    def out_of_time(self, deadline: float | None) -> bool: ...

    def run_trial(self) -> TrialOutcome: ...

    def pause_if_infrastructure_keeps_failing(self) -> None: ...


def run_parallel(controller: TrialLoop, n_trials: int, deadline: float | None) -> None:
    """Up to `parallel` trials at once, each on its own node group, in worker threads; the
    sampler's constant liar keeps them from proposing the same point. A stop (signal here,
    a fatal error in a worker) cancels every running launch; their trials are re-queued."""
    claimed = 0
    errors: list[BaseException] = []
    no_nodes: list[str] = []

    def claim() -> bool:
        nonlocal claimed
        with controller.lock:
            if (controller.stopping.is_set() or claimed >= n_trials
                    or controller.out_of_time(deadline)):
                return False
            claimed += 1
            return True

    def worker() -> None:
        nonlocal claimed
        try:
            while claim():
                controller.summary.outcomes.append(controller.run_trial())
                controller.pause_if_infrastructure_keeps_failing()
        except NothingNew as exc:  # the sampler has nothing new: let running trials finish
            controller.summary.stopped_because = str(exc)
            controller.stopping.set()
        except NoNodes as exc:  # this worker's share of the cluster is gone; others go on
            no_nodes.append(str(exc))
            with controller.lock:
                claimed -= 1  # its trial did not run (or was queued again): another may
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            errors.append(exc)
            controller.stopping.set()
            controller.pool.cancel_all()

    threads = [threading.Thread(target=worker, name=f"autotune-trial-{i + 1}", daemon=True)
               for i in range(controller.parallel)]
    try:
        for thread in threads:
            thread.start()
        while any(t.is_alive() for t in threads):
            for thread in threads:
                thread.join(timeout=0.5)
    except BaseException:
        controller.stopping.set()
        controller.pool.cancel_all()
        for thread in threads:
            if thread.is_alive():
                thread.join()
        raise
    if errors:
        raise errors[0]
    if no_nodes and len(no_nodes) == len(threads):
        raise NoNodes(no_nodes[0])
