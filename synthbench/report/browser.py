"""A small headless-Chromium driver to check a self-contained HTML report in a real browser.

It speaks the Chrome DevTools Protocol (CDP) over ``--remote-debugging-pipe``: Chromium reads
commands from its file descriptor 3 and writes replies and events to its descriptor 4, each
message a JSON text terminated by a NUL byte. No websocket, no Selenium, no Playwright: the
standard library only. ::

    from synthbench.report.browser import Browser

    with Browser() as browser:                  # Chromium found by find_chromium()
        page = browser.open("report/report.html")
        page.errors        # uncaught exceptions, console.error, failed resources...
        page.requests      # every URL the page asked for that would leave it
        page.evaluate("document.querySelectorAll('img').length")
        page.screenshot("top.png")

The browser runs offline: every host name resolves to "not found" and every other connection
goes to a closed local proxy port, so a request the page makes is recorded but leaves nothing.
Chromium runs in its own process group, which is killed, with its temporary profile removed,
when the :class:`Browser` is closed (also on an exception, and at the latest when it is
garbage-collected). POSIX only; not thread-safe: use one :class:`Browser` per thread.

``python -m synthbench.report.browser REPORT.html [--screenshot OUT.png] [--full-page]``
checks a page from the command line (exit code 0 when clean, 1 otherwise, 2 when it could
not be checked, e.g. no Chromium).
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import logging
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
import weakref
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urldefrag

__all__ = [
    "CHROMIUM_ENV",
    "CHROMIUM_NAMES",
    "BrowserError",
    "Browser",
    "Page",
    "find_chromium",
    "not_found_reason",
    "install_chromium",
    "main",
]

log = logging.getLogger(__name__)

#: Environment variable naming the Chromium executable to use (a path or a name on ``PATH``).
CHROMIUM_ENV = "SYNTHBENCH_CHROMIUM"
#: Names looked up on ``PATH`` when :data:`CHROMIUM_ENV` is not set.
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

# URL schemes of what stays inside the page (not a request that leaves it).
_LOCAL_SCHEMES = ("data:", "blob:", "about:")
# Chromium's fds 3 and 4 made from the stdin and stdout we give it (Popen's pass_fds keeps a
# descriptor's number, it cannot move one to 3 or 4; a preexec_fn doing dup2 is unsafe in a
# process with threads, as torch's).
_PIPE_SHIM = 'exec "$0" "$@" 3<&0 4>&1 </dev/null 1>&2'


class BrowserError(RuntimeError):
    """Chromium could not be found, started or installed, a command failed, or a wait timed out."""


def find_chromium() -> str | None:
    """The Chromium executable: ``$SYNTHBENCH_CHROMIUM`` when set (and nothing else then), else the first
    of :data:`CHROMIUM_NAMES` on ``PATH``; None when not found."""
    wanted = os.environ.get(CHROMIUM_ENV)
    if wanted:
        return shutil.which(wanted)
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def install_chromium(timeout: float = 600.0) -> str:
    """Install Debian's ``chromium`` package (``apt-get update`` then ``apt-get install``, as root) and return
    the executable that :func:`find_chromium` then finds.

    :class:`BrowserError` with the reason when it cannot: no ``apt-get``, not root, a command that
    fails (with the end of its output) or takes more than ``timeout`` seconds in all, or no
    Chromium found afterwards.
    """
    apt_get = shutil.which("apt-get")
    if apt_get is None:
        raise BrowserError("cannot install Chromium: no apt-get on PATH")
    if os.geteuid() != 0:
        raise BrowserError("cannot install Chromium: apt-get needs root")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    deadline = time.monotonic() + timeout
    for args in ([apt_get, "update", "-qq"], [apt_get, "install", "-y", "-qq", "chromium"]):
        command = " ".join(args[1:])
        log.info("running apt-get %s", command)
        try:
            done = subprocess.run(
                args,
                capture_output=True,
                text=True,
                env=env,
                stdin=subprocess.DEVNULL,
                timeout=max(deadline - time.monotonic(), 1.0),
            )
        except subprocess.TimeoutExpired:
            raise BrowserError(f"cannot install Chromium: apt-get {command} took more than {timeout:g} s") from None
        if done.returncode != 0:
            output = (done.stderr.strip() or done.stdout.strip()).splitlines()[-3:]
            raise BrowserError(
                f"cannot install Chromium: apt-get {command} failed with exit code "
                f"{done.returncode}: {' / '.join(output)}"
            )
    found = find_chromium()
    if found is None:
        raise BrowserError(f"apt-get installed chromium, yet {not_found_reason()}")
    return found


def not_found_reason() -> str:
    """Why :func:`find_chromium` finds nothing, in words (what it looked for)."""
    wanted = os.environ.get(CHROMIUM_ENV)
    if wanted:
        return f"no Chromium found: {CHROMIUM_ENV}={wanted} is not an executable"
    return f"no Chromium found: none of {', '.join(CHROMIUM_NAMES)} is on PATH (or set {CHROMIUM_ENV})"


def _terminate(process: subprocess.Popen, fds: list[int], tmpdir: str) -> None:
    """Kill Chromium's process group, reap it, close our pipe ends and remove the temporary directory."""
    try:
        os.killpg(process.pid, signal.SIGKILL)  # the leader is not reaped yet, so the group id is still its
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL not delivered
        log.warning("Chromium (pid %d) did not exit", process.pid)
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
    shutil.rmtree(tmpdir, ignore_errors=True)


class Browser:
    """A headless Chromium driven over a CDP pipe; a context manager that closes it on exit.

    ``executable`` defaults to :func:`find_chromium`'s; ``width`` x ``height`` is the viewport of
    the pages (CSS pixels, device scale factor 1); ``timeout`` bounds every wait, in seconds.
    :class:`BrowserError` when Chromium is not found or does not start.
    """

    def __init__(
        self, executable: str | None = None, *, width: int = 1280, height: int = 900, timeout: float = 60.0
    ) -> None:
        if executable is None:
            executable = find_chromium()
            if executable is None:
                raise BrowserError(not_found_reason())
        elif shutil.which(executable) is None:
            raise BrowserError(f"cannot start Chromium: {executable} is not an executable")
        self.executable = executable
        self.width, self.height, self.timeout = width, height, timeout
        self._pages: dict[str, Page] = {}
        self._replies: dict[int, dict] = {}
        self._pending: set[int] = set()
        self._ids = itertools.count(1)
        self._buffer = bytearray()
        self._scanned = 0  # bytes of _buffer known to hold no NUL
        self._closed = False
        self._tmpdir = tempfile.mkdtemp(prefix="synthbench-chromium-")
        self.user_data_dir = Path(self._tmpdir) / "profile"
        self._stderr_path = Path(self._tmpdir) / "chromium.log"
        args = [
            executable,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--remote-debugging-pipe",
            f"--user-data-dir={self.user_data_dir}",
            "--no-first-run",
            "--no-default-browser-check",
            # offline: names resolve to nothing, connections to IP addresses go to a closed port
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--proxy-server=http://127.0.0.1:9",
            "--proxy-bypass-list=<-loopback>",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-default-apps",
            "--disable-crash-reporter",
            "--disable-breakpad",
            "--no-service-autorun",
            "--password-store=basic",
            "--use-mock-keychain",
            "--mute-audio",
            # renderers as children of the browser, which reaps them when it quits (a zygote's are orphaned)
            "--no-zygote",
            "--hide-scrollbars",
            f"--window-size={width},{height}",
            "about:blank",
        ]
        to_chromium, self._write_fd = os.pipe()
        self._read_fd, from_chromium = os.pipe()
        try:
            with open(self._stderr_path, "wb") as stderr:
                self.process = subprocess.Popen(
                    ["/bin/sh", "-c", _PIPE_SHIM, *args],
                    stdin=to_chromium,
                    stdout=from_chromium,
                    stderr=stderr,
                    start_new_session=True,
                )
        except OSError as e:
            for fd in (to_chromium, from_chromium, self._read_fd, self._write_fd):
                os.close(fd)
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            raise BrowserError(f"cannot start {executable}: {e}") from e
        os.close(to_chromium)
        os.close(from_chromium)
        self._finalizer = weakref.finalize(
            self, _terminate, self.process, [self._read_fd, self._write_fd], self._tmpdir
        )
        try:
            self.version = self._call("Browser.getVersion").get("product", "?")
        except BaseException:
            self.close()
            raise
        log.debug("started %s (pid %d) from %s", self.version, self.process.pid, executable)

    # -- context manager ---------------------------------------------------------------------------

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Ask Chromium to quit (``Browser.close``), then kill its process group whatever happened and
        remove its temporary profile. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._exit_code() is None:
                self._send("Browser.close")
                self._pump(lambda: False, "Chromium to exit", 3.0, until_eof=True)
                self._await_exit(2.0)
        except (BrowserError, OSError) as e:
            log.debug("Browser.close: %s", e)
        finally:
            log.debug("Chromium's stderr:\n%s", self._stderr_tail(4000))
            self._finalizer()

    def _exit_code(self) -> int | None:
        """Chromium's exit status, None while it runs; it is not reaped here, so that its process group id
        stays its own until the group is killed."""
        try:
            status = os.waitid(os.P_PID, self.process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # already reaped
            return self.process.returncode
        return None if status is None else status.si_status

    def _await_exit(self, timeout: float) -> None:
        """Wait up to ``timeout`` s for Chromium to exit (without reaping it)."""
        deadline = time.monotonic() + timeout
        while self._exit_code() is None and time.monotonic() < deadline:
            time.sleep(0.01)

    # -- pages -------------------------------------------------------------------------------------

    def open(self, path_or_url: str | os.PathLike[str]) -> Page:
        """Open a file (path) or URL in a new tab, wait for its load event and then for the network to be
        idle (:meth:`Page.wait_idle`); return the :class:`Page`.

        :class:`FileNotFoundError` for a missing file; :class:`BrowserError` when the navigation
        fails or the load event does not come within the timeout.
        """
        text = os.fspath(path_or_url)
        if "://" in text or text.startswith(_LOCAL_SCHEMES):
            url = text
        else:
            path = Path(text).resolve()
            if not path.is_file():
                raise FileNotFoundError(f"no such file: {path}")
            url = path.as_uri()
        target_id = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session_id = self._call("Target.attachToTarget", {"targetId": target_id, "flatten": True})["sessionId"]
        page = Page(self, session_id, target_id, url)
        self._pages[session_id] = page
        try:
            for domain in ("Runtime", "Log", "Network", "Page"):
                page._call(f"{domain}.enable")
            page._call(
                "Emulation.setDeviceMetricsOverride",
                {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
            )
            page._navigate()
        except BaseException:
            with contextlib.suppress(BrowserError):  # the error that matters is the first one
                page.close()
            raise
        return page

    # -- protocol ----------------------------------------------------------------------------------

    def _send(self, method: str, params: dict | None = None, session_id: str | None = None) -> int:
        """Write one command; its id."""
        if self._closed and method != "Browser.close":
            raise BrowserError(f"{method}: the browser is closed")
        message_id = next(self._ids)
        message: dict[str, Any] = {"id": message_id, "method": method, "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        data = memoryview(json.dumps(message).encode() + b"\0")
        try:
            while data:
                data = data[os.write(self._write_fd, data) :]
        except (BrokenPipeError, OSError) as e:
            raise BrowserError(f"cannot send {method} to Chromium ({e}){self._exit_note()}") from e
        return message_id

    def _call(
        self, method: str, params: dict | None = None, session_id: str | None = None, timeout: float | None = None
    ) -> dict:
        """Send a command and wait for its reply (events meanwhile are dispatched); its result."""
        message_id = self._send(method, params, session_id)
        self._pending.add(message_id)
        try:
            self._pump(lambda: message_id in self._replies, f"the reply to {method}", timeout)
        finally:
            self._pending.discard(message_id)
        reply = self._replies.pop(message_id)
        if "error" in reply:
            error = reply["error"]
            detail = f" ({error['data']})" if error.get("data") else ""
            raise BrowserError(f"{method} failed: {error.get('message', error)}{detail}")
        return reply.get("result", {})

    def _pump(
        self, until: Callable[[], bool], what: str, timeout: float | None = None, *, until_eof: bool = False
    ) -> None:
        """Read and dispatch messages until ``until()`` holds; :class:`BrowserError` naming ``what`` on
        timeout or when Chromium closes the pipe (with ``until_eof``, the end of the pipe is the goal)."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while not until():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BrowserError(f"timed out after {timeout:g} s waiting for {what}")
            ready, _, _ = select.select([self._read_fd], [], [], min(remaining, 0.05))
            if not ready:
                continue
            chunk = os.read(self._read_fd, 1 << 20)
            if not chunk:
                if until_eof:
                    return
                raise BrowserError(f"Chromium closed the pipe while waiting for {what}{self._exit_note()}")
            self._buffer += chunk
            while (end := self._buffer.find(b"\0", self._scanned)) >= 0:
                message = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                self._scanned = 0
                self._dispatch(json.loads(message))
            self._scanned = len(self._buffer)

    def _dispatch(self, message: dict) -> None:
        if "id" in message:
            if message["id"] in self._pending:
                self._replies[message["id"]] = message
            return
        method, params = message.get("method", ""), message.get("params", {})
        page = self._pages.get(message.get("sessionId") or params.get("sessionId", ""))
        if page is not None:
            if method == "Target.detachedFromTarget":
                page._detached = True
            else:
                page._on_event(method, params)

    def _exit_note(self) -> str:
        code = self._exit_code()
        tail = self._stderr_tail(600)
        return (f"; Chromium exited with code {code}" if code is not None else "") + (
            f"; stderr: {tail}" if tail else ""
        )

    def _stderr_tail(self, n: int) -> str:
        try:
            data = self._stderr_path.read_bytes()[-n:]
        except OSError:
            return ""
        return " ".join(data.decode(errors="replace").split()) if n <= 1000 else data.decode(errors="replace")


def _remote_text(obj: dict) -> str:
    """A Runtime.RemoteObject as the console would show it."""
    if "value" in obj:
        value = obj["value"]
        return value if isinstance(value, str) else json.dumps(value)
    text = obj.get("description") or obj.get("unserializableValue") or obj.get("type", "?")
    return text.splitlines()[0] if text.strip() else text  # an Error's description is its stack


def _location(url: str | None, line: int | None, column: int | None = None) -> str:
    if not url:
        return ""
    where = url if line is None else f"{url}:{line + 1}" + ("" if column is None else f":{column + 1}")
    return f" ({where})"


class Page:
    """A tab of a :class:`Browser`, made by :meth:`Browser.open`.

    ``errors`` collects, as readable strings, what went wrong while it ran: uncaught exceptions and
    unhandled rejections (``Runtime.exceptionThrown``), ``console.error`` and failed
    ``console.assert`` calls, and the browser's own error entries (``Log.entryAdded``: a resource
    that failed to load, a blocked request...). ``requests`` lists, once each, the URLs it asked
    for that would leave the page: every request but the page's own document and ``data:``,
    ``blob:`` and ``about:`` URLs. Both grow as events arrive, that is during any call on the page
    (or :meth:`wait_idle`).
    """

    def __init__(self, browser: Browser, session_id: str, target_id: str, url: str) -> None:
        self.url = url
        self.errors: list[str] = []
        self._browser = browser
        self._session_id, self._target_id = session_id, target_id
        self._sent: list[tuple[str, str]] = []  # (requestId, url) of every Network.requestWillBeSent
        self._in_flight: set[str] = set()
        self._loader_id: str | None = None
        self._loaded = False
        self._crashed = False
        self._detached = False
        self._last_event = time.monotonic()

    @property
    def requests(self) -> list[str]:
        """The URLs the page asked for that would leave it (see the class), in order, once each."""
        own = urldefrag(self.url).url
        urls = (
            url
            for request_id, url in self._sent
            if request_id != self._loader_id and urldefrag(url).url != own and not url.startswith(_LOCAL_SCHEMES)
        )
        return list(dict.fromkeys(urls))

    def evaluate(self, expression: str, *, timeout: float | None = None) -> Any:
        """The value of a JavaScript expression (a promise is awaited), as JSON-like Python values (None for
        ``undefined``); :class:`BrowserError` with the exception's text when it throws or rejects."""
        result = self._call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True, "userGesture": True},
            timeout=timeout,
        )
        details = result.get("exceptionDetails")
        if details is not None:
            text = _remote_text(details["exception"]) if "exception" in details else details.get("text", "?")
            raise BrowserError(f"{expression!r} threw {text}")
        value = result.get("result", {})
        return value.get("value") if "value" in value else None

    def screenshot(self, path: str | os.PathLike[str], *, full_page: bool = False) -> Path:
        """Write a PNG of the top of the page at the viewport's size (``full_page``: the whole page) to
        ``path``; the path."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            metrics = self._call("Page.getLayoutMetrics")
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            params.update(
                captureBeyondViewport=True,
                clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
            )
        data = base64.b64decode(self._call("Page.captureScreenshot", params)["data"])
        path = Path(path)
        path.write_bytes(data)
        return path

    def wait_idle(self, quiet: float = 0.2, max_wait: float = 5.0) -> bool:
        """Collect events until no request is in flight and nothing has happened for ``quiet`` seconds, at most
        ``max_wait`` seconds; whether the page went idle."""

        def idle() -> bool:
            return self._crashed or (not self._in_flight and time.monotonic() - self._last_event >= quiet)

        try:
            self._browser._pump(idle, f"{self.url} to be idle", max_wait)
        except BrowserError as e:
            if "timed out" not in str(e):
                raise
            log.info("%s: still busy after %g s (%d requests in flight)", self.url, max_wait, len(self._in_flight))
            return False
        return True

    def close(self) -> None:
        """Close the tab (its events stop being collected)."""
        if self._detached or self._browser._closed:
            return
        try:
            self._browser._call("Target.closeTarget", {"targetId": self._target_id})
        finally:
            self._detached = True
            self._browser._pages.pop(self._session_id, None)

    # -- internals ---------------------------------------------------------------------------------

    def _call(self, method: str, params: dict | None = None, timeout: float | None = None) -> dict:
        if self._crashed:
            raise BrowserError(f"{method}: the page {self.url} crashed")
        if self._detached:
            raise BrowserError(f"{method}: the page {self.url} is closed")
        return self._browser._call(method, params, self._session_id, timeout)

    def _navigate(self) -> None:
        self._loaded = False
        result = self._call("Page.navigate", {"url": self.url})
        if result.get("errorText"):
            raise BrowserError(f"cannot open {self.url}: {result['errorText']}")
        self._loader_id = result.get("loaderId")
        self._browser._pump(lambda: self._loaded or self._crashed, f"the load event of {self.url}")
        if self._crashed:
            raise BrowserError(f"the page {self.url} crashed while loading")
        self.wait_idle()

    def _on_event(self, method: str, params: dict) -> None:
        self._last_event = time.monotonic()
        if method == "Network.requestWillBeSent":
            self._sent.append((params["requestId"], params["request"]["url"]))
            self._in_flight.add(params["requestId"])
        elif method in ("Network.loadingFinished", "Network.loadingFailed"):
            self._in_flight.discard(params["requestId"])
        elif method == "Page.loadEventFired":
            self._loaded = True
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("text", "Uncaught")
            if "exception" in details:
                text = f"{text} {_remote_text(details['exception'])}"
            self.errors.append(
                text + _location(details.get("url"), details.get("lineNumber"), details.get("columnNumber"))
            )
        elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            text = " ".join(_remote_text(arg) for arg in params.get("args", []))
            frames = params.get("stackTrace", {}).get("callFrames", [])
            where = _location(frames[0]["url"], frames[0]["lineNumber"], frames[0]["columnNumber"]) if frames else ""
            self.errors.append(f"console.{params['type']}: {text}{where}")
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            entry = params["entry"]
            self.errors.append(
                f"{entry['source']}: {entry['text']}{_location(entry.get('url'), entry.get('lineNumber'))}"
            )
        elif method == "Page.javascriptDialogOpening":  # alert() & co. would block the page: dismiss them
            log.info("%s: dismissing a %s dialog: %s", self.url, params.get("type"), params.get("message"))
            self._browser._send("Page.handleJavaScriptDialog", {"accept": True}, self._session_id)
        elif method == "Inspector.targetCrashed":
            self._crashed = True
            self.errors.append("the page crashed")


def main(argv: list[str] | None = None) -> int:
    """``python -m synthbench.report.browser REPORT.html [--screenshot OUT.png] [--full-page]``: open the page in
    headless Chromium, print its errors and outgoing requests; 0 when there are none, 1 otherwise, 2
    (one line on stderr) when it cannot be checked (no Chromium, no such file...)."""
    from synthbench.cli import OneLineParser, UsageError, print_error, setup_logging

    prog = "python -m synthbench.report.browser"
    parser = OneLineParser(
        prog=prog,
        description="Check a self-contained HTML page in headless Chromium: script "
        "errors and requests that would leave the page; a screenshot.",
    )
    parser.add_argument("page", type=Path, help="the HTML file")
    parser.add_argument("--screenshot", type=Path, metavar="OUT.png", help="write a PNG of the top of the page")
    parser.add_argument("--full-page", action="store_true", help="with --screenshot: the whole page")
    parser.add_argument("--width", type=int, default=1280, help="viewport width (default: %(default)s)")
    parser.add_argument("--height", type=int, default=900, help="viewport height (default: %(default)s)")
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="seconds to wait for Chromium (default: %(default)s)"
    )
    parser.add_argument("--debug", action="store_true", help="log the debug messages (Chromium's stderr at exit)")
    try:
        args = parser.parse_args(argv)
        setup_logging(args.debug)
        if not args.page.is_file():
            raise UsageError(f"no such file: {args.page}")
        with Browser(width=args.width, height=args.height, timeout=args.timeout) as browser:
            page = browser.open(args.page)
            errors, requests = list(page.errors), page.requests
            if args.screenshot is not None:
                args.screenshot.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(args.screenshot, full_page=args.full_page)
    except (UsageError, BrowserError, OSError) as e:
        return print_error(prog, e)
    for error in errors:
        print(f"script error: {error}")
    for url in requests:
        print(f"outgoing request: {url}")
    if not errors and not requests:
        print("no script error, no outgoing request")
    if args.screenshot is not None:
        print(f"screenshot: {args.screenshot}")
    return 1 if errors or requests else 0


if __name__ == "__main__":
    raise SystemExit(main())
