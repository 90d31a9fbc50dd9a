"""The code passes the linter, the formatter and the type checker its configuration in pyproject.toml asks for: ruff
(pycodestyle, pyflakes, import order; ruff format) and mypy (every module, the public ones with --strict's flags)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _ruff(*paths: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", *map(str, paths)], cwd=cwd, capture_output=True, text=True
    )


def test_the_package_its_tests_and_benchmarks_pass_the_linter():
    result = _ruff("synthbench", "tests", "benchmarks")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_package_its_tests_and_benchmarks_are_formatted():
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "--no-cache", "synthbench", "tests", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_linter_catches_an_undefined_name_a_long_line_and_unsorted_imports(tmp_path):
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    (tmp_path / "broken.py").write_text(
        f"import sys\nimport os\n\n\ndef f():\n    return undefined_name  # {'x' * 120}\n"
    )
    result = _ruff("broken.py", cwd=tmp_path)
    assert result.returncode != 0 and all(code in result.stdout for code in ("F821", "E501", "I001"))


def _mypy(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mypy", *args], cwd=cwd, capture_output=True, text=True)


def test_the_package_passes_the_type_checker():
    result = _mypy()  # the files and flags of pyproject.toml
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_type_checker_catches_a_wrong_type_and_an_unannotated_public_function(tmp_path):
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    package = tmp_path / "synthbench"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "protocol.py").write_text("def f(x: int) -> str:\n    return x\n")  # basic mode
    (package / "registry.py").write_text("def g(x):\n    return x\n")  # a public module: strict
    result = _mypy("--cache-dir", str(tmp_path / "cache"), cwd=tmp_path)
    assert result.returncode != 0
    assert "protocol.py:2: error: Incompatible return value type" in result.stdout
    assert "registry.py:1: error: Function is missing a type annotation" in result.stdout
