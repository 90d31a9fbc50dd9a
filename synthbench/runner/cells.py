"""The cell runner: one fold task's data, shared models and cells, each turned into a stored result.

Engine-independent: every executor (this process, local workers, Ray) calls :func:`run_task`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any

from synthbench.machine import installed_versions
from synthbench.methods import run_method
from synthbench.methods.registry import MethodSpec
from synthbench.models import SharedModels, Siblings, TrainRequest, TrainSettings
from synthbench.protocol import FoldData, MethodOutput, MethodOutputError, cell_fold, setting_folds
from synthbench.runner.grid import Cell, FoldTask
from synthbench.runner.memory import PeakMemory
from synthbench.runner.store import CellResult
from synthbench.scoring import Scorer, Scores, SkipCell
from synthbench.scoring.truth.localisation import aggregate_channels

__all__ = ["run_task", "package_versions", "EXAMPLE_IMAGES"]

log = logging.getLogger(__name__)


#: Explained images whose relevance maps (channels summed in absolute value) an image cell stores
#: for the report's example figure.
EXAMPLE_IMAGES = 4

_VERSIONED = (
    "synthbench",
    "numpy",
    "scipy",
    "scikit-learn",
    "pandas",
    "shap",
    "skrebate",
    "pymrmr",
    "torch",
    "lassonet",
    "lightgbm",
)


#: Per method of a task: its output, its seconds and its peak memory (one run, whatever the scorers).
Outputs = dict[str, tuple[MethodOutput, float, int | None]]


def package_versions() -> dict[str, str]:
    """Installed versions of the packages that can move a result."""
    return installed_versions(_VERSIONED)


def run_task(task: FoldTask, *, settings: TrainSettings = TrainSettings()) -> Iterator[CellResult]:
    """Run every cell of one fold task, yielding each result when it is ready.

    With a disk cache in ``settings``, the fold's shared networks are trained with those of every fold of its
    setting as one batch (:class:`~synthbench.models.shared.Siblings`): the first task of the setting that asks
    trains them, the others read theirs from the cache.

    A failure to build the data fails every cell of the task; a failing method fails only its
    own cell (the message records the exception). A method whose output breaks its contract
    (:class:`~synthbench.protocol.MethodOutputError`) yields a cell of status ``invalid``, which
    the runner never stores: it stops the run.
    """
    head = task.head
    versions = package_versions()
    setting = head.setting()
    try:
        data, fold = cell_fold(head.dataset, fold=head.fold, **setting)
    except Exception as exc:  # noqa: BLE001 - recorded, the grid goes on
        for cell in task.cells:
            yield CellResult(cell, "failed", f"data: {type(exc).__name__}: {exc}", versions=versions)
        return
    siblings = Siblings(repr((head.dataset, sorted(setting.items()))), lambda: setting_folds(head.dataset, **setting))
    models = SharedModels(data, settings, preset=head.model, siblings=siblings)
    permutation = None if fold.permutation is None else fold.permutation.tolist()
    outputs: Outputs = {}  # one run per method, whatever the scorers
    planned = _prefetch_retraining(task.cells, data, models, outputs)
    for i, cell in enumerate(task.cells):
        yield _run_cell(cell, data, models, cell.scorer_object, versions, permutation, outputs, planned.get(i, 0.0))


def _prefetch_retraining(
    cells: Sequence[Cell], data: FoldData, models: SharedModels, outputs: Outputs
) -> dict[int, float]:
    """Train the models that the retraining scorers of the task's cells will ask for (remove-and-retrain: every
    method's fractions and repeats) as one batch per kind, before any cell is scored
    (:meth:`~synthbench.scoring.Scorer.retraining`, :meth:`~synthbench.models.SharedModels.prefetch`): which models
    share the batch is decided by the task's cells alone, and each is the model its cell would train. The methods
    those cells read run here, once, as their cells would run them; a method or a plan that raises is left to its
    cell, which runs it again and records what it raises. Returns, by position in ``cells``, each planned cell's
    seconds of planning (what its scorer computed for the plan: the maps it ranks, the first time they are asked
    for), which are its scorer's."""
    wanted: dict[str, list[TrainRequest]] = {}
    planned: dict[int, float] = {}
    for i, cell in enumerate(cells):
        scorer, spec = cell.scorer_object, cell.spec
        if not scorer.abilities.retrains or _too_wide(spec, data) is not None:
            continue
        try:
            if cell.method not in outputs:
                with PeakMemory() as peak:
                    output, seconds = _run_method(spec, data, models)
                outputs[cell.method] = (output, seconds, peak.bytes)
            t0, before = time.perf_counter(), _mark(models)
            plan = scorer.retraining(outputs[cell.method][0], data, spec, models)
            planned[i] = time.perf_counter() - t0 - _not_own(models, before)
        except Exception:  # noqa: BLE001 - left to the cell, which records it
            log.debug("no retraining planned for cell %s", cell, exc_info=True)
            continue
        if plan is not None:
            wanted.setdefault(plan[0], []).extend(plan[1])
    for kind, requests in wanted.items():
        try:
            models.prefetch(kind, requests)
        except Exception:  # noqa: BLE001 - each cell then trains its own and records what it raises
            log.debug("prefetching %d %s retrainings failed", len(requests), kind, exc_info=True)
    return planned


def _run_method(spec: MethodSpec, data: FoldData, models: SharedModels) -> tuple[MethodOutput, float]:
    """The method's output on the fold and its seconds as if it ran alone: its own time plus the training of every
    model it needs (whoever trained them)."""
    t0, before = time.perf_counter(), _mark(models)
    output = run_method(spec, data, models)
    own = time.perf_counter() - t0 - _not_own(models, before)
    needs = spec.needs_for(data.kind)
    return output, own + sum(models.info[k]["train_seconds"] for k in needs if k in models.info)


def _too_wide(spec: MethodSpec, data: FoldData) -> str | None:
    """Why the method does not run on the fold (more features than it declares it handles), or None."""
    if spec.max_features is not None and data.n_features > spec.max_features:
        return f"{spec.name} declares a limit of {spec.max_features} features; this cell has {data.n_features}"
    return None


def _mark(models: SharedModels) -> tuple[set[str], float]:
    """What :func:`_not_own` counts from: the fold's shared models trained so far and its siblings' seconds."""
    return set(models.info), models.siblings_seconds


def _not_own(models: SharedModels, mark: tuple[set[str], float]) -> float:
    """Seconds of a timed call since ``mark`` that are not its own: the training of the fold's shared models it asked
    for first (the fold's time, not that of whoever asked first) and the siblings' share of the setting's work it
    did or waited for (:meth:`~synthbench.models.SharedModels.across_setting`: their time)."""
    trained, siblings = mark
    shared = sum(v["train_seconds"] for k, v in models.info.items() if k not in trained)
    return shared + models.siblings_seconds - siblings


def _run_cell(
    cell: Cell,
    data: FoldData,
    models: SharedModels,
    scorer: Scorer,
    versions: dict[str, str],
    permutation: list[int] | None,
    outputs: Outputs,
    planned: float = 0.0,
) -> CellResult:
    """Run the cell's method (or reuse its output for another scorer of the same task), then its scorer (``planned``:
    the seconds its scorer already spent planning the task's retrainings, counted in its own).

    A control judged on another model (:attr:`Cell.judged`) runs as it always does and is scored
    on that model (:attr:`Cell.spec`).
    """
    spec = cell.spec
    base: dict[str, Any] = dict(
        n_features=data.n_features,
        k=data.k,
        permutation=permutation,
        versions=versions,
        input_shape=data.input_shape,
        global_truth=data.relevant is not None,
        masks=data.relevant_local is not None,
    )
    too_wide = _too_wide(spec, data)
    if too_wide is not None:
        return CellResult(cell, "skipped", too_wide, **base)
    needs = spec.needs_for(data.kind)
    cached = outputs.get(cell.method)
    with PeakMemory() as peak:
        t0 = time.perf_counter()
        try:
            output, seconds = _run_method(spec, data, models) if cached is None else cached[:2]
            t1, before, fetched = time.perf_counter(), _mark(models), models.prefetched_seconds
            scores = scorer.score(output, data, spec, models)
            # The scorer's own time: a shared model it asked for first is the fold's, not the scorer's; the models
            # the task trained for it in advance are its own (their shares of that batch).
            own = time.perf_counter() - t1 - _not_own(models, before)
            scorer_seconds = own + (models.prefetched_seconds - fetched) + planned
        except SkipCell as exc:  # the scorer cannot judge this method here: recorded with its reason
            return CellResult(cell, "skipped", f"{cell.scorer}: {exc}", **base)
        except MethodOutputError as exc:  # a defect of the method: the run stops (see run_grid)
            return CellResult(cell, "invalid", f"method {spec.name!r} on {cell.dataset}: {exc}", **base)
        except Exception as exc:  # noqa: BLE001 - recorded, the grid goes on
            log.debug("cell %s failed", cell, exc_info=True)
            return CellResult(cell, "failed", f"{type(exc).__name__}: {exc}", seconds=time.perf_counter() - t0, **base)
    peak_bytes = peak.bytes
    if cached is None:
        outputs[cell.method] = (output, seconds, peak_bytes)
    elif cached[2] is not None:  # the method's own peak, measured when it ran
        peak_bytes = max(cached[2], peak_bytes or 0)
    model_info = {k: models.info[k] for k in needs if k in models.info} or None
    maps = getattr(scores, "examples", None)  # a scorer's own maps (fragility: attacked), else the method's
    maps = output.local if maps is None else maps
    examples = (
        None if data.kind != "image" or maps is None else aggregate_channels(maps[:EXAMPLE_IMAGES]).astype("float32")
    )
    curves = scores.curves if isinstance(scores, Scores) else {}
    per_example = scores.per_example if isinstance(scores, Scores) else {}
    return CellResult(
        cell,
        "ok",
        None,
        dict(scores),
        scorer.chance(data),
        seconds,
        peak_bytes,
        model=model_info,
        scorer_seconds=scorer_seconds,
        examples=examples,
        curves=curves,
        per_example=per_example,
        **base,
    )
