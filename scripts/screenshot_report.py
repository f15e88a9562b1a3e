#!/usr/bin/env python3
"""Screenshot an `autotune report` page with headless Chromium, as a person would see it.

    .venv/bin/python scripts/screenshot_report.py DIR/index.html -o shot.png [--width 1400]
        [--parts N]   # also write shot-1.png.. shot-N.png, slices of at most --width px height

Chromium shoots a fixed window; the page's height is not known beforehand, so the window is made
tall (--max-height) and the blank space below the page is trimmed afterwards (Pillow). Slices
are there because image viewers shrink a 1400 x 9000 picture until nothing can be read.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image, ImageChops

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


def find_browser(given: str | None) -> str:
    for name in ((given,) if given else BROWSERS):
        path = shutil.which(name)
        if path:
            return path
    sys.exit(f"screenshot_report: no browser found ({', '.join(BROWSERS)}); "
             "Debian: apt-get install chromium")


def shoot(browser: str, page: Path, out: Path, width: int, max_height: int) -> Image.Image:
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw.png"
        argv = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                f"--user-data-dir={tmp}/profile", f"--screenshot={raw}",
                f"--window-size={width},{max_height}", page.resolve().as_uri()]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0 or not raw.exists():
            sys.exit(f"screenshot_report: {browser} failed ({proc.returncode}): "
                     f"{proc.stderr.strip()[-500:]}")
        image = Image.open(raw).convert("RGB")
        image.load()
    white = Image.new("RGB", image.size, (255, 255, 255))
    box = ImageChops.difference(image, white).getbbox()
    bottom = min(image.size[1], (box[3] if box else image.size[1]) + 24)
    if box and box[3] >= image.size[1] - 1:
        print(f"screenshot_report: the page is taller than {max_height} px; raise --max-height",
              file=sys.stderr)
    trimmed = image.crop((0, 0, image.size[0], bottom))
    trimmed.save(out)
    return trimmed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=Path, help="the report's index.html")
    parser.add_argument("-o", "--output", type=Path, default=Path("report-screenshot.png"))
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--max-height", type=int, default=16000)
    parser.add_argument("--parts", action="store_true",
                        help="also write slices NAME-1.png, NAME-2.png, ... of --width px height")
    parser.add_argument("--browser", default=None, help="browser executable (default: chromium)")
    args = parser.parse_args()
    if not args.page.is_file():
        sys.exit(f"screenshot_report: {args.page}: no such file")
    image = shoot(find_browser(args.browser), args.page, args.output, args.width, args.max_height)
    print(f"{args.output}: {image.size[0]} x {image.size[1]} px")
    if args.parts:
        step = args.width
        for n, top in enumerate(range(0, image.size[1], step), start=1):
            part = args.output.with_name(f"{args.output.stem}-{n}{args.output.suffix}")
            image.crop((0, top, image.size[0], min(top + step, image.size[1]))).save(part)
            print(part)


if __name__ == "__main__":
    main()
