"""The documentation site builds with warnings as errors, and the README stays a front page that points into it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _build(project: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )


def test_the_site_builds_strict_and_every_page_is_in_it(tmp_path):
    result = _build(ROOT, tmp_path / "site")
    assert result.returncode == 0, result.stderr
    pages = sorted(p.relative_to(ROOT / "docs").with_suffix("") for p in (ROOT / "docs").rglob("*.md"))
    built = [tmp_path / "site" / ("" if p.name == "index" else str(p)) / "index.html" for p in pages]
    assert all(b.is_file() for b in built), [str(b) for b in built if not b.is_file()]


def test_a_broken_link_fails_the_strict_build(tmp_path):
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    page = tmp_path / "docs" / "cli.md"
    page.write_text(page.read_text() + "\nSee [the missing page](no-such-page.md).\n")
    result = _build(tmp_path, tmp_path / "site")
    assert result.returncode != 0 and "no-such-page.md" in result.stderr


def test_the_readme_is_a_front_page_whose_links_resolve():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    commands = re.findall(r"^```bash\n(.*?)\n```$", text, re.M | re.S)[:2]
    assert commands[0].endswith("python -m synthbench.run --decoys 100,1000")  # installs and runs the main job
    assert commands[1].endswith('-e ".[test]" && python -m pytest')  # installs and runs the tests
    assert commands[1] in (ROOT / ".ci" / "run").read_text()  # CI runs it verbatim
    links = re.findall(r"\]\(([^)#]+)\)", text)
    assert links and all((ROOT / link).is_file() for link in links), links
