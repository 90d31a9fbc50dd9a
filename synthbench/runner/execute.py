"""How to run: execute fold tasks serially or in worker processes, writing each cell as it ends.

The parent process is the only writer of the store. With ``jobs > 1`` each worker runs whole
fold tasks (so a fold's models are trained once) and sends every cell's result through a queue
the moment it finishes; either way a cell is in the store as soon as it is done.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import time
import tracemalloc
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from importlib import metadata
from queue import Empty, Queue

from synthbench import datasets
from synthbench.evaluation import FoldData, Scorer, get_scorer, make_folds
from synthbench.methods import get_method, run_method
from synthbench.models import SharedModels, TrainSettings
from synthbench.runner.grid import Cell, FoldTask, GridSpec
from synthbench.runner.store import CellResult, ResultStore

__all__ = ["run_task", "execute", "RunSummary"]

log = logging.getLogger(__name__)

#: A cell whose model's held-out AUROC is below this is flagged ``model_near_chance``: an
#: explanation of a model that learned nothing says nothing about the method.
NEAR_CHANCE_AUROC = 0.6

_VERSIONED = ("synthbench", "numpy", "scipy", "scikit-learn", "pandas", "shap", "skrebate", "pymrmr", "torch", "lassonet")


def package_versions() -> dict[str, str]:
    """Installed versions of the packages that can move a result."""
    out = {}
    for name in _VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def run_task(task: FoldTask, *, settings: TrainSettings = TrainSettings()) -> Iterator[CellResult]:
    """Run every cell of one fold task, yielding each result when it is ready.

    A failure to build the data fails every cell of the task; a failing method fails only its
    own cell (the message records the exception).
    """
    head = task.head
    versions = package_versions()
    try:
        ds = datasets.make(head.dataset, n_samples=head.n_samples, n_decoys=head.n_decoys, seed=head.seed,
                           **dict(head.dataset_params))
        fold = make_folds(ds.n_samples, ds.n_features, n_folds=head.n_folds, seed=head.seed)[head.fold]
        data = FoldData.from_dataset(ds, fold, explain=head.explain)
    except Exception as exc:  # noqa: BLE001 - recorded, the grid goes on
        for cell in task.cells:
            yield CellResult(cell, "failed", f"data: {type(exc).__name__}: {exc}", versions=versions)
        return
    models = SharedModels(data, settings)
    for cell in task.cells:
        scorer = get_scorer(cell.scorer)
        yield _run_cell(cell, data, models, scorer, versions, fold.permutation.tolist())


def _run_cell(cell: Cell, data: FoldData, models: SharedModels, scorer: Scorer,
              versions: dict[str, str], permutation: list[int]) -> CellResult:
    spec = get_method(cell.method)
    base = dict(n_features=data.n_features, k=int(data.relevant.sum()), permutation=permutation, versions=versions)
    trained_before = {k: v["train_seconds"] for k, v in models.info.items()}
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        output = run_method(spec, data, models)
        scores = scorer.score(output, data, cell.method, models)
    except Exception as exc:  # noqa: BLE001 - recorded, the grid goes on
        log.debug("cell %s failed", cell, exc_info=True)
        return CellResult(cell, "failed", f"{type(exc).__name__}: {exc}", seconds=time.perf_counter() - t0, **base)
    finally:
        elapsed = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    # Seconds as if the method ran alone: its own time plus the training of every model it needs.
    trained_now = sum(v["train_seconds"] for k, v in models.info.items() if k not in trained_before)
    seconds = elapsed - trained_now + sum(models.info[k]["train_seconds"] for k in spec.needs if k in models.info)
    model_info = {k: models.info[k] for k in spec.needs if k in models.info} or None
    flags = ("model_near_chance",) if any(
        info.get("test_auroc", 1.0) < NEAR_CHANCE_AUROC for info in (model_info or {}).values()
    ) else ()
    return CellResult(cell, "ok", None, scores, scorer.chance(data), seconds, int(peak), model=model_info,
                      flags=flags, **base)


def _run_task_into(task: FoldTask, settings: TrainSettings, queue: Queue) -> None:
    for result in run_task(task, settings=settings):
        queue.put(result)


@dataclass
class RunSummary:
    """Counts of one execution."""

    total: int
    skipped: int
    ok: int = 0
    failed: int = 0
    wall_seconds: float = 0.0


def execute(
    cells: list[Cell],
    store: ResultStore,
    *,
    jobs: int = 1,
    force: bool = False,
    settings: TrainSettings = TrainSettings(),
    on_cell: Callable[[CellResult], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> RunSummary:
    """Run the cells not yet finished in ``store`` (all of them with ``force``) and store each result.

    ``settings`` says how models are trained (device, disk cache); its ``n_jobs`` is replaced by
    the machine's cores in the serial path and by 1 in each worker process.

    ``on_start(n_pending)`` is called once before work starts; ``on_cell(result)`` after each
    cell is written (progress bars hook in here).
    """
    t0 = time.perf_counter()
    done = set() if force else store.finished(c.cell_id for c in cells)
    pending = [c for c in cells if c.cell_id not in done]
    summary = RunSummary(total=len(cells), skipped=len(cells) - len(pending))
    if on_start is not None:
        on_start(len(pending))

    def record(result: CellResult) -> None:
        store.write(result)
        if result.status == "ok":
            summary.ok += 1
        else:
            summary.failed += 1
        if on_cell is not None:
            on_cell(result)

    tasks = GridSpec.tasks(pending)
    if jobs <= 1:
        for task in tasks:
            for result in run_task(task, settings=replace(settings, n_jobs=os.cpu_count() or 1)):
                record(result)
    else:
        ctx = multiprocessing.get_context("spawn")
        with ctx.Manager() as manager, ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            queue = manager.Queue()
            running = {pool.submit(_run_task_into, task, replace(settings, n_jobs=1), queue) for task in tasks}
            try:
                while running or not queue.empty():
                    try:
                        record(queue.get(timeout=0.1))
                    except Empty:
                        pass
                    finished = {f for f in running if f.done()}
                    for f in finished:
                        f.result()  # a worker that crashed raises here
                    running -= finished
            except BaseException:
                for f in running:
                    f.cancel()
                raise
    summary.wall_seconds = time.perf_counter() - t0
    return summary
