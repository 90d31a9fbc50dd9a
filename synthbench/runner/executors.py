"""How to run fold tasks: in this process, in local worker processes, or as Ray tasks.

Every engine implements :class:`Executor`: ``run(tasks, settings, record)`` calls ``record(result)``
in the calling process once for every cell of every task, as results come back, so the caller
stays the only writer of the results store. Cells are computed by
:func:`synthbench.runner.cells.run_task` in every engine, so all engines give the same numbers.

A task whose worker dies (killed process, lost node, out of memory) is run again, without the
cells already recorded, at most ``max_retries`` times; then its remaining cells are recorded as
failed with the reason, and the run goes on.

Ctrl-C reaches every process of the terminal's process group. Local workers ignore it: the
calling process alone handles it (:class:`KeyboardInterrupt`), keeps the results its workers
have already sent, and ends the workers, so the user sees one message rather than a traceback
per worker.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection, wait
from typing import Any, Protocol

from synthbench.defaults import DEFAULT_GPUS_PER_CELL
from synthbench.machine import usable_cores
from synthbench.methods import get_method
from synthbench.models import TrainSettings
from synthbench.plugins import import_plugins
from synthbench.runner.cells import package_versions, run_task
from synthbench.runner.grid import Cell, FoldTask
from synthbench.runner.store import CellResult

__all__ = ["Executor", "ExecutorError", "SerialExecutor", "ProcessExecutor", "RayExecutor", "DEFAULT_GPUS_PER_CELL"]

log = logging.getLogger(__name__)

Record = Callable[[CellResult], None]
#: ``claim(task)`` is called once per task just before it is first handed to a worker; it returns
#: the part of the task this run may compute (cells not finished or held by another run), or None.
Claim = Callable[[FoldTask], "FoldTask | None"]


def _claim_all(task: FoldTask) -> FoldTask:
    """The default claim: the whole task (a store used by one run only)."""
    return task


#: Share of a GPU each accelerated (torch) task asks Ray for where the cluster has GPUs.


class ExecutorError(Exception):
    """The executor cannot start (for example, no Ray cluster at the given address)."""


class Executor(Protocol):
    """An engine that runs fold tasks and hands every cell's result to ``record``."""

    name: str

    @property
    def slots(self) -> int | None:
        """How many tasks run at once (None: not known before the run, a cluster's)."""

    def check(self) -> None:
        """Fail fast with :class:`ExecutorError` when the engine cannot run (before anything is written)."""

    def run(
        self, tasks: Sequence[FoldTask], settings: TrainSettings, record: Record, claim: Claim = _claim_all
    ) -> None:
        """Run the part of each task that ``claim`` returns; call ``record`` once per cell, in this process."""


def _died(cells: Sequence[Cell], reason: str) -> list[CellResult]:
    versions = package_versions()
    return [CellResult(c, "failed", reason, versions=versions) for c in cells]


@dataclass
class SerialExecutor:
    """Every task in this process, one after the other; models may use every core the process may run on."""

    name: str = "serial"

    @property
    def slots(self) -> int:
        return 1

    def check(self) -> None:
        return None

    def run(
        self, tasks: Sequence[FoldTask], settings: TrainSettings, record: Record, claim: Claim = _claim_all
    ) -> None:
        threads = replace(settings, n_jobs=usable_cores())
        for task in tasks:
            mine = claim(task)
            if mine is None:
                continue
            for result in run_task(mine, settings=threads):
                record(result)


# --------------------------------------------------------------------------- local processes

_TASK_DONE = "task-done"


#: How often a worker checks that the process that started it still runs.
PARENT_CHECK_SECONDS = 1.0


def _exit_with_parent(parent: int) -> None:
    """End this worker as soon as its parent, the process ``parent`` that started it, is gone (killed, so it could
    not stop its workers): a daemon thread sees the process re-parented and exits at once, rather than computing a
    fold whose results nobody can receive. ``parent`` is the starter's own id, passed in: a parent killed while
    the worker was still starting has already left it re-parented by the time it could ask."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="synthbench-parent-watch", daemon=True).start()


def _worker_main(conn: Connection, settings: TrainSettings, plugins: tuple[str, ...], parent: int) -> None:
    """A worker process: run each task received on ``conn``, sending back each cell's result.

    The process is the executor's own, so it sets torch's thread count to its share
    (``settings.n_jobs``): ``jobs`` workers with torch's default of one thread per core would run
    ``jobs x cores`` threads on ``cores`` cores (CNN training and image attribution use them).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle (it ends the workers)
    _exit_with_parent(parent)
    import torch

    torch.set_num_threads(max(1, int(settings.n_jobs)))
    import_plugins(plugins)
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        for result in run_task(task, settings=settings):
            conn.send(result)
        conn.send(_TASK_DONE)


@contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Ignore SIGINT while a worker starts, so that the new interpreter inherits it ignored from its first
    instruction (Python leaves an inherited ``SIG_IGN`` in place); only from the main thread, where
    handlers can be set (elsewhere the worker ignores it once it runs :func:`_worker_main`)."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous is None:
        yield
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class _Worker:
    """One worker process, its private pipe, and the task it is running (an index, or None)."""

    def __init__(self, ctx: Any, settings: TrainSettings, plugins: tuple[str, ...]) -> None:
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, settings, plugins, os.getpid()), daemon=True)
        with _sigint_ignored():
            self.process.start()
        child.close()
        self.task: int | None = None

    def stop(self, now: bool = False) -> None:
        """End the worker: once its task is done, or ``now`` (SIGTERM, after an interruption or an error)."""
        if now:
            self.process.terminate()
        else:
            try:
                self.conn.send(None)
            except OSError:
                pass
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


@dataclass
class ProcessExecutor:
    """``jobs`` local worker processes (spawned, one thread each), each running whole tasks.

    Each worker has its own pipe, so the parent always knows which task a worker was running
    when it died, and a process killed in the middle of a message cannot corrupt the others'
    results (a shared queue could). ``plugins`` are modules every worker imports first.
    """

    jobs: int
    max_retries: int = 2
    plugins: tuple[str, ...] = ()
    name: str = "local"

    @property
    def slots(self) -> int:
        return self.jobs

    def check(self) -> None:
        if self.jobs < 1:
            raise ExecutorError(f"jobs must be at least 1, got {self.jobs}")
        if self.max_retries < 0:
            raise ExecutorError(f"max_retries must be non-negative, got {self.max_retries}")

    def run(
        self, tasks: Sequence[FoldTask], settings: TrainSettings, record: Record, claim: Claim = _claim_all
    ) -> None:
        if not tasks:
            return
        ctx = multiprocessing.get_context("spawn")
        settings = replace(settings, n_jobs=1)
        remaining: dict[int, dict[str, Cell]] = {}  # task -> its cells not yet recorded, once claimed
        attempts = [0] * len(tasks)
        pending = deque(range(len(tasks)))
        workers = [_Worker(ctx, settings, self.plugins) for _ in range(min(self.jobs, len(tasks)))]

        def receive(w: _Worker) -> bool:
            """Record everything ``w`` has sent; False once its pipe is broken."""
            try:
                while w.conn.poll():
                    msg = w.conn.recv()
                    if msg == _TASK_DONE:
                        w.task = None
                    else:  # a cell of the task the worker holds
                        if w.task is not None:
                            remaining[w.task].pop(msg.cell.cell_id, None)
                        record(msg)
            except (EOFError, OSError):
                return False
            return True

        def bury(i: int) -> None:
            """Worker ``i`` died: retry or fail its task's remaining cells, and replace it."""
            w = workers[i]
            code = w.process.exitcode
            w.conn.close()
            task = w.task
            if task is not None and remaining[task]:
                left = list(remaining[task].values())
                if attempts[task] > self.max_retries:
                    reason = f"worker died (exit code {code}) on each of {attempts[task]} attempts"
                    log.warning("%s: %d cells of %s fold %d", reason, len(left), left[0].dataset, left[0].fold)
                    for result in _died(left, reason):
                        remaining[task].pop(result.cell.cell_id)
                        record(result)
                else:
                    log.warning("worker died (exit code %s); retrying %d cells", code, len(left))
                    pending.appendleft(task)
            workers[i] = _Worker(ctx, settings, self.plugins)

        def next_task() -> int | None:
            """The next pending task with cells left for this run, claimed on first dispatch."""
            while pending:
                i = pending.popleft()
                if i not in remaining:
                    mine = claim(tasks[i])
                    remaining[i] = {} if mine is None else {c.cell_id: c for c in mine.cells}
                if remaining[i]:
                    return i
            return None

        ended = False
        try:
            while pending or any(w.task is not None for w in workers):
                for w in workers:
                    if w.task is None and (i := next_task()) is not None:
                        w.task = i
                        attempts[i] += 1
                        try:
                            w.conn.send(FoldTask(tuple(remaining[i].values())))
                        except OSError:
                            pass  # found dead below
                busy = [i for i, w in enumerate(workers) if w.task is not None]
                waitables = [workers[i].conn for i in busy] + [workers[i].process.sentinel for i in busy]
                wait(waitables, timeout=1.0)
                for i in busy:
                    w = workers[i]
                    intact = receive(w)
                    if not intact or not w.process.is_alive():
                        if intact:
                            receive(w)  # whatever it sent before dying
                        bury(i)
            ended = True
        except KeyboardInterrupt:
            for w in workers:
                if w.task is not None:
                    receive(w)  # results already sent are kept
            raise
        finally:
            for w in workers:
                w.stop(now=not ended)


# --------------------------------------------------------------------------- Ray


def _ray_task(task: FoldTask, settings: TrainSettings, plugins: tuple[str, ...]) -> list[CellResult]:
    """Body of a Ray task: every cell of ``task``, in a Ray worker."""
    import_plugins(plugins)
    return list(run_task(task, settings=settings))


def _reachable(address: str, timeout: float) -> None:
    """Raise ExecutorError unless a TCP connection to ``address`` (``[ray://]host:port``) opens."""
    hostport = address.split("://", 1)[-1]
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        raise ExecutorError(f"Ray address {address!r} is not host:port (or ray://host:port, or auto)")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ExecutorError(f"no Ray cluster answers at {address} ({exc})") from None


@dataclass
class RayExecutor:
    """Tasks as Ray tasks on an existing cluster (``address``) or a local one started for the run.

    Each task asks for one CPU; tasks whose methods run torch models (``accelerated``) also ask
    for ``gpus_per_cell`` of a GPU where the cluster has GPUs (default
    :data:`DEFAULT_GPUS_PER_CELL`, so four small MLP tasks share one GPU) and train there.
    Results are handed to ``record`` task by task as they finish, so an interrupted run keeps
    every finished task. Ray reruns a task whose worker died up to ``max_retries`` times.

    ``num_cpus`` bounds a local cluster (default: all cores); ``plugins`` are modules each task
    imports first (they must be importable on the workers).
    """

    address: str | None = None
    gpus_per_cell: float | None = None
    max_retries: int = 2
    num_cpus: int | None = None
    plugins: tuple[str, ...] = ()
    connect_timeout: float = 5.0
    name: str = "ray"

    @property
    def slots(self) -> int | None:
        """A local cluster's CPUs where bounded; a cluster's own are known only once joined."""
        return self.num_cpus if self.address is None else None

    def check(self) -> None:
        try:
            import ray  # noqa: F401
        except ImportError:
            raise ExecutorError("--executor ray needs the ray package: python -m pip install 'ray>=2.9'") from None
        if self.gpus_per_cell is not None and not 0 <= self.gpus_per_cell <= 1:
            raise ExecutorError(f"gpus per cell must be within [0, 1], got {self.gpus_per_cell}")
        if self.max_retries < 0:
            raise ExecutorError(f"max_retries must be non-negative, got {self.max_retries}")
        if self.address is not None and self.address not in ("auto", "local"):
            _reachable(self.address, self.connect_timeout)

    def _connect(self, ray: Any) -> None:
        kwargs: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
        if self.address is None:
            kwargs["num_cpus"] = self.num_cpus
        else:
            kwargs["address"] = self.address
        try:
            ray.init(**kwargs)
        except Exception as exc:  # noqa: BLE001 - ray raises ConnectionError, RuntimeError, ...
            raise ExecutorError(f"cannot start or join a Ray cluster: {exc}") from exc

    def task_options(self, task: FoldTask, cluster_gpus: float, device: str) -> dict[str, Any]:
        """Ray options of one task: one CPU, and a share of a GPU for torch tasks where there is one."""
        per_cell = DEFAULT_GPUS_PER_CELL if self.gpus_per_cell is None else self.gpus_per_cell
        on_gpu = device != "cpu" and cluster_gpus > 0 and any(get_method(c.method).accelerated for c in task.cells)
        return dict(
            num_cpus=1, num_gpus=per_cell if on_gpu else 0, max_retries=self.max_retries, retry_exceptions=False
        )

    def run(
        self, tasks: Sequence[FoldTask], settings: TrainSettings, record: Record, claim: Claim = _claim_all
    ) -> None:
        """Claim every task and submit it to Ray at once (the cluster schedules them)."""
        import ray

        self.check()
        owned = not ray.is_initialized()
        if owned:
            self._connect(ray)
        try:
            cluster_gpus = ray.cluster_resources().get("GPU", 0)
            settings = replace(settings, n_jobs=1)
            remote = ray.remote(_ray_task)
            running: dict[Any, FoldTask] = {}
            for task in tasks:
                if (mine := claim(task)) is None:
                    continue
                options = self.task_options(mine, cluster_gpus, settings.device)
                running[remote.options(**options).remote(mine, settings, self.plugins)] = mine
            while running:
                done, _ = ray.wait(list(running), num_returns=1)
                for ref in done:
                    task = running.pop(ref)
                    try:
                        results = ray.get(ref)
                    except ray.exceptions.RayError as exc:
                        reason = f"Ray task failed after {self.max_retries} retries: {type(exc).__name__}: {exc}"
                        log.warning("%s", reason.splitlines()[0])
                        results = _died(task.cells, reason.splitlines()[0])
                    for result in results:
                        record(result)
        finally:
            if owned:
                ray.shutdown()
