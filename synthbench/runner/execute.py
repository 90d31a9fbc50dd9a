"""Execute a grid: skip finished cells, hand the rest to an executor, store each result as it arrives.

The calling process is this run's only writer of the store, whatever the engine (see
:mod:`synthbench.runner.executors`); a cell is in the store as soon as its result arrives.
Other runs may share the store: each fold's cells are claimed just before they are handed to a
worker, so a cell finished or being computed by another run is left to it, and a heartbeat
thread keeps this run's claims alive (:meth:`~synthbench.runner.store.ResultStore.claim`).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from synthbench import __version__
from synthbench.machine import describe_machine
from synthbench.models import TrainSettings
from synthbench.protocol import MethodOutputError
from synthbench.runner.cells import run_task
from synthbench.runner.executors import Executor, SerialExecutor
from synthbench.runner.grid import Cell, FoldTask, GridSpec
from synthbench.runner.store import STALE_AFTER_SECONDS, CellResult, ResultStore, StoreError

__all__ = ["execute", "RunSummary", "run_task"]

log = logging.getLogger(__name__)


@dataclass
class RunSummary:
    """Counts of one execution."""

    total: int
    skipped: int  # already finished in the store (at the start, or by another run meanwhile)
    busy: int = 0  # left to another live run that had claimed them
    ok: int = 0
    failed: int = 0
    over_limit: int = 0  # recorded as skipped with the reason: a method's declared feature limit, a scorer's SkipCell
    wall_seconds: float = 0.0
    run_id: int | None = None


def execute(
    cells: list[Cell],
    store: ResultStore,
    *,
    executor: Executor | None = None,
    force: bool = False,
    settings: TrainSettings = TrainSettings(),
    on_cell: Callable[[CellResult], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    command: str | None = None,
    heartbeat_seconds: float = 30.0,
    stale_after: float = STALE_AFTER_SECONDS,
) -> RunSummary:
    """Run the cells not yet finished in ``store`` (all of them with ``force``) and store each result.

    ``executor`` says where cells run (default: :class:`SerialExecutor`, this process);
    ``settings`` how models are trained (device, disk cache). ``on_start(n_pending)`` is called
    once before work starts; ``on_cell(result)`` after each cell is written (progress bars hook in here).
    The execution is recorded in the store as a run (``command``, the engine, this machine, its
    wall time and how it ended: ``finished``, ``interrupted`` by Ctrl-C, or ``failed`` on an error).

    Each fold's cells are claimed when the executor is about to run them; cells another live run
    holds are counted in ``busy`` and left to it, cells it finished meanwhile in ``skipped``. This
    run's heartbeat is refreshed every ``heartbeat_seconds``; another run's claims lapse after
    ``stale_after`` seconds without one (at once when its process is gone from this host).

    A method whose output breaks its contract (a wrong shape) stops the run with
    :class:`~synthbench.protocol.MethodOutputError`: that cell is not written and the run ends
    ``failed`` (cells written before it are kept, as after a crash).
    """
    executor = executor or SerialExecutor()
    t0 = time.perf_counter()
    done = set() if force else store.finished(c.cell_id for c in cells)
    pending = [c for c in cells if c.cell_id not in done]
    summary = RunSummary(total=len(cells), skipped=len(cells) - len(pending))
    run_id = summary.run_id = store.start_run(
        command=command,
        executor=_describe(executor),
        machine=describe_machine(),
        package_version=__version__,
        cells_total=len(cells),
        cells_pending=len(pending),
        scorers=sorted({c.scorer for c in cells}),
    )
    if on_start is not None:
        on_start(len(pending))

    def record(result: CellResult) -> None:
        if result.status == "invalid":
            raise MethodOutputError(result.message)
        store.write(result, summary.run_id)
        if result.status == "ok":
            summary.ok += 1
        elif result.status == "skipped":
            summary.over_limit += 1
        else:
            summary.failed += 1
        if on_cell is not None:
            on_cell(result)

    def claim(task: FoldTask) -> FoldTask | None:
        claimed, finished, busy = store.claim(task.cells, run_id, force=force, stale_after=stale_after)
        summary.skipped += len(finished)
        summary.busy += len(busy)
        if busy:
            log.info(
                "%d cells of %s fold %d are being computed by another run", len(busy), task.head.dataset, task.head.fold
            )
        return FoldTask(tuple(claimed)) if claimed else None

    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(heartbeat_seconds):
            try:
                store.heartbeat(run_id)
            except StoreError as exc:
                log.warning("heartbeat of run %s: %s", summary.run_id, exc)

    heart = threading.Thread(target=beat, name="synthbench-heartbeat", daemon=True)
    heart.start()
    status = "failed"
    try:
        slots = executor.slots
        executor.run(GridSpec.tasks(pending, block=None if slots is None else 2 * slots), settings, record, claim)
        status = "finished"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        stop.set()
        heart.join()
        summary.wall_seconds = time.perf_counter() - t0
        try:
            store.finish_run(
                summary.run_id,
                status=status,
                wall_seconds=summary.wall_seconds,
                ok=summary.ok,
                failed=summary.failed,
                skipped=summary.over_limit,
            )
        except StoreError as exc:  # the store itself failed (full disk): the cells written before are kept
            log.warning("could not record the end of run %s: %s", summary.run_id, exc)
    return summary


def _describe(executor: Executor) -> dict[str, Any]:
    """The engine's name and, for the dataclass engines, its settings."""
    settings: dict[str, Any] = (
        dataclasses.asdict(executor) if dataclasses.is_dataclass(executor) and not isinstance(executor, type) else {}
    )
    return {**settings, "name": getattr(executor, "name", type(executor).__name__)}
