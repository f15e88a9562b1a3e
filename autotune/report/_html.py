"""The report page: one self-contained HTML file (inline CSS, no script, no CDN) that shows the
PNGs written beside it in the same directory, referenced by relative name, so the directory can be
copied or opened from a file anywhere. Every string that comes from storage is escaped."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ..units import describe_sizes, format_size, is_app_run, size_label
from ._cost import CostData, node_duration
from ._markup import (CSS, format_size_float, html_escape, html_figure, html_table,
                      times_text)
from ._model import ReportData, Verdict
from ._sizes import size_list

SECTIONS = (("result", "Result"), ("application", "The application's metric"),
            ("curves", "Latency and throughput"),
            ("speedup", "Speedup per size"), ("overlap", "Overlap per size"),
            ("history", "Search history and time"),
            ("knobs", "Knobs"), ("hockney", "Hockney model"), ("cliffs", "Protocol cliffs"),
            ("cost", "Cost"), ("rules", "Per-size rules"))


def render(data: ReportData, images: Mapping[str, str]) -> str:
    """The page; `images` maps each figure key to its file name beside the page."""
    f = data.facts
    title = f"autotune report: {f.study}"
    if is_app(data):  # an application: its metric per launch, no message sizes to plot
        sections = [_result(data), _application(data), _speedup(data, images),
                    _history(data, images), _knobs(data, images), _cost(data.cost, images)]
        shown = {"result", "application", "speedup", "history", "knobs", "cost"}
    else:
        sections = [_result(data), _curves(data, images), _speedup(data, images), _overlap(data),
                    _history(data, images), _knobs(data, images), _hockney(data, images),
                    _cliffs(data), _cost(data.cost, images), _rules(data, images)]
        shown = {k for k, _ in SECTIONS if k not in ("rules", "overlap", "application")} | (
            {"rules"} if data.rules is not None else set()) | (
            {"overlap"} if data.overlap is not None else set())
    nav = "".join(f'<li><a href="#{k}">{html_escape(t)}</a></li>' for k, t in SECTIONS
                  if k in shown)
    facts = (f"{html_escape(f.collective)} on {f.nodes} node(s) \u00d7 {f.ppn} ranks ({f.nprocs} processes), "
             f"{html_escape(describe_sizes(f.sizes))}, "
             + (f"{f.repetitions} launches per trial. " if is_app(data) else
                f"{f.repetitions} launches per size, weights {html_escape(f.weights_source)}. ")
             + "Benchmark "
             f"{html_escape(f.benchmark)}; space <code>{html_escape(f.space)}</code>; {html_escape(f.mpi)}, UCX {html_escape(f.ucx)}; "
             f"host {html_escape(f.host)} ({html_escape(f.cpu)}). {f.trials} trials: {f.complete} complete, "
             f"{f.pruned} pruned, {f.failed} failed"
             + (f", {f.skipped} proposals skipped unlaunched (already measured or refused)"
                if f.skipped else "") + f". Generated {html_escape(f.generated)}.")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{html_escape(title)}</title><style>{CSS}</style></head><body>"
            f"<h1>{html_escape(title)}</h1><p class=facts>{facts}</p><nav><ul>{nav}</ul></nav>"
            + "".join(sections)
            + "<p class=muted>Made by <code>autotune report</code> from the study's storage; "
              "every figure's numbers are in the tables or the study "
              "(<code>autotune history</code>).</p></body></html>\n")


def _result(data: ReportData) -> str:
    v, cost = data.verdict, data.cost
    kind = "warn" if "NOT RECOMMENDED" in v.headline or v.headline.startswith("UNCONFIRMED") \
        else ("none" if v.winner is None else "")
    all_sizes = data.facts.sizes
    size_lines = ""
    if data.speedup is not None:
        parts = []
        if v.faster_sizes:
            parts.append(f"<span class=faster>faster at "
                         f"{html_escape(size_list(v.faster_sizes, all_sizes))}</span>")
        if v.slower_sizes:
            parts.append(f"<span class=slower>slower at "
                         f"{html_escape(size_list(v.slower_sizes, all_sizes))}</span>")
        if v.unclear_sizes:
            parts.append(f"not told apart from the default at "
                         f"{html_escape(size_list(v.unclear_sizes, all_sizes))}")
        if not v.faster_sizes:
            parts.append("faster beyond doubt at no single size (the weighted figure pools "
                         "the sizes)")
        size_lines = (f"<p>Per size ({html_escape(data.speedup.label)}, 95% CI of the mean over the paired "
                      f"launches of the search): {'; '.join(parts)}.</p>") if not is_app(data) else ""
    trust = "".join(f"<li>{html_escape(line)}</li>" for line in v.trust)
    cost_line = (f"<p><b>Cost:</b> this search spent {html_escape(node_duration(cost.spent_node_seconds))} "
                 f"of benchmark time ({cost.configs_measured} configurations launched). The "
                 f"manual staged sweep over the same space would have measured "
                 f"{html_escape(cost.staged)} configurations, an estimated "
                 f"{html_escape(node_duration(cost.staged_seconds * cost.nodes))}; the full grid "
                 f"{html_escape(cost.grid)} configurations, an estimated "
                 f"{html_escape(node_duration(cost.grid_seconds * cost.nodes))} (see <a href=\"#cost\">Cost"
                 "</a>).</p>")
    return (f'<section id="result"><h2>Result</h2><div class="verdict {kind}">'
            f"<p class=headline>{html_escape(v.headline)}</p>{size_lines}"
            f"<p class=muted>{html_escape(v.confirmation_note)}</p>"
            + (f"<ul>{trust}</ul>" if trust else "") + _rules_line(data) + cost_line + "</div>"
            + _settings(v) + (
                "<p><b>Plus the per-size rules</b>: <code>autotune export --format ompi-rules -o "
                "FILE</code> writes them with the two MCA settings that make Open MPI read them "
                "(see <a href=\"#rules\">Per-size rules</a>).</p>"
                if data.rules is not None and data.rules.adopted else "")
            + _candidates(v) + "</section>")


def _rules_line(data: ReportData) -> str:
    """The per-size stage's verdict in the result box: adopted rules are part of the answer."""
    rules = data.rules
    if rules is None:
        return ""
    what = ("<b>Per-size rules adopted</b> (deploy with <code>autotune export --format "
            "ompi-rules</code>): " if rules.adopted else "<b>Per-size rules:</b> ")
    return f'<p>{what}{html_escape(rules.failed or rules.verdict)} (see <a href="#rules">Per-size rules</a>).</p>'


def _settings(v: Verdict) -> str:
    if v.winner is None:
        return ("<h3>Settings to deploy</h3><p>None: the untuned stack (no UCX, MCA or mpirun "
                "setting) is the answer.</p>")
    rows = [(kind, name, value) for kind, name, value in v.settings]
    return (f"<h3>Settings to deploy (trial {v.winner})</h3>"
            + (html_table(("kind", "name", "value"), rows) if rows else
               "<p>Trial sets nothing beyond the default.</p>")
            + "<p class=muted><code>autotune export --format env -o best.env</code> writes them "
              "as a file to source.</p>")


def _candidates(v: Verdict) -> str:
    if not v.candidates:
        return ""
    rows = [(c.trial, c.changes, times_text(c.search_speedup), times_text(c.speedup),
             f"{times_text(c.low)}..{times_text(c.high)}" if c.low is not None else "\u2013", c.verdict,
             c.rounds) for c in v.candidates]
    return ("<h3>Candidates</h3>"
            + html_table(("trial", "its knobs (where not the default's)", "search speedup",
                      "confirmed speedup", "interval", "verdict", "rounds"), rows, (0, 2, 3, 6)))


def is_app(data: ReportData) -> bool:
    """A study of an application (--benchmark app): one value per launch, no message sizes."""
    return is_app_run(data.facts.sizes)


def _application(data: ReportData) -> str:
    """What the application's launches gave: its metric per configuration, as measured."""
    rows = []
    for cc in data.curves:
        if cc.curve.t_us:
            low = cc.curve.low_us[0] if cc.curve.low_us else None
            high = cc.curve.high_us[0] if cc.curve.high_us else None
            rows.append((cc.label, cc.launches[0] if cc.launches else 0, f"{cc.curve.t_us[0]:.4g}",
                         f"{low:.4g}..{high:.4g}" if low is not None and high is not None else ""))
    return ('<section id="application"><h2>The application\'s metric</h2>'
            f"<p>Measured: {html_escape(data.facts.benchmark)}. Every launch runs the program once "
            "under the configuration's settings and gives one value; each candidate's launches are "
            "paired with launches of the untuned stack seconds apart, as for a microbenchmark. "
            "A rate (higher is better) is shown as its reciprocal, the value scored.</p>"
            + html_table(("configuration", "launches", "value (geometric mean)", "95% CI"), rows,
                         (1, 2))
            + "</section>")


def _curves(data: ReportData, images: Mapping[str, str]) -> str:
    knobs = html_table(("configuration", "launches per size", "protocol knobs in force"),
                   [(cc.label, _range(cc.launches),
                     ", ".join(f"{k}={val}" for k, val in cc.knobs)) for cc in data.curves])
    nbc = ""
    if data.overlap is not None:
        nbc = ("<p><b>A non-blocking collective</b>: the curves show "
               + ("t_pure, the time of the collective alone (start and wait)"
                  if data.objective == "latency" else
                  "t_ovrl, the time of the collective started, a CPU load as long as it, and "
                  "waited for" + (" (of each configuration's own launches: the study scored "
                                  "the overlap, not a time)" if data.objective == "overlap"
                                  else ""))
               + '; the overlap itself is in <a href="#overlap">Overlap per size</a>.</p>')
    return ('<section id="curves"><h2>Latency and throughput vs message size</h2>' + nbc
            + html_figure(images, "latency", "latency vs message size",
                      "Time per call (max over ranks) against message size, both axes "
                      "logarithmic. Each line is the geometric mean over the configuration's "
                      "launches; the shaded band is the 95% confidence interval of that mean "
                      "(Student t on log times). The untuned default is drawn from the default "
                      "launches interleaved with the best's own (the same minutes, so the two "
                      "compare directly); the other candidates ran at other times, when the "
                      "machine may have been faster or slower (see the drift below).")
            + html_figure(images, "throughput", "throughput vs message size",
                      f"Throughput = effective bytes / time, with effective bytes = "
                      f"{html_escape(data.hockney.volume)} for {html_escape(data.facts.collective)} "
                      f"({data.hockney.volume_factor:g} \u00d7 M on {data.facts.nprocs} ranks). "
                      "Red arrows mark protocol cliffs: the throughput falls to the next larger "
                      "size by more than the two sizes' bands allow (table in "
                      "<a href=\"#cliffs\">Protocol cliffs</a>).")
            + knobs + "</section>")


def _range(counts: Sequence[int]) -> str:
    low, high = min(counts, default=0), max(counts, default=0)
    return str(low) if low == high else f"{low}..{high}"


def _speedup(data: ReportData, images: Mapping[str, str]) -> str:
    s = data.speedup
    table = ""
    if s is not None:
        table = html_table(("size", "weight", "speedup", "95% CI", "launches",
                        "contribution (weight \u00d7 ln speedup, pp)"),
                       [(size_label(r.size), f"{r.weight:.1%}", times_text(r.speedup),
                         f"{times_text(r.low)}..{times_text(r.high)}", r.launches,
                         f"{100 * r.contribution:+.2f}")
                        for r in s.sizes], (1, 2, 4, 5))
        table += (f"<p>Weighted over the sizes (mean-based, from the same launches): "
                  f"{times_text(s.weighted)}. The confirmation figure in the result is measured apart, in "
                  "interleaved rounds.</p>")
    return ('<section id="speedup"><h2>Speedup per message size</h2>'
            + html_figure(images, "speedup", "speedup of the best over the default per size",
                      "Top: per size, the mean over the search's launches of log(t / t of the "
                      "default launch paired with it), shown as speedup with its 95% interval "
                      "(per size, not simultaneous). Green: faster beyond doubt, red: slower "
                      "beyond doubt, grey: not told apart. Bottom: the weight of each size in "
                      "the score, and its contribution to the weighted gain (weight \u00d7 ln "
                      "speedup, in percentage points; they add up to ln of the weighted speedup): "
                      "the sizes with tall bars drive the result.",
                      "No figure: no configuration besides the default completed, so there is "
                      "nothing to compare size by size.")
            + table + "</section>")


OBJECTIVE_TEXT = {
    "latency": "the study scored t_pure (the collective alone), as for a blocking collective",
    "t_ovrl": "the study scored t_ovrl: a speedup of 1.2x is a t_ovrl 1.2x shorter",
    "overlap": "the study scored the exposed share 2 \u2212 overlap/100 (1: all of the "
               "collective hidden behind the CPU load, 2: none): a speedup of 1.2x is an exposed "
               "share 1.2x smaller",
}


def _overlap(data: ReportData) -> str:
    """Overlap per size: default against best, IMB-NBC's columns (non-blocking only)."""
    o = data.overlap
    if o is None:
        return ""
    sides = [s for s in (o.default, o.best) if s is not None]
    if not sides:
        return ('<section id="overlap"><h2>Overlap per size</h2><p class=muted>No launch of '
                "the default or of the best stored IMB-NBC's columns.</p></section>")
    header = ["size"] + [f"{side.label}: {c}" for side in sides
                         for c in ("t_pure (us)", "t_ovrl (us)", "t_CPU (us)", "overlap")]
    rows = []
    for size in o.sizes:
        row: list[object] = [format_size(size)]
        for side in sides:
            r = side.row(size)
            row += (["\u2013"] * 4 if r is None else
                    [f"{r.t_pure_us:.2f}", f"{r.t_ovrl_us:.2f}", f"{r.t_cpu_us:.2f}",
                     f"{r.overlap_pct:.1f}%"])
        rows.append(row)
    numeric = range(1, len(header))
    return ('<section id="overlap"><h2>Overlap per size: default vs best</h2>'
            "<p>IMB-NBC's method: t_pure is the collective alone (start and wait), "
            "t_CPU a computation calibrated to last about t_pure, t_ovrl the collective started, "
            "that computation, then the wait; overlap = 100 \u00d7 max(0, min(1, (t_pure + "
            "t_CPU \u2212 t_ovrl) / max(t_pure, t_CPU))), of the rank with the largest t_ovrl. "
            "100% means the collective was entirely hidden; 0% means it only progressed inside "
            "MPI calls. Each value is the trimmed mean over the configuration's own launches; "
            f"{html_escape(OBJECTIVE_TEXT.get(o.objective, o.objective))}.</p>"
            + html_table(header, rows, numeric) + "</section>")


def _history(data: ReportData, images: Mapping[str, str]) -> str:
    return ('<section id="history"><h2>Search history and where the time went</h2>'
            + html_figure(images, "history", "optimization history",
                      "Top: each trial's speedup over its interleaved default (log scale); a "
                      "pruned trial shows its partial figure over the sizes it measured before it "
                      "was stopped; failed trials sit at the bottom. Green steps: best so far. "
                      "The default itself (star) is scored like a candidate: its distance from "
                      "1.0x is the noise. Bottom: each default launch's time relative to the "
                      "run's first, per size block: the machine's drift that pairing cancels.")
            + html_figure(images, "seconds", "benchmark seconds by purpose",
                      "Wall time of the benchmark launches by purpose. The confirmation's time "
                      "is estimated (its launches \u00d7 this study's mean launch time); "
                      "controller and idle time are not included.")
            + "</section>")


def _knobs(data: ReportData, images: Mapping[str, str]) -> str:
    imp = data.importance
    rows = [(k, f"{v:.1%}") for k, v in imp.importances]
    return ('<section id="knobs"><h2>Knobs: importance and best value</h2>'
            + html_figure(images, "importance", "parameter importance and best value per knob",
                      f"Top: {html_escape(imp.evaluator)} over the completed trials: how much of the "
                      "variation of the score each knob explains. "
                      + (html_escape(imp.note) + ". " if imp.note else "")
                      + "Below: for every knob value, the best speedup any completed trial with "
                        "that value reached (n = completed trials with it).",
                      f"No figure: no knob took two values among the completed trials "
                      f"({(imp.note or 'nothing to compare').rstrip('.')}).")
            + (html_table(("knob", "importance"), rows, (1,)) if rows else "")
            + "</section>")


def _hockney(data: ReportData, images: Mapping[str, str]) -> str:
    h = data.hockney
    rows = []
    for cc, fit in h.fits:
        for r in fit.regions:
            rows.append((cc.label, f"{format_size(r.min_bytes)}..{format_size(r.max_bytes)}",
                         r.points, f"{r.t_latency_us:.2f}",
                         "\u221e (latency-bound)" if not math.isfinite(r.bandwidth_mb_s)
                         else f"{r.bandwidth_mb_s:,.0f}",
                         "\u221e" if not math.isfinite(r.m_half_bytes)
                         else format_size_float(r.m_half_bytes)))
    return ('<section id="hockney"><h2>Hockney model per configuration</h2>'
            + html_figure(images, "hockney", "Hockney model fits",
                      f"t = t_L + V/B fitted per message-size region (a protocol switch starts a "
                      f"new region), with V the effective volume {html_escape(h.volume)} of "
                      f"{html_escape(h.collective)} ({h.volume_factor:g} \u00d7 M on {h.nprocs} ranks). "
                      "Points: measured means; lines: the model.",
                      "No figure: no curve has the 3 sizes a fit needs.")
            + (html_table(("configuration", "region (message size)", "sizes", "t_L (\u00b5s)",
                       "B (MB/s)", "M_half = B \u00d7 t_L (effective bytes)"), rows, (2, 3, 4, 5))
               if rows else "")
            + "</section>")


def _cliffs(data: ReportData) -> str:
    if not data.cliffs:
        body = ("<p>No cliff: no configuration's throughput falls from one size to the next by "
                "more than the noise of its two sizes.</p>")
    else:
        body = html_table(("configuration", "from", "to", "throughput (MB/s)", "drop", "noise allowed",
                       "knobs in force"),
                      [(c.label, format_size(c.cliff.before_bytes),
                        format_size(c.cliff.after_bytes),
                        f"{c.cliff.throughput_before_mb_s:,.0f} \u2192 "
                        f"{c.cliff.throughput_after_mb_s:,.0f}",
                        f"{c.cliff.drop:.0%}", f"{c.cliff.noise:.0%}",
                        ", ".join(f"{k}={v}" for k, v in c.knobs)) for c in data.cliffs],
                      (3, 4, 5))
    return ('<section id="cliffs"><h2>Protocol cliffs</h2><p>Sizes where the throughput falls '
            "between neighbouring sizes by more than the noise (the two sizes' 95% bands): often "
            "a protocol switch, eager to rendezvous (UCX_RNDV_THRESH) or copy to zero-copy "
            "(UCX_ZCOPY_THRESH), or another algorithm.</p>" + body + "</section>")


def _cost(cost: CostData, images: Mapping[str, str]) -> str:
    stages = "; ".join(f"stage {i + 1}: {', '.join(s)}" for i, s in enumerate(cost.stages))
    n = cost.nodes
    rows = [("this search (measured)", cost.configs_measured, "\u2013", "\u2013",
             f"{cost.spent_seconds:,.0f}", f"{cost.spent_node_seconds:,.0f}",
             node_duration(cost.spent_node_seconds)),
            ("staged sweep (estimated)", str(cost.staged), cost.launches_per_config,
             f"{cost.mean_launch_seconds:.2f}", f"{cost.staged_seconds:,.0f}",
             f"{cost.staged_seconds * n:,.0f}", node_duration(cost.staged_seconds * n)),
            ("full grid (estimated)", str(cost.grid), cost.launches_per_config,
             f"{cost.mean_launch_seconds:.2f}", f"{cost.grid_seconds:,.0f}",
             f"{cost.grid_seconds * n:,.0f}", node_duration(cost.grid_seconds * n))]
    note = (f"<p class=muted>{html_escape(cost.note)}</p>" if cost.note else "")
    return ('<section id="cost"><h2>Cost: this search against the manual ways</h2>'
            + html_figure(images, "cost", "cost comparison",
                      "Benchmark node-seconds (log scale). The alternatives are estimates, priced at this "
                      "study's own measured launch time: configurations \u00d7 launches per "
                      "configuration \u00d7 mean launch seconds \u00d7 nodes.")
            + html_table(("method", "configurations", "launches each", "mean launch (s)",
                      "seconds", "node-seconds", "in words"), rows, (1, 2, 3, 4, 5))
            + f"<p>The staged sweep sweeps each stage's knobs jointly with the earlier stages "
              f"fixed ({html_escape(stages)}); it is counted with each stage fixed to this study's best "
              f"values, every configuration measured once in full ({cost.repetitions} launches "
              "per size block, no pruning), like the <code>--strategy staged</code> yardstick. "
              "The full grid is every distinct configuration of the same space (conditional "
              "knobs counted only where they apply). The search's own figure includes its "
              "interleaved default launches and the confirmation.</p>"
            + note + "</section>")


def _rules(data: ReportData, images: Mapping[str, str]) -> str:
    """Per-size rules (which algorithm per message-size band), only when the study holds them."""
    stored = data.rules
    if stored is None:
        return ""
    head = ('<section id="rules"><h2>Per-size rules</h2>'
            f"<p><b>{html_escape(stored.failed or stored.verdict)}</b></p>")
    if stored.rules is None:
        return head + "</section>"
    rules = stored.rules
    rows = [(band.label(), band.choice.label(), next(
        (v.source for v in stored.variants if v.choice == band.choice), "")) for band in rules.bands]
    compared = [(what, c.text()) for what, c in (
        ("composed rules over the untuned stack", stored.vs_default),
        ("composed rules over the best single configuration", stored.vs_single),
        ("best single configuration over the untuned stack", stored.single_vs_default),
        *((f"composed rules over the best single configuration at {label}", c)
          for label, c in stored.band_gains.items()))
        if c is not None]
    caption = ("Time of every algorithm at every size over the best configuration's own "
               f"algorithm (below 1: faster), geometric mean of {stored.rounds} interleaved "
               "rounds, launched with the best configuration's other settings; shaded: the bands "
               "chosen (an algorithm takes a band only where it is faster beyond doubt, and a "
               "band must be worth more than 1% of the weighted score).")
    return (head + f"<p>{html_escape(rules.collective)} on {rules.comm_size} ranks ({html_escape(rules.stack)} "
            "coll_tuned): the algorithm per message-size band.</p>"
            + html_table(("message sizes", "algorithm", "sub-parameters from"), rows)
            + html_figure(images, "rules", "per-size rules", html_escape(caption))
            + (html_table(("comparison (95% CI, simultaneous over the comparisons, paired rounds)", "speedup"),
                      compared) if compared else "")
            + (f"<p class=muted>rules file used for the composed launches: "
               f"<code>{html_escape(stored.rules_file)}</code>; <code>autotune export --format ompi-rules"
               "</code> writes it with its settings when the rules are adopted.</p>"
               if stored.rules_file else "")
            + "</section>")
