"""The headless-Chromium driver (synthbench.report.browser) against tiny pages written in tmp_path."""

from __future__ import annotations

import base64
import io
import os
import runpy
import struct
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pytest
from chromium_fixture import chromium  # noqa: F401
from PIL import Image

from synthbench.report.browser import CHROMIUM_ENV, Browser, BrowserError, install_chromium, main

WIDTH, HEIGHT = 640, 480


@pytest.fixture(scope="module")
def browser(chromium):  # noqa: F811
    with Browser(chromium, width=WIDTH, height=HEIGHT, timeout=30) as b:
        yield b


def write(tmp_path: Path, body: str, name: str = "page.html") -> Path:
    path = tmp_path / name
    path.write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><title>t</title></head><body>{body}</body></html>"
    )
    return path


def png_data_uri(width: int, height: int) -> str:
    buf = io.BytesIO()
    Image.new("RGB", (width, height), (0, 128, 255)).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


CLEAN = "<h1>Report</h1><p>no script here but this one</p><script>document.title = 'ok';</script>"
THROWS = "<p>x</p><script>throw new Error('kaboom-42')</script>"


def test_a_clean_page_has_no_error_and_no_request(browser, tmp_path):
    page = browser.open(write(tmp_path, CLEAN))
    assert page.errors == [] and page.requests == []
    assert page.url.startswith("file://") and page.evaluate("document.title") == "ok"


def test_an_uncaught_exception_is_an_error(browser, tmp_path):
    page = browser.open(write(tmp_path, THROWS))
    assert len(page.errors) == 1 and "Uncaught Error: kaboom-42" in page.errors[0]
    assert page.requests == []


def test_console_error_is_an_error_console_log_is_not(browser, tmp_path):
    page = browser.open(write(tmp_path, "<script>console.log('fine'); console.error('boom', 7)</script>"))
    assert len(page.errors) == 1
    assert page.errors[0].startswith("console.error: boom 7 (") and page.url in page.errors[0]


def test_events_that_arrive_while_waiting_for_a_reply_are_kept(browser, tmp_path):
    page = browser.open(write(tmp_path, CLEAN))
    assert (
        page.evaluate(
            "new Promise(r => { console.error('during');"
            "                   setTimeout(() => { console.error('later'); r(1); }, 50); })"
        )
        == 1
    )
    assert [e.split(" (")[0] for e in page.errors] == ["console.error: during", "console.error: later"]


def test_requests_that_would_leave_the_page_are_recorded_and_blocked(browser, tmp_path):
    page = browser.open(
        write(
            tmp_path,
            "<img src='http://example.invalid/x.png'>"
            "<script>fetch('https://example.invalid/').catch(() => {})</script>",
        )
    )
    assert page.requests == ["http://example.invalid/x.png", "https://example.invalid/"]
    assert page.evaluate("document.readyState") == "complete"
    # nothing came back: the image failed (the browser says so), the page went on
    assert page.evaluate("document.images[0].naturalWidth") == 0
    assert any("Failed to load resource" in e and "example.invalid/x.png" in e for e in page.errors)


def test_a_data_uri_image_is_displayed_and_is_no_request(browser, tmp_path):
    page = browser.open(write(tmp_path, f"<img src='{png_data_uri(3, 2)}'>"))
    assert page.requests == [] and page.errors == []
    assert page.evaluate("[...document.images].map(i => [i.complete, i.naturalWidth, i.naturalHeight])") == [
        [True, 3, 2]
    ]


def test_evaluate_returns_values_and_raises_what_the_expression_throws(browser, tmp_path):
    page = browser.open(write(tmp_path, CLEAN))
    assert page.evaluate("6 * 7") == 42
    assert page.evaluate("1 / 4") == 0.25
    assert page.evaluate("[1, 'a', null, true]") == [1, "a", None, True]
    assert page.evaluate("({a: {b: [1, 2]}, s: 'x'})") == {"a": {"b": [1, 2]}, "s": "x"}
    assert page.evaluate("undefined") is None
    assert page.evaluate("new Promise(r => setTimeout(() => r('later'), 10))") == "later"
    with pytest.raises(BrowserError, match="threw Error: nope"):
        page.evaluate("throw new Error('nope')")
    with pytest.raises(BrowserError, match="threw TypeError"):
        page.evaluate("null.x")
    with pytest.raises(BrowserError, match="threw Error: rejected"):
        page.evaluate("Promise.reject(new Error('rejected'))")
    assert page.errors == []  # what evaluate throws is its caller's, not the page's


def test_a_wait_that_does_not_end_times_out_with_what_it_waited_for(browser, tmp_path):
    page = browser.open(write(tmp_path, CLEAN))
    with pytest.raises(BrowserError, match=r"timed out after 0.3 s waiting for the reply to Runtime.evaluate"):
        page.evaluate("new Promise(() => {})", timeout=0.3)
    assert page.evaluate("1 + 1") == 2  # the late reply is dropped, the page still answers


def test_clicking_a_header_sorts_the_table(browser, tmp_path):
    body = """
    <table><thead><tr><th>method</th><th>score</th></tr></thead>
    <tbody><tr><td>b</td><td>2</td></tr><tr><td>a</td><td>10</td></tr><tr><td>c</td><td>1</td></tr></tbody></table>
    <script>
    document.querySelectorAll('th').forEach((th, col) => th.addEventListener('click', () => {
      const body = th.closest('table').tBodies[0];
      const key = r => { const t = r.cells[col].textContent; return isNaN(t) ? t : Number(t); };
      [...body.rows].sort((x, y) => key(x) < key(y) ? -1 : key(x) > key(y) ? 1 : 0).forEach(r => body.appendChild(r));
    }));
    </script>"""
    page = browser.open(write(tmp_path, body))
    first_column = "[...document.querySelectorAll('tbody tr')].map(r => r.cells[0].textContent)"
    assert page.evaluate(first_column) == ["b", "a", "c"]
    page.evaluate("document.querySelectorAll('th')[1].click()")
    assert page.evaluate(first_column) == ["c", "b", "a"]
    page.evaluate("document.querySelectorAll('th')[0].click()")
    assert page.evaluate(first_column) == ["a", "b", "c"]
    assert page.errors == []


def test_an_alert_does_not_block_the_page(browser, tmp_path):
    page = browser.open(write(tmp_path, "<script>alert('hello'); document.title = 'after';</script>"))
    assert page.evaluate("document.title") == "after"


def test_screenshot_of_the_top_of_the_page_and_of_the_whole_page(browser, tmp_path):
    page = browser.open(
        write(tmp_path, "<style>body{margin:0;background:#ff0000}</style><div style='height:2000px'></div>")
    )
    top = page.screenshot(tmp_path / "top.png")
    assert top == tmp_path / "top.png" and png_size(top) == (WIDTH, HEIGHT)
    with Image.open(top) as im:
        assert im.convert("RGB").getpixel((WIDTH // 2, HEIGHT // 2)) == (255, 0, 0)
    assert png_size(page.screenshot(tmp_path / "full.png", full_page=True)) == (WIDTH, 2000)


def test_a_missing_file_is_file_not_found(browser, tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.html"):
        browser.open(tmp_path / "nope.html")


FAKE_CHROMIUM = """\
import json, os, subprocess, sys
mode = os.environ["FAKE_CHROMIUM_MODE"]
if mode == "crash":
    sys.exit("fake chromium: cannot open display")
with open(os.environ["FAKE_CHROMIUM_PIDFILE"], "w") as f:  # a child that outlives us unless the group is killed
    f.write(str(subprocess.Popen([sys.executable, "-ISc", "import time; time.sleep(60)"]).pid))
buffer = b""
while data := os.read(3, 65536):  # CDP over fds 3 (in) and 4 (out)
    buffer += data
    while b"\\0" in buffer:
        text, buffer = buffer.split(b"\\0", 1)
        message = json.loads(text)
        if message["method"] == "Browser.close":
            sys.exit(0)
        if mode == "answer":
            os.write(4, json.dumps({"id": message["id"], "result": {"product": "Fake/1"}}).encode() + b"\\0")
"""


@pytest.fixture
def fake_chromium(tmp_path, monkeypatch):
    """A fake Chromium that answers (or not, or crashes) on the CDP pipe and leaves a sleeping child behind;
    the child's pid is read from the returned ``pidfile``; temporary directories go under ``tmp``."""
    exe = tmp_path / "fake-chromium"
    exe.write_text(f"#!{sys.executable} -IS\n{FAKE_CHROMIUM}")
    exe.chmod(0o755)
    pidfile, tmp = tmp_path / "sleep.pid", tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("FAKE_CHROMIUM_PIDFILE", str(pidfile))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return exe, pidfile, tmp


def is_live(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (a zombie orphan is PID 1's to reap)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def soon(condition, seconds: float = 2.0) -> bool:
    """Whether ``condition()`` holds within ``seconds`` (SIGKILL is delivered, not waited for)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_closing_kills_the_whole_process_group(fake_chromium, monkeypatch):
    exe, pidfile, tmp = fake_chromium
    monkeypatch.setenv("FAKE_CHROMIUM_MODE", "answer")
    with Browser(str(exe), timeout=10) as b:
        assert b.version == "Fake/1"
        sleep_pid = int(pidfile.read_text())  # the pidfile is written before the first reply
        assert is_live(sleep_pid) and len(list(tmp.iterdir())) == 1
    assert b.process.returncode is not None and soon(lambda: not is_live(sleep_pid))
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize(
    "mode, error",
    [
        ("crash", r"closed the pipe .*cannot open display"),
        ("silent", r"timed out after 0.5 s waiting for the reply to Browser.getVersion"),
    ],
)
def test_a_chromium_that_fails_to_start_is_an_error_and_leaves_nothing(fake_chromium, monkeypatch, mode, error):
    exe, pidfile, tmp = fake_chromium
    monkeypatch.setenv("FAKE_CHROMIUM_MODE", mode)
    with pytest.raises(BrowserError, match=error):
        Browser(str(exe), timeout=0.5 if mode == "silent" else 10)
    assert list(tmp.iterdir()) == []
    if pidfile.exists():
        assert soon(lambda: not is_live(int(pidfile.read_text())))


def test_a_missing_executable_is_an_error(tmp_path):
    with pytest.raises(BrowserError, match="missing-chromium is not an executable"):
        Browser(str(tmp_path / "missing-chromium"))


def test_install_chromium_says_why_it_cannot(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BrowserError, match="cannot install Chromium: no apt-get on PATH"):
        install_chromium()
    (tmp_path / "apt-get").write_text("#!/bin/sh\nexit 0\n")
    (tmp_path / "apt-get").chmod(0o755)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(BrowserError, match="cannot install Chromium: apt-get needs root"):
        install_chromium()


def live_processes_in_group(pgid: int) -> list[int]:
    """The processes of group ``pgid`` that are not zombies (a zombie orphan is PID 1's to reap)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            pids.append(int(stat.parent.name))
    return pids


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_closing_kills_every_chromium_process_and_removes_the_profile_also_on_an_exception(
    chromium,  # noqa: F811
    tmp_path,
):
    with pytest.raises(ZeroDivisionError):
        with Browser(chromium) as b:
            pid, profile = b.process.pid, b.user_data_dir
            assert profile.is_dir() and pid in live_processes_in_group(pid)
            1 / 0
    assert b.process.returncode is not None  # our child reaped
    assert soon(lambda: live_processes_in_group(pid) == [])
    assert not profile.parent.exists()
    with pytest.raises(BrowserError, match="closed"):
        b.open(write(tmp_path, CLEAN))


def test_cli_exits_0_on_a_clean_page_and_writes_the_screenshot(chromium, tmp_path, capsys):  # noqa: F811
    shot = tmp_path / "shots" / "top.png"
    assert main([str(write(tmp_path, CLEAN)), "--screenshot", str(shot), "--width", "400", "--height", "300"]) == 0
    assert capsys.readouterr().out == f"no script error, no outgoing request\nscreenshot: {shot}\n"
    assert png_size(shot) == (400, 300)


def test_cli_exits_1_on_a_page_that_throws_or_asks_for_the_network(chromium, tmp_path, capsys):  # noqa: F811
    page = write(tmp_path, THROWS + "<img src='https://example.invalid/a.png'>")
    assert main([str(page)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert any(line.startswith("script error: Uncaught Error: kaboom-42") for line in out)
    assert "outgoing request: https://example.invalid/a.png" in out


def test_cli_exits_2_with_one_line_without_chromium(tmp_path, monkeypatch, capsys):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv(CHROMIUM_ENV, str(tmp_path / "missing-chromium"))
    monkeypatch.setenv("PATH", str(empty))
    assert main([str(write(tmp_path, CLEAN))]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "no Chromium found" in captured.err and "missing-chromium" in captured.err
    assert main([str(tmp_path / "nope.html")]) == 2  # a missing page: one line too
    assert capsys.readouterr().err.count("\n") == 1


def test_running_the_module_as_main_calls_main(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(CHROMIUM_ENV, str(tmp_path / "missing-chromium"))
    monkeypatch.setattr(sys, "argv", ["browser.py", str(tmp_path / "nope.html")])
    with warnings.catch_warnings(), pytest.raises(SystemExit) as exit_:
        warnings.simplefilter("ignore", RuntimeWarning)  # the module is already imported: runpy says so
        runpy.run_module("synthbench.report.browser", run_name="__main__")
    assert exit_.value.code == 2 and "nope.html" in capsys.readouterr().err


@pytest.mark.slow
def test_python_m_entry_point(tmp_path):
    """``python -m synthbench.report.browser``, here without Chromium: exit code 2, one line on stderr (slow: the
    new interpreter imports synthbench.report, torch included)."""
    env = {**os.environ, CHROMIUM_ENV: str(tmp_path / "missing-chromium"), "PATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "synthbench.report.browser", str(write(tmp_path, CLEAN))],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("python -m synthbench.report.browser: error: no Chromium found")
    assert done.stderr.count("\n") == 1
