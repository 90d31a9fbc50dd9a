"""The ``chromium`` fixture: the path of a headless-capable Chromium, installed with apt-get when missing
(root only), else the test is skipped with the reason.

A test module uses it with ``from chromium_fixture import chromium  # noqa: F401`` (``tests/`` is on
``sys.path`` under pytest's default import mode, as for ``from conftest import ...``). The
outcome, found, installed or why not, is worked out once per session and shared by every
module that imports the fixture.
"""

from __future__ import annotations

import functools

import pytest

from synthbench.report.browser import BrowserError, find_chromium, install_chromium, not_found_reason


@functools.cache
def chromium_or_reason() -> tuple[str | None, str]:
    """``(path, "")``, or ``(None, why)`` when Chromium is neither found nor installable."""
    found = find_chromium()
    if found is not None:
        return found, ""
    try:
        return install_chromium(timeout=600), ""
    except BrowserError as e:
        return None, f"{not_found_reason()}; {e}"


@pytest.fixture(scope="module")
def chromium() -> str:
    """The Chromium executable (see the module)."""
    path, reason = chromium_or_reason()
    if path is None:
        pytest.skip(reason)
    return path
