"""What a campaign is: one study per case (collective x nodes x ppn) in one storage, each case
study marked with the campaign's name (CAMPAIGN_ATTR), so the campaign needs no record of its own
and resumes wherever its storage is reachable."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from ..benchmarks import ALL_COLLECTIVES
from ..errors import InputError

CAMPAIGN_ATTR = "autotune.campaign"  # study user attr: CaseMark as a dict


@dataclass(frozen=True, order=True)
class Case:
    """One cell of the campaign's table. Ordered smallest allocation first."""

    nodes: int
    ppn: int
    collective: str

    @property
    def label(self) -> str:
        return f"{self.collective}-{self.nodes}n{self.ppn}p"

    @property
    def ranks(self) -> int:
        return self.nodes * self.ppn

    def study_name(self, campaign: str) -> str:
        return f"{campaign}.{self.label}"


def cases_of(collectives: tuple[str, ...], nodes: tuple[int, ...], ppn: tuple[int, ...]) -> list[Case]:
    """Every combination, in run order: fewest nodes first, then fewest ranks per node, then the
    collectives as given; so every case has its smaller neighbours finished before it starts."""
    order = {c: i for i, c in enumerate(collectives)}
    cases = {Case(n, p, c) for c, n, p in itertools.product(collectives, nodes, ppn)}
    return sorted(cases, key=lambda c: (c.nodes, c.ppn, order[c.collective]))


def parse_case(label: str) -> Case:
    """`allreduce-2n4p` -> Case."""
    collective, _, shape = label.rpartition("-")
    try:
        nodes_text, ppn_text = shape.rstrip("p").split("n")
        case = Case(int(nodes_text), int(ppn_text), collective)
    except ValueError:
        raise InputError(f"case {label!r}: expected COLLECTIVE-<nodes>n<ppn>p, e.g. allreduce-2n4p") from None
    if collective not in ALL_COLLECTIVES or case.nodes < 1 or case.ppn < 1:
        raise InputError(f"case {label!r}: expected COLLECTIVE-<nodes>n<ppn>p, e.g. allreduce-2n4p")
    return case


@dataclass(frozen=True)
class CaseMark:
    """What a case study stores about its place in the campaign."""

    campaign: str
    case: Case
    trials: int | None = None  # the campaign's --trials per case, when it gave one
    finished: float | None = None  # unix time the case's search and confirmation ended
    warm_started: tuple[str, ...] = ()  # what the neighbours queued, one line each
    agreed: bool = False  # the neighbours' confirmed winners agreed: a short search
    waiting: str = ""  # why the case could not run in the last allocation
    stopped: str = ""  # why its last run ended before the case was done

    def to_dict(self) -> dict[str, Any]:
        return {"campaign": self.campaign, "collective": self.case.collective,
                "nodes": self.case.nodes, "ppn": self.case.ppn, "trials": self.trials,
                "finished": self.finished, "warm_started": list(self.warm_started),
                "agreed": self.agreed, "waiting": self.waiting, "stopped": self.stopped}

    @classmethod
    def from_dict(cls, data: Any) -> CaseMark | None:
        """None for anything that is not a readable mark (a study of no campaign)."""
        if not isinstance(data, dict):
            return None
        try:
            case = Case(int(data["nodes"]), int(data["ppn"]), str(data["collective"]))
            if case.collective not in ALL_COLLECTIVES or case.nodes < 1 or case.ppn < 1:
                return None  # not written by autotune: never a path or a rules-file line
            finished = data.get("finished")
            trials = data.get("trials")
            return cls(campaign=str(data["campaign"]), case=case,
                       trials=None if trials is None else int(trials),
                       finished=None if finished is None else float(finished),
                       warm_started=tuple(str(x) for x in data.get("warm_started") or ()),
                       agreed=bool(data.get("agreed", False)), waiting=str(data.get("waiting", "")),
                       stopped=str(data.get("stopped", "")))
        except (KeyError, TypeError, ValueError):
            return None
