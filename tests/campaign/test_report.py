from autotune.campaign import Case, CaseStatus
from autotune.campaign._page import render
from autotune.campaign._report import CampaignReportData, CaseRow, patterns


def _row(label: str, winner: dict, speedup=1.2, ci=(1.1, 1.3), spent=60.0) -> CaseRow:
    collective, shape = label.rsplit("-", 1)
    nodes, ppn = (int(x) for x in shape.rstrip("p").split("n"))
    case = Case(nodes, ppn, collective)
    status = CaseStatus(case=case, study=f"c.{label}", state="done", detail="", trials=10,
                        speedup=speedup if winner else 1.0, speedup_ci=ci if winner else None,
                        best_is_default=not winner, bench_node_seconds=spent)
    return CaseRow(case=case, study=f"c.{label}", status=status, winner=winner, launches=40,
                   spent_node_seconds=spent, staged_node_seconds=spent * 3,
                   grid_node_seconds=spent * 500, staged_configs=90, grid_configs=13000)


ROWS = (_row("allreduce-1n2p", {"UCX_ZCOPY_THRESH": "128kb", "UCX_TLS": "self,sm"}),
        _row("allgather-1n2p", {"UCX_ZCOPY_THRESH": "128kb", "mapping": "cyclic"}),
        _row("alltoall-1n2p", {"UCX_ZCOPY_THRESH": "128kb", "UCX_TLS": "self,sm"}),
        _row("allreduce-2n2p", {}))


def test_patterns_are_values_shared_by_winners_most_shared_first():
    found = patterns(ROWS)
    assert [(p.knob, p.value, len(p.cases), p.winners) for p in found] == [
        ("UCX_ZCOPY_THRESH", "128kb", 3, 3), ("UCX_TLS", "self,sm", 2, 3)]
    assert found[1].cases == ("allreduce-1n2p", "alltoall-1n2p")
    assert patterns(ROWS[:1])[0].winners == 1  # a lone winner's values are its pattern
    assert patterns(ROWS[3:]) == ()


def test_page_has_the_winners_table_patterns_and_cost_totals():
    import dataclasses

    rows = (dataclasses.replace(ROWS[0], link="allreduce-1n2p/index.html"), *ROWS[1:])
    data = CampaignReportData(name="c<1>", storage="sqlite:///x", rows=rows,
                              knobs=("UCX_TLS", "UCX_ZCOPY_THRESH", "mapping"),
                              patterns=patterns(ROWS))
    page = render(data, {"gain": "campaign-gain.png"})
    assert "c&lt;1&gt;" in page and "<1>" not in page
    assert "1.200x (1.100..1.300)" in page and "untuned stays" in page
    assert page.count("<tr>") == 1 + 4 + 1 + 2 + 1 + 4  # winners, patterns, cost (head + rows)
    assert "4.0 node-minutes of benchmark time spent" in page
    assert "3.0x and 500x what was spent" in page
    assert '<td><a href="allreduce-1n2p/index.html">report</a></td>' in page
    assert "<th>UCX_<wbr>ZCOPY_<wbr>THRESH</th>" in page and "&lt;a" not in page
    assert 'src="campaign-gain.png"' in page and "campaign-cost.png" not in page
