"""Campaigns: tune a table of cases (collectives x nodes x ppn), one study per case in one
storage, each warm-started from its finished neighbours, resumable like a single study.

`_model` (cases and the mark each case study carries), `_warm` (neighbours and what they give),
`_run` (the loop), `_status` (read from storage alone)."""

from __future__ import annotations

from ._model import CAMPAIGN_ATTR, Case, CaseMark, cases_of, parse_case
from ._run import (UNBOUNDED_TRIALS, CampaignOptions, CampaignOutcome, CampaignRunner,
                   case_options, register_cases)
from ._status import (CampaignStatus, CaseStatus, campaign_name, campaign_status, case_studies,
                      case_status)
from ._warm import Candidate, case_candidates, distance, nearest, winners_agree
from ._export import export_campaign
from ._page import cost_line, write_campaign_report


def allocation_nodes(options) -> int | None:
    """Nodes this allocation offers (hostfile, Slurm, this machine), or None where they are
    counted only on connecting (a Ray cluster)."""
    from ..launch import make_launcher, pick_launcher
    from ..probe import probe_capabilities

    choice, why = pick_launcher(options)
    if choice == "ray":
        return None
    launcher, _ = make_launcher(options, probe_capabilities(), choice, why)
    return len(launcher.hosts())


__all__ = ["CAMPAIGN_ATTR", "CampaignOptions", "CampaignOutcome", "CampaignRunner",
           "CampaignStatus", "Candidate", "Case", "CaseMark", "CaseStatus", "UNBOUNDED_TRIALS",
           "allocation_nodes", "campaign_name", "campaign_status", "case_candidates",
           "case_options", "case_status", "case_studies", "cases_of", "cost_line", "distance",
           "export_campaign", "nearest", "parse_case", "register_cases", "winners_agree",
           "write_campaign_report"]
