"""Registry of model kinds and the per-fold cache that trains each kind once."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, cast

import joblib
import numpy as np
from filelock import FileLock

from synthbench import __version__
from synthbench.models.cache import cached_ceiling, write_atomically
from synthbench.models.competence import (
    Ceiling,
    competence_fields,
    held_out_quality,
    learnability_ceiling,
    relevant_only,
)
from synthbench.models.loop import BATCH_MEMORY, EpochInputs, TrainingFailed, unwrap
from synthbench.models.randomise import Layer
from synthbench.protocol import FoldData
from synthbench.registry import Registry

__all__ = [
    "ModelKind",
    "SharedModels",
    "Siblings",
    "TrainRequest",
    "TrainSettings",
    "MODEL_KINDS",
    "register_model",
    "kinds",
    "model_kind",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainSettings:
    """How models are trained, as opposed to what they are (which the cell's config fixes).

    Attributes
    ----------
    n_jobs : threads a trainer may use
    device : ``"auto"``, ``"cpu"`` or ``"cuda"`` for torch models
    cache_dir : folder of the on-disk model cache, or None for no disk cache
    batch_memory : bytes the data of models trained as one batch may take; a larger batch is split (by its members'
        sizes alone: no model changes), never refused
    """

    n_jobs: int = 1
    device: str = "cpu"
    cache_dir: str | None = None
    batch_memory: int = BATCH_MEMORY

    def __post_init__(self) -> None:
        if self.batch_memory <= 0:
            raise ValueError(f"batch_memory must be a positive number of bytes, got {self.batch_memory}")


@dataclass(frozen=True)
class TrainRequest:
    """One model of a batch a kind's ``train_many`` trains: its fold (changed or not), replicate and inputs redrawn
    per epoch (None: the fold's own)."""

    data: FoldData
    replicate: int = 0
    epoch_inputs: EpochInputs | None = None


@dataclass(frozen=True)
class ModelKind:
    """A kind of model methods may ask for.

    ``train(data, settings, *, replicate=0) -> model`` fits on ``data.X_train``; the model must
    offer ``predict_proba`` and ``classes_`` (scikit-learn convention) so the cache can score it
    on the held-out part. ``replicate`` numbers independent trainings of the same model on the
    same data (remove-and-retrain repeats, ensembles): each draws its own seed from the fold's
    seed and the replicate, and replicate 0 is the model every method shares.
    ``accelerated``: training runs on ``settings.device`` (torch), so a GPU speeds it up.
    ``uses_preset``: the kind is configured by a named preset (:mod:`synthbench.models.presets`);
    its trainer is called as ``train(data, settings, preset, replicate=r)`` and every method that
    needs it runs once per preset of a grid.
    ``retrainable``: a fresh model of the kind can be trained on changed data (remove-and-retrain
    scorers); False for a kind that only loads or fixes a model, which those scorers refuse before
    anything runs.
    ``inputs``: the input kinds it trains on (``"tabular"``, ``"image"``).
    ``epoch_inputs``: its trainer takes ``epoch_inputs=fn`` (``fn(epoch) -> X`` of the training
    rows, redrawn each epoch; see :func:`~synthbench.models.loop.fit_network`).
    ``training``: its trainer takes ``training={field: value}``, fields of
    :class:`~synthbench.models.loop.TrainConfig` replacing its preset's for one training (data
    randomisation trains without early stopping, to fit permuted labels).
    ``layers``: ``layers(model) -> tuple[Layer, ...]``, a trained model's parametrised layers in
    forward order with their initialisers (:mod:`synthbench.models.randomise`), for the
    model-randomisation checks; None for a kind without layers (the forest), which those checks
    refuse before anything runs.
    ``ceiling``: the kind takes part in each fold's learnability ceiling (it is trained on the
    relevant inputs only; :mod:`synthbench.models.competence`): every built-in kind that trains on
    tables declares it (the forest, the booster and the network, the last with the fold's preset), so
    that no model the benchmark explains stands above the ceiling beyond fold noise. A kind that only
    loads a model, or a plugin's expensive one, leaves it out.
    ``record``: ``record(model) -> dict`` of JSON values stored with the model's quality in
    :attr:`SharedModels.info` (what training chose: the screened inputs of the MLP and the booster); None records
    nothing.
    ``train_many``: ``train_many(requests, settings, [preset,] training=None) -> [model or TrainingFailed, ...]``
    trains several :class:`TrainRequest` of the kind as one batched computation (each model the one ``train``
    gives it alone: :func:`~synthbench.models.loop.fit_networks`); None for a kind whose models train one at a
    time (the forest and the booster: trees grow one split after another, nothing to stack), which is then
    called once per request.
    ``identity``: JSON values that enter the id of every cell whose method needs the kind (beside the package
    version): the training settings changed since that version's ids were first written, so a store never
    serves a result of the kind's earlier training; None adds nothing.
    """

    name: str
    train: Callable[..., Any]
    description: str
    accelerated: bool = False
    uses_preset: bool = False
    retrainable: bool = True
    epoch_inputs: bool = False
    inputs: tuple[str, ...] = ("tabular",)
    training: bool = False
    layers: Callable[[Any], tuple[Layer, ...]] | None = None
    ceiling: bool = False
    record: Callable[[Any], dict[str, Any]] | None = None
    train_many: Callable[..., list[Any]] | None = None
    identity: Mapping[str, Any] | None = None


#: Every registered model kind, by name.
MODEL_KINDS: Registry[ModelKind] = Registry("model kind")


def register_model(kind: ModelKind) -> ModelKind:
    """Add a model kind to the registry (ValueError when its name is taken)."""
    return MODEL_KINDS.add(kind.name, kind)


def kinds() -> list[str]:
    """Names of the registered model kinds."""
    return MODEL_KINDS.names()


def model_kind(name: str) -> ModelKind:
    """The registered kind ``name``; the KeyError lists the valid kinds."""
    return MODEL_KINDS[name]


@dataclass(frozen=True)
class Siblings:
    """Every fold of the setting a fold belongs to (the folds the grid defines, whichever are left to run), so its
    shared networks are trained with theirs as one batch. ``key`` names the setting (its data and folds);
    ``folds()`` builds their data, in fold order."""

    key: str
    folds: Callable[[], Sequence[FoldData]]


class SharedModels:
    """Models of one fold, trained lazily and at most once per kind.

    Parameters
    ----------
    data : FoldData
    settings : TrainSettings
    preset : the preset of every kind with ``uses_preset`` (None: that kind's trainer default)
    siblings : the setting's folds: with a disk cache in ``settings``, the shared model (replicate 0) of a kind
        with ``train_many`` is trained for every fold of the setting as one batch by the first fold that asks (the
        others wait for it, then read theirs from the cache); each is the model its fold trains alone
    """

    def __init__(
        self,
        data: FoldData,
        settings: TrainSettings = TrainSettings(),
        preset: str | None = None,
        siblings: Siblings | None = None,
    ) -> None:
        self._data = data
        self._settings = settings
        self._siblings = siblings
        self.preset = preset
        self._models: dict[str, Any] = {}
        self._shared: dict[tuple, Any] = {}
        self.info: dict[str, dict[str, Any]] = {}
        self.trainings = 0
        self._ceiling: Ceiling | None = None
        self._prefetched: dict[str, tuple[Any, float]] = {}
        #: Training seconds of the prefetched models :meth:`train_many_on` has handed out (each its batch share).
        self.prefetched_seconds = 0.0
        #: What this fold's :meth:`across_setting` calls took beyond the seconds of this fold's parts: its siblings'
        #: share (training their models, or waiting for the task that does), the setting's time, not this fold's; less
        #: than zero where a part was read from the cache in less time than it took to train (its seconds are still
        #: this fold's: the method that needs the model counts them).
        self.siblings_seconds = 0.0

    @property
    def settings(self) -> TrainSettings:
        """How models are trained (device, threads, cache); methods that train their own nets read it too."""
        return self._settings

    @property
    def ceiling(self) -> Ceiling:
        """The fold's learnability ceiling (:func:`~synthbench.models.competence.learnability_ceiling`), computed on
        first request: every registered kind declaring ``ceiling`` that trains on the fold's inputs, fitted on the
        relevant inputs only with the seed it has on the whole fold, a kind configured by a preset with this fold's
        (named ``kind:preset``, ``kind:default`` without one). With a disk cache in the settings, once per fold and
        preset whatever the tasks that ask (:func:`~synthbench.models.cache.cached_ceiling`); a kind that trains in
        batches trains the relevant-only models of the setting's folds as one (:meth:`across_setting`)."""
        if self._ceiling is None:
            trainers: dict[str, Callable[[FoldData], Any]] = {}
            for name, kind in MODEL_KINDS.items():
                if not (kind.ceiling and self._data.kind in kind.inputs):
                    continue
                label = f"{name}:{self.preset or 'default'}" if kind.uses_preset else name
                trainers[label] = self._ceiling_trainer(kind)
            compute = partial(learnability_ceiling, self._data, trainers)
            cache = self._settings.cache_dir
            self._ceiling = compute() if cache is None else cached_ceiling(self._data, trainers, compute, cache)
            log.debug("learnability ceiling of fold %d: %s", self._data.fold, self._ceiling)
        return self._ceiling

    def _ceiling_trainer(self, kind: ModelKind) -> Callable[[FoldData], Any]:
        """``train(restricted)``: the kind's model of this fold on its relevant inputs only (``restricted``), with this
        fold's seed and preset; for a kind trained with its setting's folds (:meth:`across_setting`), trained with
        those of every fold of the setting as one batch (each the model it is alone)."""
        if not self._with_setting(kind):
            preset = (self.preset,) if kind.uses_preset and self.preset is not None else ()
            return lambda restricted: kind.train(restricted, self._settings, *preset, replicate=0)

        def with_setting(restricted: FoldData) -> Any:
            model, _ = self.across_setting(
                kind.name,
                ("ceiling",),
                lambda folds: self._train(kind, [TrainRequest(relevant_only(f), 0) for f in folds], None),
            )
            return unwrap(model)

        return with_setting

    def get(self, name: str, replicate: int = 0) -> Any:
        """The trained model of kind ``name`` (its ``replicate``-th independent training), trained on first request.

        ``info`` records replicate 0 under ``name`` and replicate ``r > 0`` under ``"name#r"``: its
        held-out accuracy, AUROC (binary labels) and majority-class ``chance``, the fold's
        ceiling and the model's competence (:func:`~synthbench.models.competence.competence_fields`),
        and ``train_seconds`` (the training, its share of a batch, and the ceiling's when this model asked
        for it first).
        """
        return self.get_many(name, [replicate])[0]

    def get_many(self, name: str, replicates: Sequence[int]) -> list[Any]:
        """:meth:`get` of several replicates, those not yet trained trained as one batch (the kind's ``train_many``).

        Raises :class:`~synthbench.models.loop.TrainingFailed` when one of them failed to train.
        """
        if any(r < 0 for r in replicates):
            raise ValueError(f"replicate must be non-negative, got {min(replicates)}")
        keys = [name if r == 0 else f"{name}#{int(r)}" for r in replicates]
        missing = {k: int(r) for k, r in zip(keys, replicates, strict=True) if k not in self._models}
        if missing:
            kind = model_kind(name)
            done: dict[str, tuple[Any, float]] = {}
            if name in missing and self._with_setting(kind):  # the shared model, with every fold of the setting
                done[name] = self.across_setting(
                    name, ("shared",), lambda folds: self._train(kind, [TrainRequest(f, 0) for f in folds], None)
                )
            rest = [(k, r) for k, r in missing.items() if k not in done]
            if rest:
                done.update(
                    zip([k for k, _ in rest], self._train(kind, [TrainRequest(self._data, r) for _, r in rest], None))
                )
            failures = []
            for key in missing:
                model, seconds = done[key]
                if isinstance(model, TrainingFailed):
                    failures.append(model)  # its siblings are kept
                    continue
                self._record(key, kind, model, seconds)
            if failures:
                raise failures[0]
        return [self._models[k] for k in keys]

    def _record(self, key: str, kind: ModelKind, model: Any, seconds: float) -> None:
        """Keep ``model`` under ``key`` with its held-out quality, competence and seconds (its training's, and the
        fold's ceiling's when no model asked for it before)."""
        t1 = time.perf_counter()
        quality = held_out_quality(model, self._data)
        fields = competence_fields(quality, self.ceiling)
        seconds += time.perf_counter() - t1
        self.trainings += 1
        self._models[key] = model
        chosen = kind.record(model) if kind.record is not None else {}
        self.info[key] = {**quality, **fields, **chosen, "train_seconds": seconds}
        log.debug("trained %s in %.2fs: %s", key, seconds, self.info[key])

    def _with_setting(self, kind: ModelKind) -> bool:
        """Whether this fold trains ``kind``'s models with its setting's folds (:meth:`across_setting`): siblings, a
        disk cache to hand them their models, and a kind that trains in batches."""
        return self._siblings is not None and self._settings.cache_dir is not None and kind.train_many is not None

    def across_setting(
        self, name: str, tag: tuple, compute: Callable[[Sequence[FoldData]], Sequence[tuple[Any, float]]]
    ) -> tuple[Any, float]:
        """This fold's part of ``compute(folds)``, computed for every fold of the setting at once, so that the models
        of kind ``name`` it trains for them (through :meth:`train_many_on`) train as one batch.

        ``compute`` takes folds of the setting, in fold order, and gives each its part and the seconds that part
        cost; a fold's part must depend on that fold alone (a member's training does not depend on its batch). With
        siblings, a disk cache and a kind that trains in batches (``train_many``), the first task of the setting that
        asks computes it for the setting's folds (the batch is those the grid defines, whatever this run has left to
        do) under one lock per setting, ``name``, ``tag`` and preset; the others wait for it, then compute it again,
        each batch read whole from the cache. Otherwise ``compute([this fold])``. What this fold's call took beyond
        its own part's seconds is added to :attr:`siblings_seconds`.
        """
        if not self._with_setting(model_kind(name)):
            return compute([self._data])[0]
        return self._setting_part((name, tag, self.preset), compute, stored=False)

    def method_folds(
        self,
        data: FoldData,
        rng: np.random.Generator,
        name: str,
        tag: tuple,
        compute: Callable[[Sequence[FoldData], Sequence[np.random.Generator]], Sequence[Any]],
    ) -> Any:
        """This fold's part of what a method that trains its own networks, ``name``, computes for every fold of the
        setting at once, each fold drawing from its own stream of the method: ``compute(folds, rngs)`` gets ``rng``
        for this fold and ``fold.rng("method", name)`` for the others, and gives each fold's part (each costing an
        even share of its time); ``tag`` names the method and everything its parts depend on besides the fold.

        With siblings and a disk cache, the first task of the setting that asks computes every fold's part and
        stores each in the cache; the others read theirs. ``compute([data], [rng])`` alone where ``data`` is not
        this fold's own (a scorer's changed copy), ``rng`` not this fold's stream of the method (a scorer's other
        stream), or without siblings or a disk cache. Returns the part."""
        alone = (
            data is not self._data
            or self._siblings is None
            or self._settings.cache_dir is None
            or rng.bit_generator.state != data.rng("method", name).bit_generator.state
        )

        def run(folds: Sequence[FoldData]) -> list[tuple[Any, float]]:
            t0 = time.perf_counter()
            parts = compute(folds, [rng if f is data else f.rng("method", name) for f in folds])
            share = (time.perf_counter() - t0) / len(folds)
            return [(part, share) for part in parts]

        return (run([data])[0] if alone else self._setting_part(("method", tag), run, stored=True))[0]

    def _setting_part(
        self, key: tuple, compute: Callable[[Sequence[FoldData]], Sequence[tuple[Any, float]]], *, stored: bool
    ) -> tuple[Any, float]:
        """This fold's part of ``compute(siblings' folds)``, under one lock per setting and ``key``: computed anew
        (``stored=False``: each task computes it again, the batch's models read from the model cache), or read from
        the part the first task stored (``stored=True``). Adds what the call took beyond the part's seconds to
        :attr:`siblings_seconds`."""
        assert self._siblings is not None and self._settings.cache_dir is not None
        t0 = time.perf_counter()
        folder = Path(self._settings.cache_dir) / "settings"
        folder.mkdir(parents=True, exist_ok=True)
        name = joblib.hash((self._siblings.key, key, __version__))

        def stored_part(fold: int) -> Path:
            return folder / f"{name}-fold{fold}.joblib"

        with FileLock(str(folder / f"{name}.lock")):
            if stored and stored_part(self._data.fold).exists():
                mine = joblib.load(stored_part(self._data.fold))
            else:
                folds = list(self._siblings.folds())
                parts = compute(folds)
                (mine,) = [p for f, p in zip(folds, parts, strict=True) if f.fold == self._data.fold]
                if stored:
                    for f, p in zip(folds, parts, strict=True):
                        write_atomically(stored_part(f.fold), partial(joblib.dump, p))
        self.siblings_seconds += time.perf_counter() - t0 - mine[1]
        return mine

    def _train(
        self, kind: ModelKind, requests: Sequence[TrainRequest], training: Mapping[str, Any] | None
    ) -> list[tuple[Any, float]]:
        """The kind's model of each request and its seconds: one batch through ``train_many`` (each model's share of
        its batch, ``train_seconds``, also when the model was read from the disk cache; the batch's wall time shared
        evenly for a model that records none), or one ``train`` after another."""
        preset = (self.preset,) if kind.uses_preset and self.preset is not None else ()
        extra: dict[str, Any] = {"training": dict(training)} if training else {}
        if kind.train_many is not None:
            t0 = time.perf_counter()
            models = kind.train_many(list(requests), self._settings, *preset, **extra)
            even = (time.perf_counter() - t0) / max(1, len(models))
            return [(m, float(getattr(m, "train_seconds", even))) for m in models]
        out = []
        for r in requests:
            t0 = time.perf_counter()
            epochs = {"epoch_inputs": r.epoch_inputs} if r.epoch_inputs is not None else {}
            model = kind.train(r.data, self._settings, *preset, replicate=int(r.replicate), **epochs, **extra)
            out.append((model, time.perf_counter() - t0))
        return out

    def shared(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """``compute()`` the first time ``key`` is asked for in this fold, the same object afterwards.

        For what several cells of the fold derive from its models and would otherwise compute
        again (a method's maps of every training and test row, which ROAR and KAR both rank).
        ``key`` must name everything the result depends on beyond this fold and its preset.
        """
        if key not in self._shared:
            self._shared[key] = compute()
        return self._shared[key]

    def with_model(self, name: str, model: Any) -> SharedModels:
        """A view of this fold's models in which ``get(name)`` is ``model``: the seam a scorer uses to
        run a method against a model it supplies (randomised, retrained, smoothed).

        Every other kind, and every replicate ``r > 0`` of ``name``, is this fold's own (trained
        here on first request and shared with this object). The view keeps its own :meth:`shared`
        memo, since what is derived from a method's maps changes with the model, and records no
        ``info`` for ``model``. ``model`` must offer what the kind's models offer (a trained
        network's ``module``, ``classes_``, ``predict_proba``).
        """
        model_kind(name)  # UnknownName for a kind that is not registered
        return _ModelView(self, {name: model})

    def train_on(
        self,
        name: str,
        data: FoldData,
        replicate: int = 0,
        epoch_inputs: EpochInputs | None = None,
        training: Mapping[str, Any] | None = None,
    ) -> Any:
        """A fresh model of kind ``name`` trained on ``data`` with this fold's settings and preset; not kept.

        :meth:`train_many_on` of one request, its failure raised.
        """
        return unwrap(self.train_many_on(name, [TrainRequest(data, replicate, epoch_inputs)], training)[0])

    def train_many_on(
        self, name: str, requests: Sequence[TrainRequest], training: Mapping[str, Any] | None = None
    ) -> list[Any]:
        """Fresh models of kind ``name``, one per :class:`TrainRequest`, trained as one batch; not kept.

        Each request's ``data`` is this fold changed (remove-and-retrain: inputs replaced); replicate
        ``r``'s seed is drawn from its data's seed and fold as for :meth:`get`, so replicate ``r`` here
        starts from the same initialisation as the fold's own replicate ``r``. With a disk cache in the
        settings, the batch is read from it when every member is there and trained whole otherwise, so
        which models share a batch never depends on what the cache holds. ``epoch_inputs``
        (kinds that declare ``epoch_inputs`` only) gives a request's training rows anew each epoch; such a
        training is not cached. ``training`` (kinds that declare ``training`` only) replaces fields of the
        preset's training configuration. A model that failed to train is its
        :class:`~synthbench.models.loop.TrainingFailed`, in its place; the others are unaffected.

        Raises
        ------
        ValueError
            For a kind that is not ``retrainable``, or ``epoch_inputs`` or ``training`` to a kind
            that takes none.
        """
        kind = _retrainable(name, requests, training)
        keys = [_request_key(name, r, training) for r in requests]
        if keys and all(k is not None and k in self._prefetched for k in keys):
            got = [self._prefetched[cast(str, k)] for k in keys]
            self.prefetched_seconds += sum(seconds for _, seconds in got)
            return [model for model, _ in got]
        return [model for model, _ in self._train(kind, requests, training)]

    def prefetch(self, name: str, requests: Sequence[TrainRequest], training: Mapping[str, Any] | None = None) -> None:
        """Train now, as one batch, what several later :meth:`train_many_on` calls will ask for (the
        remove-and-retrain cells of a task, every method's fractions and repeats); each later call whose every
        request was prefetched takes those models, and adds their shares of the batch's seconds to
        :attr:`prefetched_seconds`, instead of training. The models are those each call would train (a member's
        training does not depend on its batch). Requests with ``epoch_inputs`` (never the same twice) are left to
        their call; a request already prefetched is not trained again."""
        kind = _retrainable(name, requests, training)
        todo: dict[str, TrainRequest] = {}
        for r in requests:
            key = _request_key(name, r, training)
            if key is not None and key not in self._prefetched:
                todo.setdefault(key, r)
        if todo:
            trained = self._train(kind, list(todo.values()), training)
            self._prefetched.update(zip(todo, trained, strict=True))


def _retrainable(name: str, requests: Sequence[TrainRequest], training: Mapping[str, Any] | None) -> ModelKind:
    """Kind ``name``, checked to take ``requests`` and ``training`` (:meth:`SharedModels.train_many_on`)."""
    if any(r.replicate < 0 for r in requests):
        raise ValueError(f"replicate must be non-negative, got {min(r.replicate for r in requests)}")
    kind = model_kind(name)
    if not kind.retrainable:
        raise ValueError(f"model kind {name!r} cannot be retrained (it declares retrainable=False)")
    if any(r.epoch_inputs is not None for r in requests) and not kind.epoch_inputs:
        raise ValueError(f"model kind {name!r} trains without epochs; it cannot take inputs redrawn per epoch")
    if training and not kind.training:
        raise ValueError(f"model kind {name!r} declares no training configuration to change")
    return kind


def _request_key(name: str, request: TrainRequest, training: Mapping[str, Any] | None) -> str | None:
    """What a request's model depends on beyond its fold's preset and settings, as a digest (None for one with
    ``epoch_inputs``): the kind, its training rows and labels, the fold's seed and index, its replicate, and the
    training fields it changes."""
    if request.epoch_inputs is not None:
        return None
    data = request.data
    digest = hashlib.sha256()
    for array in (data.X_train, data.y_train):
        digest.update(np.ascontiguousarray(array).tobytes())
    extra = (name, data.X_train.shape, str(data.X_train.dtype), data.seed, data.fold, data.n_classes, request.replicate)
    digest.update(repr(extra).encode())
    digest.update(json.dumps(dict(training or {}), sort_keys=True, default=str).encode())
    return digest.hexdigest()


class _ModelView(SharedModels):
    """:meth:`SharedModels.with_model`'s view: substitutes for replicate 0 of some kinds, the rest shared."""

    def __init__(self, base: SharedModels, substitutes: dict[str, Any]) -> None:
        super().__init__(base._data, base.settings, base.preset)
        self._base = base
        self._substitutes = substitutes
        self.info = base.info

    @property
    def ceiling(self) -> Ceiling:
        return self._base.ceiling

    def get_many(self, name: str, replicates: Sequence[int]) -> list[Any]:
        if name not in self._substitutes:
            return self._base.get_many(name, replicates)
        return [self._substitutes[name] if r == 0 else self._base.get(name, r) for r in replicates]

    def with_model(self, name: str, model: Any) -> SharedModels:
        model_kind(name)
        return _ModelView(self._base, {**self._substitutes, name: model})
