"""report.html in a real headless Chromium: hostile text stays text, no script runs, the embedded figure shows.

Skipped when no Chromium-family browser is installed (.ci/run installs the Debian `chromium` package
when it can). About 1-3 s per browser call.
"""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from bench.browser import NO_CHROMIUM, find_chromium
from mlgrpo.reports.render import write_html

BROWSER = find_chromium()
pytestmark = pytest.mark.skipif(BROWSER is None, reason=NO_CHROMIUM)

# The hostile report of test_render.py; loaded by path because tests are not a package (--import-mode=importlib).
_spec = importlib.util.spec_from_file_location("_report_fixture", Path(__file__).with_name("test_render.py"))
_fixture = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixture)


def _browser(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    command = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
               f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,2000", *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        pytest.fail(f"{BROWSER} exited with {result.returncode}; its stderr ends:\n{result.stderr[-2000:]}")
    return result


@pytest.fixture
def page(tmp_path) -> Path:
    write_html(_fixture.make_report(tmp_path), tmp_path / "report.html")
    return tmp_path / "report.html"


def test_dom_has_no_script_and_shows_the_text(tmp_path, page):
    dom = _browser(tmp_path, "--dump-dom", page.as_uri()).stdout
    assert "<script" not in dom.lower()
    parser = _fixture._Collector()  # the DOM as the browser built it, checked like the source in test_render
    parser.feed(dom)
    assert {tag for tag, _ in parser.tags} <= _fixture.ALLOWED_TAGS
    assert not any(name.startswith("on") for _, attrs in parser.tags for name in attrs)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom  # shown, as text
    assert "&lt;img src=x onerror=alert(1)&gt;" in dom
    assert dom.count("<img ") == 1 and '<img src="data:image/png;base64,' in dom
    assert "<b>" not in dom


def test_screenshot_shows_the_embedded_figure(tmp_path, page):
    shot = tmp_path / "shot.png"
    _browser(tmp_path, f"--screenshot={shot}", page.as_uri())
    pixels = imread(shot)[..., :3]
    assert pixels.std() > 0, "blank screenshot"
    magenta = (pixels[..., 0] > 0.9) & (pixels[..., 1] < 0.1) & (pixels[..., 2] > 0.9)
    assert magenta.sum() > 1000, "the figure (a magenta PNG) was not decoded: blocked by the CSP, or not embedded"
    rgb = (pixels * 255).astype(np.uint32) @ np.array([1 << 16, 1 << 8, 1], dtype=np.uint32)
    assert np.unique(rgb).size > 10  # text and table shading drawn, not one block of colour
