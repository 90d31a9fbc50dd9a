"""The cell runner: one fold task's data, shared models and cells, each turned into a stored result.

Engine-independent: every executor (this process, local workers, Ray) calls :func:`run_task`.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import sys
import time
from collections.abc import Iterable, Iterator
from importlib import metadata
from pathlib import Path
from types import ModuleType

from synthbench.methods import run_method
from synthbench.models import SharedModels, TrainSettings
from synthbench.protocol import FoldData, MethodOutput, MethodOutputError, cell_fold
from synthbench.runner.grid import Cell, FoldTask
from synthbench.runner.memory import PeakMemory
from synthbench.runner.store import CellResult
from synthbench.scoring import Scorer, Scores, SkipCell
from synthbench.scoring.truth.localisation import aggregate_channels

__all__ = ["run_task", "import_plugins", "import_plugin", "is_plugin_path", "PluginError", "package_versions",
           "EXAMPLE_IMAGES"]

log = logging.getLogger(__name__)


class PluginError(ImportError):
    """A plugin that cannot be imported: no such module or file, or it raised while being imported.

    The message is one line naming the plugin and the error; the original exception is the
    ``__cause__``. ``raised`` is True when the plugin's own code raised (the cause's traceback then
    shows where).
    """

    def __init__(self, message: str, *, raised: bool = False) -> None:
        super().__init__(message)
        self.raised = raised


def is_plugin_path(item: str) -> bool:
    """Whether a plugin item names a file (``./myplug.py``, ``plugins/mine.py``) rather than a module."""
    return item.endswith(".py") or "/" in item or os.sep in item


def import_plugin(item: str) -> ModuleType:
    """Import one plugin: a module name (``mypackage.plugin``) or a path to a ``.py`` file.

    A file is imported as a module named after it (``./myplug.py`` as ``myplug``), once: the same
    file again returns the module already imported. :class:`PluginError` when the module or file
    does not exist, when another module of that name is already imported, or when the plugin
    raises while being imported.
    """
    return _import_file(item) if is_plugin_path(item) else _import_module(item)


def _import_module(item: str) -> ModuleType:
    try:
        return importlib.import_module(item)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if item == missing or item.startswith(missing + "."):  # the plugin itself, not a module it imports
            raise PluginError(f"No module named {item!r} (a plugin is a module on the Python path or a path to a "
                              f".py file)") from exc
        raise PluginError(_raised(item, exc), raised=True) from exc
    except Exception as exc:  # noqa: BLE001 - whatever the plugin raised, named on one line
        raise PluginError(_raised(item, exc), raised=True) from exc


def _import_file(item: str) -> ModuleType:
    path = Path(item).expanduser().resolve()
    if not path.is_file():
        raise PluginError(f"{item}: no such file")
    name = path.stem
    loaded = sys.modules.get(name)
    if loaded is not None:
        if getattr(loaded, "__file__", None) and Path(loaded.__file__).resolve() == path:
            return loaded
        raise PluginError(f"{item}: a module named {name!r} is already imported from elsewhere; rename the file")
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise PluginError(f"{item}: not a Python file")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - whatever the plugin raised, named on one line
        del sys.modules[name]
        raise PluginError(_raised(item, exc), raised=True) from exc
    return module


def _raised(item: str, exc: BaseException) -> str:
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return f"{item} raised {type(exc).__name__} while being imported{': ' + text if text else ''}"


def import_plugins(modules: Iterable[str]) -> None:
    """Import each plugin in ``modules`` (they register extra datasets or methods; see :func:`import_plugin`).

    Worker processes and Ray workers call this before running a task, so methods registered
    outside synthbench exist wherever cells run.
    """
    for item in modules:
        import_plugin(item)


#: Explained images whose relevance maps (channels summed in absolute value) an image cell stores
#: for the report's example figure.
EXAMPLE_IMAGES = 4

_VERSIONED = ("synthbench", "numpy", "scipy", "scikit-learn", "pandas", "shap", "skrebate", "pymrmr", "torch", "lassonet",
              "lightgbm")


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
    own cell (the message records the exception). A method whose output breaks its contract
    (:class:`~synthbench.protocol.MethodOutputError`) yields a cell of status ``invalid``, which
    the runner never stores: it stops the run.
    """
    head = task.head
    versions = package_versions()
    try:
        data, fold = cell_fold(head.dataset, n_samples=head.n_samples, seed=head.seed, n_folds=head.n_folds,
                               fold=head.fold, n_decoys=head.n_decoys, dataset_params=head.dataset_params,
                               explain=head.explain, data_dir=head.data_dir)
    except Exception as exc:  # noqa: BLE001 - recorded, the grid goes on
        for cell in task.cells:
            yield CellResult(cell, "failed", f"data: {type(exc).__name__}: {exc}", versions=versions)
        return
    models = SharedModels(data, settings, preset=head.model)
    permutation = None if fold.permutation is None else fold.permutation.tolist()
    outputs: dict[str, tuple[MethodOutput, float, int | None]] = {}  # one run per method, whatever the scorers
    for cell in task.cells:
        yield _run_cell(cell, data, models, cell.scorer_object, versions, permutation, outputs)


def _run_cell(cell: Cell, data: FoldData, models: SharedModels, scorer: Scorer, versions: dict[str, str],
              permutation: list[int] | None, outputs: dict[str, tuple[MethodOutput, float, int | None]]) -> CellResult:
    """Run the cell's method (or reuse its output for another scorer of the same task), then its scorer.

    A control judged on another model (:attr:`Cell.judged`) runs as it always does and is scored
    on that model (:attr:`Cell.spec`).
    """
    spec = cell.spec
    base = dict(n_features=data.n_features, k=data.k, permutation=permutation, versions=versions,
                input_shape=data.input_shape, global_truth=data.relevant is not None, masks=data.relevant_local is not None)
    if spec.max_features is not None and data.n_features > spec.max_features:
        return CellResult(cell, "skipped", f"{spec.name} declares a limit of {spec.max_features} features; "
                          f"this cell has {data.n_features}", **base)
    needs = spec.needs_for(data.kind)
    cached = outputs.get(cell.method)
    with PeakMemory() as peak:
        t0 = time.perf_counter()
        try:
            if cached is None:
                trained_before = set(models.info)
                output = run_method(spec, data, models)
                elapsed = time.perf_counter() - t0
                # Seconds as if the method ran alone: its own time plus the training of every model it needs.
                trained_now = sum(v["train_seconds"] for k, v in models.info.items() if k not in trained_before)
                seconds = elapsed - trained_now + sum(models.info[k]["train_seconds"] for k in needs if k in models.info)
            else:
                output, seconds, _ = cached
            t1, trained_before = time.perf_counter(), set(models.info)
            scores = scorer.score(output, data, spec, models)
            # The scorer's own time: a shared model it asked for first is the fold's, not the scorer's.
            scorer_seconds = time.perf_counter() - t1 - sum(
                v["train_seconds"] for k, v in models.info.items() if k not in trained_before)
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
    examples = None if data.kind != "image" or maps is None else aggregate_channels(maps[:EXAMPLE_IMAGES]).astype("float32")
    curves = scores.curves if isinstance(scores, Scores) else {}
    return CellResult(cell, "ok", None, dict(scores), scorer.chance(data), seconds, peak_bytes, model=model_info,
                      scorer_seconds=scorer_seconds, examples=examples, curves=curves, **base)
