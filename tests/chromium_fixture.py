"""The ``chromium`` fixture: the system's Chromium driven by Playwright (``executable_path``, so Playwright
downloads no browser of its own), installed with apt-get when missing (root only); else the test is skipped
with the reason.

A test module uses it with ``from chromium_fixture import chromium  # noqa: F401`` (``tests/`` is on
``sys.path`` under pytest's default import mode, as for ``from conftest import ...``). Whether Chromium is
found, installed or why not is worked out once per session.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

import pytest

#: Set to a Chromium executable to use that one (and no other).
CHROMIUM_ENV = "SYNTHBENCH_CHROMIUM"
#: The names looked for on ``PATH``, in order.
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def _find() -> str | None:
    wanted = os.environ.get(CHROMIUM_ENV)
    if wanted:
        return shutil.which(wanted)
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


def _install() -> str:
    """Debian's ``chromium`` installed with apt-get (as root); RuntimeError with the reason when it cannot."""
    apt_get = shutil.which("apt-get")
    if apt_get is None or os.geteuid() != 0:
        raise RuntimeError("cannot install it: " + ("no apt-get on PATH" if apt_get is None else "apt-get needs root"))
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for args in ([apt_get, "update", "-qq"], [apt_get, "install", "-y", "-qq", "chromium"]):
        done = subprocess.run(args, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"apt-get {' '.join(args[1:])} failed: {(done.stderr or done.stdout)[-300:]}")
    found = _find()
    if found is None:
        raise RuntimeError("apt-get installed chromium, but no Chromium is on PATH")
    return found


@functools.cache
def chromium_or_reason() -> tuple[str | None, str]:
    """``(path, "")``, or ``(None, why)`` when Chromium is neither found nor installable."""
    found = _find()
    if found is not None:
        return found, ""
    try:
        return _install(), ""
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        looked = os.environ.get(CHROMIUM_ENV) or ", ".join(CHROMIUM_NAMES)
        return None, f"no Chromium found ({looked}); {e}"


@pytest.fixture(scope="module")
def chromium():
    """A headless Chromium (Playwright's ``Browser``) on the system's executable (see the module)."""
    from playwright.sync_api import sync_playwright

    path, reason = chromium_or_reason()
    if path is None:
        pytest.skip(reason)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, args=["--no-sandbox"])
        yield browser
        browser.close()
