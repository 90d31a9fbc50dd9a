"""The public check battery: what every dataset, method, model kind and scorer must satisfy.

As scikit-learn's ``check_estimator``: a plugin author registers a component, then runs one line::

    from synthbench.testing import check_method
    check_method("my_method")

Each ``check_*`` runs the contract checks the project's own tests run over every registered
component, on small data it builds with fixed seeds, and raises :class:`CheckFailed` (an
AssertionError, so pytest reports it as a failed test) naming the component and the broken
check. It returns the names of the checks that ran.

- :func:`check_dataset`: dtypes and shapes, labels ``0..K-1`` with at least two classes, finite
  inputs, the declared input kind, ground truth of the input shape, determinism under a seed,
  another seed gives other data, decoys (tables) appended without moving the other columns,
  JSON-serialisable provenance.
- :func:`check_method`: declared metadata (description, input kinds, model kinds, parameters
  that a store can record), then on a small fold of every input kind it accepts: a valid output
  (scores of the input shape and/or maps ``(n_explain, *input_shape)``, no NaN), identical on a
  second run; on tables also with no decoys and
  with a single feature; a method that explains one model explains the model it is handed
  (:func:`synthbench.methods.run_method` with ``model=``), so scorers can run it on a
  randomised or retrained copy.
- :func:`check_model_kind`: probabilities ``(n, K)`` that sum to one, ``classes_``, the same
  model from the same seed, another replicate is another training, a pickle round trip keeps
  the predictions (worker processes and the disk cache pickle models), retraining on changed
  data when the kind declares it ``retrainable``, training with its configuration changed when
  it declares ``training``, and, when it declares ``layers``, layers that exist and whose
  re-draw changes a copy's predictions (the model-randomisation checks rely on them).
- :func:`check_scorer`: declared metrics (direction, limits, description, kinds), then on a
  small fold of every input kind its metrics apply to: the values of the ``random`` control
  and of a perfect map are finite, inside the declared limits and identical on a second run;
  ``chance`` and ``params_for`` are well formed.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import pickle
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from synthbench import datasets
from synthbench.datasets import KINDS, Dataset
from synthbench.kinds import get_kind
from synthbench.methods import get_method, run_method
from synthbench.models import SharedModels, TrainRequest, model_kind
from synthbench.models.randomise import randomised
from synthbench.protocol import FoldData, MethodOutput, cell_fold, dataset_folds
from synthbench.scoring import Abilities, Scorer, configure_scorer

__all__ = [
    "CheckFailed",
    "CheckData",
    "check_dataset",
    "check_method",
    "check_model_kind",
    "check_scorer",
    "small_fold",
]


class CheckFailed(AssertionError):
    """A registered component broke its contract; the message names the component and the check."""


class _Checks:
    """Runs named checks on one component, stopping at the first failure."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.passed: list[str] = []

    def _run(self, check: str, compute: Callable[[], Any]) -> Any:
        try:
            return compute()
        except Exception as exc:  # noqa: BLE001 - any exception is the component's failure
            raise CheckFailed(f"{self.what}: {check}: {type(exc).__name__}: {exc}") from exc

    def value(self, check: str, compute: Callable[[], Any]) -> Any:
        """``compute()``'s value; any exception it raises fails ``check``."""
        value = self._run(check, compute)
        self.passed.append(check)
        return value

    def __call__(self, check: str, ok: bool | Callable[[], bool], detail: str = "") -> None:
        """Fail ``check`` unless ``ok`` (or ``ok()``) is true."""
        if not (self._run(check, ok) if callable(ok) else ok):
            raise CheckFailed(f"{self.what}: {check}" + (f" ({detail})" if detail else ""))
        self.passed.append(check)


def small_fold(kind: str, *, fold: int = 0) -> FoldData:
    """Fold ``fold`` of 3 of the small data set the checks use for ``kind`` inputs (its
    :attr:`~synthbench.kinds.InputKind.check_dataset` and ``check_params``)."""
    entry = get_kind(kind)
    rest = dict(entry.check_params)
    data, _ = cell_fold(
        entry.check_dataset,
        n_samples=rest.pop("n_samples"),
        seed=rest.pop("seed"),
        n_decoys=rest.pop("n_decoys"),
        n_folds=3,
        fold=fold,
        dataset_params=rest,
    )
    return data


def _fold_of(ds: Dataset, fold: int = 0) -> FoldData:
    return FoldData.from_dataset(ds, dataset_folds(ds, n_folds=3, seed=ds.seed)[fold])


class CheckData:
    """The folds the checks run on and their trained models, built once and shared by every check
    given the same object (a test suite checking many methods trains each fold's models once)."""

    def __init__(self) -> None:
        self._folds: dict[str, FoldData] = {}
        self._models: dict[int, tuple[FoldData, SharedModels]] = {}
        self._tiny: list[FoldData] | None = None

    def fold(self, kind: str) -> FoldData:
        """:func:`small_fold` of ``kind``."""
        if kind not in self._folds:
            self._folds[kind] = small_fold(kind)
        return self._folds[kind]

    def tiny_tables(self) -> list[FoldData]:
        """A single-feature table (a threshold on it) and a two-feature one without decoys."""
        if self._tiny is None:
            X = np.random.default_rng(0).uniform(-1, 1, size=(90, 1)).astype(np.float32)
            one = Dataset(X, (X[:, 0] > 0).astype(np.int64), np.ones(1, dtype=bool), None, "threshold", {"p": 1}, 0)
            self._tiny = [_fold_of(one), _fold_of(datasets.make("ring", n_samples=90, n_decoys=0, seed=0))]
        return self._tiny

    def models(self, fold: FoldData) -> SharedModels:
        """The shared models of ``fold``, trained on first request."""
        if id(fold) not in self._models:
            self._models[id(fold)] = (fold, SharedModels(fold))  # keeps the fold alive, so its id is not reused
        return self._models[id(fold)][1]


def _recordable(params: Mapping[str, Any]) -> bool:
    json.dumps(dict(params), sort_keys=True)
    return True


def _same_output(a: MethodOutput, b: MethodOutput) -> bool:
    def same(u: np.ndarray | None, v: np.ndarray | None) -> bool:
        return (u is None and v is None) or (u is not None and v is not None and np.array_equal(u, v))

    return same(a.scores, b.scores) and same(a.local, b.local)


# --------------------------------------------------------------------------------------------- datasets
def check_dataset(name: str, *, n_samples: int = 120, **params: Any) -> list[str]:
    """Check the registered dataset ``name`` (with its own ``params``) against the data contract.

    Returns the checks that passed; raises :class:`CheckFailed` at the first that does not.
    """
    spec = datasets.spec(name)
    check = _Checks(f"dataset {name!r}")
    decoys = {"n_decoys": 3} if spec.decoys else {}

    def make(seed: int, **extra: Any) -> Dataset:
        return datasets.make(name, n_samples=n_samples, seed=seed, **{**decoys, **params, **extra})

    ds = make(0)
    check("returns a Dataset", isinstance(ds, Dataset), type(ds).__name__)
    check("declared input kind", ds.kind == spec.kind and spec.kind in KINDS, f"declared {spec.kind}, made {ds.kind}")
    check("n_samples rows", ds.X.shape[0] == n_samples == ds.y.shape[0], f"{ds.X.shape}")
    check("X float32 and finite", ds.X.dtype == np.float32 and bool(np.isfinite(ds.X).all()))
    check("y int64 labels 0..K-1", ds.y.dtype == np.int64 and ds.y.min() >= 0)
    check("at least two classes", len(np.unique(ds.y)) >= 2)
    if ds.relevant is not None:
        check("global truth of the input shape", ds.relevant.shape == ds.input_shape and bool(ds.relevant.any()))
    if ds.relevant_local is not None:
        check(
            "masks (n, *input_shape), bool",
            ds.relevant_local.shape == (n_samples, *ds.input_shape) and ds.relevant_local.dtype == np.bool_,
        )
        if ds.relevant is not None:
            check("masks inside the global truth", not ds.relevant_local[:, ~ds.relevant].any())
    check("provenance JSON-serialisable", lambda: _recordable(ds.params))
    again = make(0)
    check(
        "same seed, same data",
        np.array_equal(ds.X, again.X) and np.array_equal(ds.y, again.y) and ds.params == again.params,
    )
    other = make(1)
    check("another seed, other data", ds.X.shape != other.X.shape or not np.array_equal(ds.X, other.X))
    if spec.decoys and spec.kind == "tabular":
        none = make(0, n_decoys=0)
        p = none.n_features
        check(
            "decoys appended without moving the other columns",
            ds.n_features == p + 3 and np.array_equal(ds.X[:, :p], none.X) and np.array_equal(ds.y, none.y),
        )
        check("decoys are not relevant", ds.relevant is None or not ds.relevant[p:].any())
    return check.passed


# --------------------------------------------------------------------------------------------- methods
def check_method(name: str, *, data: FoldData | None = None, cache: CheckData | None = None) -> list[str]:
    """Check the registered method ``name`` against the method contract.

    Parameters
    ----------
    data : check on this fold only (default: :func:`small_fold` of every input kind it accepts,
        and on tables also a single feature and no decoys)
    cache : folds and trained models shared with other checks (None: built for this call)

    Returns the checks that passed; raises :class:`CheckFailed` at the first that does not.
    """
    spec = get_method(name)
    check = _Checks(f"method {name!r}")
    check("has a description", bool(spec.description.strip()))
    check("accepts known input kinds", bool(spec.inputs) and set(spec.inputs) <= set(KINDS), str(spec.inputs))
    for kind in spec.inputs:
        check(f"needs registered model kinds on {kind}", lambda: all(model_kind(k) for k in spec.needs_for(kind)))
        check(f"parameters on {kind} can be recorded", lambda: _recordable(spec.params_for(kind)))
    cache = CheckData() if cache is None else cache

    def run(fold: FoldData, **kw: Any) -> MethodOutput:
        return run_method(spec, fold, cache.models(fold), **kw)

    for fold in [data] if data is not None else [cache.fold(kind) for kind in spec.inputs]:
        kind = fold.kind
        # run_method validates: scores of the input shape, maps (n_explain, *input_shape), no NaN
        out = check.value(f"{kind}: a valid output", lambda: run(fold))
        check(f"{kind}: same fold, same output", lambda: _same_output(out, run(fold)))
        check(
            f"{kind}: returns a map per example exactly when it declares maps",
            (out.local is not None) == spec.maps,
            f"maps={spec.maps}, returned {'maps' if out.local is not None else 'scores only'}",
        )
        explained = spec.explains(kind)
        if explained is not None:
            models = cache.models(fold)
            check(
                f"{kind}: a copy of its model handed to it (run_method(..., model=)) gives the same output",
                lambda: _same_output(out, run(fold, model=copy.deepcopy(models.get(explained)))),
            )
            check(
                f"{kind}: explains the model it is handed (another training of it gives another output)",
                lambda: not _same_output(out, run(fold, model=models.get(explained, replicate=1))),
                "does the method hold a model instead of asking models.get(kind) each run?",
            )
    if data is None and "tabular" in spec.inputs:
        for fold in cache.tiny_tables():
            check.value(f"tabular: a valid output on {fold.n_features} feature(s), no decoys", lambda: run(fold))
    return check.passed


# --------------------------------------------------------------------------------------------- model kinds
def check_model_kind(name: str, *, data: FoldData | None = None) -> list[str]:
    """Check the registered model kind ``name`` against the model contract.

    ``data``: the fold to train on (default: :func:`small_fold` of the kind's first input kind).
    Returns the checks that passed; raises :class:`CheckFailed` at the first that does not.
    """
    kind = model_kind(name)
    check = _Checks(f"model kind {name!r}")
    check("has a description", bool(kind.description.strip()))
    check("accepts known input kinds", bool(kind.inputs) and set(kind.inputs) <= set(KINDS), str(kind.inputs))
    fold = small_fold(kind.inputs[0]) if data is None else data
    models = SharedModels(fold)
    model = models.get(name)
    proba = model.predict_proba(fold.X_test)
    k = len(model.classes_)
    check("classes_ are 0..K-1", np.array_equal(np.asarray(model.classes_), np.arange(k)) and k >= 2)
    check("predict_proba (n, K)", proba.shape == (fold.X_test.shape[0], k), f"{proba.shape}")
    check("probabilities sum to one", bool(np.all(proba >= 0)) and np.allclose(proba.sum(axis=1), 1.0))
    check("held-out quality recorded", name in models.info and "test_accuracy" in models.info[name])
    again = SharedModels(fold).get(name)
    check("same seed, same model", np.array_equal(again.predict_proba(fold.X_test), proba))
    other = models.get(name, replicate=1)
    check("another replicate, another training", not np.array_equal(other.predict_proba(fold.X_test), proba))
    check(
        "a pickle round trip keeps the predictions",
        lambda: np.array_equal(pickle.loads(pickle.dumps(model)).predict_proba(fold.X_test), proba),
    )
    if kind.retrainable:
        changed = dataclasses.replace(fold, X_train=fold.X_train[::-1].copy(), y_train=fold.y_train[::-1].copy())
        check(
            "retrains on changed data",
            lambda: models.train_on(name, changed).predict_proba(fold.X_test).shape == proba.shape,
        )
    if kind.train_many is not None:
        check(
            "a batch trains each model as it trains alone",
            lambda: _batch_is_alone(models, name, fold, other, proba),
            "train_many([replicate 0, replicate 1]) must give the predictions of get(name) and get(name, 1)",
        )
    if kind.training:
        training = {"validation": "none", "restore": "last", "max_epochs": 2}  # what data randomisation changes
        check(
            "trains with its training configuration changed",
            lambda: models.train_on(name, fold, training=training).predict_proba(fold.X_test).shape == proba.shape,
        )
    if kind.layers is not None:
        _check_layers(check, kind.layers(model), model, fold.X_test, proba)
    return check.passed


def _batch_is_alone(models: SharedModels, name: str, fold: FoldData, other: Any, proba: np.ndarray) -> bool:
    """Replicates 0 and 1 trained as one batch predict what each predicts trained alone (within float32
    rounding: a GPU's kernels need not be the same bits)."""
    batch = models.train_many_on(name, [TrainRequest(fold, 0), TrainRequest(fold, 1)])
    first, second = (np.asarray(m.predict_proba(fold.X_test)) for m in batch)
    return bool(
        np.allclose(first, proba, rtol=0, atol=1e-4)
        and np.allclose(second, other.predict_proba(fold.X_test), rtol=0, atol=1e-4)
    )


def _check_layers(check: _Checks, layers: tuple[Any, ...], model: Any, X: np.ndarray, proba: np.ndarray) -> None:
    """The declared layers exist, re-drawing them changes a copy's predictions (never the model's), and a
    layer's re-draw depends on its seed alone."""
    names = [layer.name for layer in layers]
    check(
        "declares its layers, each a submodule",
        bool(names) and len(set(names)) == len(names) and all(_submodule(model.module, n) for n in names),
        str(names),
    )
    seeds = {n: i + 1 for i, n in enumerate(names)}
    redrawn = randomised(model, layers, names, seeds)
    check(
        "re-drawing every layer changes the copy's predictions",
        not np.allclose(redrawn.predict_proba(X), proba) and np.array_equal(model.predict_proba(X), proba),
    )
    last = [names[-1]]
    check(
        "a layer's re-draw depends on its seed alone",
        lambda: np.array_equal(
            randomised(model, layers, last, seeds).predict_proba(X),
            randomised(model, layers, last, seeds).predict_proba(X),
        ),
    )


def _submodule(module: Any, name: str) -> bool:
    try:
        module.get_submodule(name)
    except AttributeError:
        return False
    return True


# --------------------------------------------------------------------------------------------- scorers
def check_scorer(name: str, *, data: FoldData | None = None, options: Mapping[str, Any] | None = None) -> list[str]:
    """Check the registered scorer ``name`` against the scorer contract.

    ``data``: the fold to score on (default: :func:`small_fold` of every input kind its metrics
    apply to). ``options``: the scorer's options for the check (``{"repeats": 1}`` keeps a
    retraining scorer quick; see :func:`~synthbench.scoring.configure_scorer`). The ``random``
    control and a perfect map (the fold's truth) are scored, the perfect map twice.
    Returns the checks that passed; raises :class:`CheckFailed` at the first that does not.
    """
    scorer = configure_scorer(name, options or {})
    check = _Checks(f"scorer {name!r}")
    check("declares metrics", bool(scorer.metrics))
    check("declares its abilities", isinstance(scorer.abilities, Abilities), repr(scorer.abilities))
    check(
        "checks the layers it randomises",
        not scorer.abilities.randomises_layers or type(scorer).check_layers is not Scorer.check_layers,
    )
    for metric_name, metric in scorer.metrics.items():
        lo, hi = metric.limits
        check(
            f"metric {metric_name}: metadata",
            metric.name == metric_name
            and metric.direction in ("higher", "lower")
            and bool(metric.description.strip())
            and lo < hi
            and set(metric.kinds) <= set(KINDS),
        )
    kinds = [k for k in KINDS if any(k in m.kinds for m in scorer.metrics.values())]
    folds = [data] if data is not None else [small_fold(k) for k in kinds]
    control = get_method("random")
    for fold in folds:
        kind = fold.kind
        check(f"{kind}: parameters can be recorded", lambda: _recordable(scorer.params_for(kind)))
        models = SharedModels(fold)
        outputs = {"random": run_method(control, fold, models), "truth": _perfect(fold)}
        for label, output in outputs.items():
            values = scorer.score(output, fold, control, models)
            check(f"{kind}: values for the {label} map", bool(values))
            for metric_name, value in values.items():
                check(f"{kind}: {metric_name} is declared", metric_name in scorer.metrics)
                metric = scorer.metrics[metric_name]
                lo, hi = metric.limits
                check(
                    f"{kind}: {metric_name} of the {label} map finite and within its limits",
                    math.isfinite(value) and lo - 1e-9 <= value <= hi + 1e-9,
                    f"{value} not in {metric.limits}",
                )
            _check_per_example(check, kind, label, values)
        values = dict(values)
        again = dict(scorer.score(outputs["truth"], fold, control, SharedModels(fold)))
        check(f"{kind}: same fold, same values", values == again, f"{values} then {again}")
        chance = scorer.chance(fold)
        check(f"{kind}: chance names declared metrics", set(chance) <= set(scorer.metrics), str(sorted(chance)))
    return check.passed


def _check_per_example(check: _Checks, kind: str, label: str, values: Mapping[str, float]) -> None:
    """A scorer's values per example (:attr:`~synthbench.scoring.Scores.per_example`), where it records them: of
    metrics it reports, one length for all, and their mean (over the examples where defined) the metric's value."""
    per_example = getattr(values, "per_example", {})
    if not per_example:
        return
    check(
        f"{kind}: per-example values of reported metrics, one per example each",
        set(per_example) <= set(values) and len({len(v) for v in per_example.values()}) == 1,
        f"{ {m: len(v) for m, v in per_example.items()} } for metrics {sorted(values)}",
    )
    for metric_name, rows in per_example.items():
        finite = rows[np.isfinite(rows)]
        check(
            f"{kind}: {metric_name} of the {label} map is the mean of its per-example values",
            len(finite) > 0 and math.isclose(float(finite.mean()), values[metric_name], rel_tol=1e-6, abs_tol=1e-9),
            f"mean {finite.mean() if len(finite) else 'of nothing'} against {values[metric_name]}",
        )


def _perfect(fold: FoldData) -> MethodOutput:
    """The fold's truth as a method's output: global scores and, where the truth is per example, maps."""
    scores = None if fold.relevant is None else fold.relevant.astype(np.float64)
    local = None if fold.relevant_local is None else fold.relevant_local.astype(np.float64)
    if scores is None and local is None:
        scores = np.ones(fold.input_shape)
    if local is None and scores is not None and fold.kind == "image":  # scores are set when local is None
        local = np.broadcast_to(scores, fold.X_explain.shape).copy()
    return MethodOutput(scores, local)
