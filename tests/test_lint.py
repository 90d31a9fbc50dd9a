"""The code passes the linter its configuration in pyproject.toml asks for (ruff: pycodestyle and pyflakes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _ruff(*paths: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *map(str, paths)], cwd=cwd,
                          capture_output=True, text=True)


def test_the_package_its_tests_and_benchmarks_pass_the_linter():
    result = _ruff("synthbench", "tests", "benchmarks")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_linter_catches_an_undefined_name(tmp_path):
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    (tmp_path / "broken.py").write_text("def f():\n    return undefined_name\n")
    result = _ruff("broken.py", cwd=tmp_path)
    assert result.returncode != 0 and "F821" in result.stdout
