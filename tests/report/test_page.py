"""`autotune report` on a real small study (real mpirun, 2 ranks, SQLite), read as a person
would: the page parses, every figure it shows is there and is a picture of something, the page
needs nothing but its directory, and headless Chromium renders it."""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests import cli_runner

ROOT = Path(__file__).resolve().parents[2]
SPACE = Path(__file__).resolve().parent / "data" / "two-knobs.yaml"
FIGURES = {"latency.png", "throughput.png", "speedup.png", "history.png", "seconds.png",
           "importance.png", "hockney.png", "cost.png"}

pytestmark = pytest.mark.mpi


class Page(HTMLParser):
    """Every <img>, every href/src, the visible text and the section ids."""

    def __init__(self) -> None:
        super().__init__()
        self.images: list[dict[str, str]] = []
        self.links: list[str] = []
        self.ids: list[str] = []
        self.text: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):  # noqa: ANN001
        attrs = dict(attrs)
        self.tags.append(tag)
        if tag == "img":
            self.images.append(attrs)
        for key in ("href", "src"):
            if attrs.get(key):
                self.links.append(attrs[key])
        if attrs.get("id"):
            self.ids.append(attrs["id"])

    def handle_data(self, data):  # noqa: ANN001
        self.text.append(data)


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory, mpirun):
    home = tmp_path_factory.mktemp("home")
    run = cli_runner(home, home)
    # the staged sweep measures all 4 configurations in full: no pruning, nothing left to luck
    run("start", "--collective", "allreduce", "--nodes", "1", "--ppn", "2", "--trials", "4",
        "--space", str(SPACE), "--strategy", "staged", "--sizes", "8:512", "--repetitions", "3",
        "--stages", "2", "--time-per-size", "0.003", "--seed", "7", "--confirm", "2",
        "--confirm-rounds", "2", "--confirm-max-rounds", "2", "--no-verify", "--foreground",
        check=True)
    out = home / "report"
    proc = run("report", "-o", str(out), check=True)
    return out, proc, run


def parse(out: Path) -> Page:
    page = Page()
    page.feed((out / "index.html").read_text(encoding="utf-8"))
    return page


def test_every_figure_is_shown_and_beside_the_page(report_dir):
    out, proc, _ = report_dir
    assert "report written" in proc.stdout and str(out / "index.html") in proc.stdout
    page = parse(out)
    sources = [img["src"] for img in page.images]
    assert set(sources) == FIGURES and len(sources) == len(FIGURES)
    assert all(img.get("alt") for img in page.images)
    for name in sources:
        assert (out / name).is_file() and "/" not in name  # relative, in the same directory


def test_no_figure_is_empty(report_dir):
    out, _, _ = report_dir
    for name in FIGURES:
        with Image.open(out / name) as image:
            assert image.format == "PNG"
            image.load()
            rgb = image.convert("RGB")
            assert rgb.width >= 600 and rgb.height >= 250, name
            extrema = rgb.getextrema()
            assert any(high - low > 100 for low, high in extrema), f"{name} is one flat colour"
            # a figure that lost its data keeps only frames and a title: under 2% of its pixels
            # inked; curves, bands, bars and grids ink far more
            pixels = np.asarray(rgb, dtype=int)
            inked = float((pixels.min(axis=2) < 240).mean())
            assert inked > 0.025, f"{name}: almost blank ({inked:.1%} of pixels inked)"


def test_the_page_works_from_a_file_alone(report_dir):
    out, _, _ = report_dir
    page = parse(out)
    external = [link for link in page.links
                if "://" in link or link.startswith("//") or link.startswith("data:text")]
    assert external == []
    assert "script" not in page.tags and "link" not in page.tags  # inline CSS, no script
    for link in page.links:
        if link.startswith("#"):
            assert link[1:] in page.ids, link


def test_a_person_can_read_who_won_by_how_much_where_and_at_what_cost(report_dir):
    out, _, _ = report_dir
    text = " ".join(" ".join(parse(out).text).split())
    assert "Result" in text
    assert ("as fast as the untuned default" in text and "CI" in text) or \
        "keep the untuned stack" in text or "UNCONFIRMED" in text
    assert "Per size (trial" in text and "95% CI of the mean over the paired launches" in text
    assert "manual staged sweep over the same space" in text and "an estimated" in text and "full grid" in text
    assert "node-" in text  # costs in node-seconds / -minutes / -hours
    # the test space: UCX_TLS 2 x UCX_RNDV_THRESH 2 = 4 configurations
    assert "4 configurations" in text
    for heading in ("Latency and throughput vs message size", "Speedup per message size",
                    "Hockney model per configuration", "Protocol cliffs",
                    "Cost: this search against the manual ways"):
        assert heading in text


def test_chromium_renders_the_page_with_its_figures(report_dir, tmp_path):
    out, _, _ = report_dir
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    assert browser, "headless Chromium is needed to render the report (Debian: chromium)"
    shot = tmp_path / "shot.png"
    proc = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
         "--window-size=1400,14000", (out / "index.html").as_uri()],
        capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)})
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    with Image.open(shot) as image:
        pixels = np.asarray(image.convert("RGB"), dtype=int)
    # every figure is shown at its own size (none is wider than the page's column), so a page
    # whose images all loaded is taller than the figures stacked; broken images collapse it
    figures_height = 0
    for name in FIGURES:
        with Image.open(out / name) as image:
            assert image.width <= 1140, f"{name} is wider than the page's column"
            figures_height += image.height
    inked = np.nonzero((pixels.min(axis=2) < 200).any(axis=1))[0]
    assert inked[-1] > figures_height, (inked[-1], figures_height)


def test_bad_output_paths_and_studies_are_one_line_errors(report_dir, tmp_path):
    _, _, run = report_dir
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    proc = run("report", "-o", str(link))
    assert proc.returncode == 2 and "symlink" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert not any(target.iterdir())
    afile = tmp_path / "afile"
    afile.write_text("x")
    proc = run("report", "-o", str(afile))
    assert proc.returncode != 0 and "autotune: error:" in proc.stderr
    proc = run("report", "--study", "no-such-study", "-o", str(tmp_path / "r"))
    assert proc.returncode != 0 and "no-such-study" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and not (tmp_path / "r").exists()
