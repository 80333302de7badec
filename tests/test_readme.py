"""README.md stays a page a newcomer reads in ten minutes, and what it shows is the code's own."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_is_short():
    assert len(README.splitlines()) <= 250


def test_the_quickstart_experiment_is_shown_whole_as_it_ships():
    shipped = (ROOT / "experiments" / "quickstart.yaml").read_text(encoding="utf-8").rstrip()
    assert f"```yaml\n{shipped}\n```" in README, "README's quickstart YAML differs from experiments/quickstart.yaml"


def test_every_link_and_image_points_at_a_file():
    targets = re.findall(r"\]\(([^)#]+)\)", README)
    local = [t for t in targets if not t.startswith("http")]
    assert local and all((ROOT / t).exists() for t in local), [t for t in local if not (ROOT / t).exists()]
    for page in ROOT.glob("docs/*.md"):  # the pages' own images, relative to docs/
        for image in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", page.read_text(encoding="utf-8")):
            assert (page.parent / image).exists(), (page.name, image)


def test_the_layout_names_every_package():
    layout = README.split("## How the code is laid out", 1)[1].split("\n## ", 1)[0]
    packages = sorted(p.parent.name for p in (ROOT / "mlgrpo").glob("*/__init__.py"))
    assert all(f"mlgrpo/{name}" in layout for name in packages), packages
