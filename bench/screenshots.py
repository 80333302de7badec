"""The README's screenshots, rendered in headless Chromium from a real store and a real report.

    python -m bench.screenshots --tracking-uri sqlite:///mlflow.db --experiment quickstart \\
        --report reports/quickstart/report.html --out docs/images

Writes docs/images/mlflow-reward-by-language.png (the saved view `mlgrpo ui` opens first, served by a
real `mlflow server` on 127.0.0.1) and docs/images/report-first-screen.png (the top of report.html), as
palette PNGs so that they stay small in git. The MLflow assistant panel is closed first: it is a chat
box, not part of what mlgrpo shows. Needs chromium (Debian: apt-get install chromium).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.browser import Chromium

VIEW = "mlgrpo-reward-by-language"
CHARTS = "document.querySelectorAll('.js-plotly-plot').length >= 4"
CLOSE_ASSISTANT = ("(() => { const b = document.querySelector('[data-component-id=\"mlflow.assistant.chat_panel.close\"]');"
                   " if (b) b.click(); return true; })()")


def mlflow_view(uri: str, experiment: str, out: Path, width: int = 1440, height: int = 1000) -> Path:
    from mlgrpo.tracking.server import MlflowServer
    from mlgrpo.tracking.views import view_url, write_views

    experiment_id, views, warnings = write_views(uri, experiment)
    if warnings or not any(v.key == VIEW for v in views):
        raise SystemExit(f"no view {VIEW} for {experiment!r}: {'; '.join(warnings) or 'no train/reward metrics'}")
    with MlflowServer(uri) as server, Chromium(width=width, height=height) as browser:
        server.wait_ready()
        browser.open(view_url(server.url, experiment_id, VIEW))
        browser.wait_for(CHARTS)
        browser.evaluate(CLOSE_ASSISTANT)
        browser.wait_for(CHARTS + " && !document.querySelector('[data-component-id=\"mlflow.assistant.chat_panel.close\"]')")
        browser.evaluate("new Promise(done => setTimeout(done, 1500))")  # charts re-laid out to the wider page
        return small_png(browser.screenshot(out / "mlflow-reward-by-language.png"))


def report_first_screen(report: Path, out: Path, width: int = 1280, height: int = 1500) -> Path:
    with Chromium(width=width, height=height) as browser:
        browser.open(report.resolve().as_uri())
        browser.wait_for("document.readyState === 'complete' && Array.from(document.images).every(i => i.complete)")
        return small_png(browser.screenshot(out / "report-first-screen.png"))


def small_png(path: Path, colours: int = 128) -> Path:
    """The screenshot as a palette PNG: a few times smaller, and screenshots have few colours anyway."""
    from PIL import Image

    with Image.open(path) as image:
        image.convert("RGB").quantize(colors=colours, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tracking-uri", required=True)
    parser.add_argument("--experiment", default="quickstart")
    parser.add_argument("--report", type=Path, required=True, help="a report.html written by mlgrpo run / report")
    parser.add_argument("--out", type=Path, default=Path("docs/images"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for path in (mlflow_view(args.tracking_uri, args.experiment, args.out), report_first_screen(args.report, args.out)):
        print(f"{path} ({path.stat().st_size / 1024:.0f} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
