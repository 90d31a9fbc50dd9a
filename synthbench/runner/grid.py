"""What to run: a grid of cells, grouped into fold tasks that share data and models.

A *cell* is one method, scored by one scorer, on one fold of one dataset configuration; it is
the unit stored and skipped on resume, keyed by a hash of its full configuration and the package
version. A *fold task* is the pending cells of one (dataset, n_samples, n_decoys, seed, fold)
that need the same models (and the same preset): they share the generated data, the fold's
transform and the trained models. Cells whose methods need different models go to different
tasks, so an executor can run them side by side and give torch tasks a share of a GPU.

A grid pairs every dataset with every method; a method that does not accept a dataset's input
kind (a tabular filter on images) makes the grid invalid (``ValueError`` before anything runs)
unless the grid was told to leave such pairs out (``skip_inapplicable``, for default method
lists). Datasets without decoys get one configuration whatever the decoy counts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from synthbench import __version__, datasets
from synthbench.methods import MethodSpec, get_method
from synthbench.models import model_kind
from synthbench.models.presets import DEFAULT_PRESET, DEFAULT_PRESETS, get_preset
from synthbench.runner.judged import entry_label
from synthbench.scoring import configure_scorer, explained_kind, get_scorer, scorer_options

__all__ = ["Cell", "FoldTask", "GridSpec"]


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True)
class Cell:
    """One method, scored by one scorer, on one fold of one dataset configuration.

    ``n_decoys`` is None for a dataset without decoys. ``scorer`` names a registered scorer.
    ``judged`` is the model kind a control is judged on by a scorer that judges the explained model,
    when it is not the input kind's default (``"forest"``, beside the methods that explain the
    forest; :meth:`GridSpec.judged_for`); None otherwise, and then absent from the id.
    """

    dataset: str
    n_samples: int
    n_decoys: int | None
    seed: int
    n_folds: int
    fold: int
    method: str
    explain: str = "test"  # the rows the methods explain (synthbench.protocol.explained_part): test, train, test:100
    scorer: str = "ground_truth"
    dataset_params: tuple[tuple[str, Any], ...] = ()
    suite: tuple[str, str] | None = None  # (name, hash) of the suite the cell belongs to
    model: str | None = None  # the MLP preset the method explains; None for methods that need no MLP
    scorer_options: tuple[tuple[str, Any], ...] = ()  # changes to the registered scorer's settings
    judged: str | None = None  # the model kind a control is judged on, when not the input kind's default
    #: where a data set read from files lies; not part of the id (the files' content is, as ``data_hash``)
    data_dir: str | None = field(default=None, compare=False)

    @property
    def scorer_object(self) -> Any:
        """The cell's scorer: the registered one with :attr:`scorer_options` applied."""
        return configure_scorer(self.scorer, self.scorer_options)

    @property
    def label(self) -> str:
        """:func:`~synthbench.runner.judged.entry_label` of the cell's method and preset (or the model kind it is
        judged on)."""
        return entry_label(self.method, self.model or self.judged)

    @property
    def spec(self) -> MethodSpec:
        """The cell's method, judged on :attr:`judged` when set (:meth:`MethodSpec.judged_on`)."""
        spec = get_method(self.method)
        return spec if self.judged is None else spec.judged_on(self.kind, self.judged)

    @property
    def judged_model(self) -> str | None:
        """The model kind the cell's scorer measures (:func:`explained_kind`), or None for a scorer that
        judges no model (the ground truth)."""
        if not self.scorer_object.abilities.judges_model:
            return None
        return explained_kind(self.spec, self.kind)

    @property
    def needs(self) -> tuple[str, ...]:
        """The model kinds the cell's fold must train for it: its method's, or the kind a control is judged on."""
        return (self.judged,) if self.judged is not None else get_method(self.method).needs_for(self.kind)

    @property
    def method_params(self) -> dict[str, Any]:
        """The parameters the method runs with on this cell's input kind."""
        return get_method(self.method).params_for(self.kind)

    @property
    def kind(self) -> str:
        """The input kind of the cell's dataset."""
        return datasets.spec(self.dataset).kind

    def config(self) -> dict[str, Any]:
        """Everything that defines the cell's result, including the package version (and suite, if any).

        ``n_decoys`` is left out for datasets without decoys, and ``judged`` when None (the ids
        are those of earlier versions).
        """
        config = {
            "dataset": self.dataset,
            "dataset_params": dict(self.dataset_params),
            "n_samples": self.n_samples,
            "n_decoys": self.n_decoys,
            "seed": self.seed,
            "n_folds": self.n_folds,
            "fold": self.fold,
            "method": self.method,
            "method_params": self.method_params,
            "explain": self.explain,
            "scorer": self.scorer,
            "version": __version__,
        }
        if self.n_decoys is None:
            del config["n_decoys"]
        scorer_params = self.scorer_object.params_for(self.kind)  # the options enter the id through them
        if scorer_params:
            config["scorer_params"] = scorer_params
        fingerprint = datasets.spec(self.dataset).fingerprint
        if fingerprint is not None:
            config["data_hash"] = fingerprint(self.data_dir)  # the files' content: another copy is another cell
        if self.model is not None:
            config["model"] = {"preset": self.model, "config": get_preset(self.model).config.to_dict()}
        identities = {k: dict(identity) for k in self.needs if (identity := model_kind(k).identity)}
        if identities:
            config["models"] = identities
        if self.judged is not None:
            config["judged"] = self.judged
        if self.suite is not None:
            config["suite"] = {"name": self.suite[0], "hash": self.suite[1]}
        return config

    @property
    def cell_id(self) -> str:
        """SHA-256 of the canonical JSON of :meth:`config` (hex, 32 chars)."""
        return hashlib.sha256(_canonical(self.config()).encode()).hexdigest()[:32]

    def setting(self) -> dict[str, Any]:
        """What defines the cell's data but its dataset and fold: the keyword arguments of
        :func:`~synthbench.protocol.cell_fold` and :func:`~synthbench.protocol.setting_folds`."""
        return dict(
            n_samples=self.n_samples,
            seed=self.seed,
            n_folds=self.n_folds,
            n_decoys=self.n_decoys,
            dataset_params=self.dataset_params,
            explain=self.explain,
            data_dir=self.data_dir,
        )

    @property
    def task_key(self) -> tuple:
        """What the cells of one fold task share: their setting and fold."""
        return (*self.setting_key, self.fold)

    @property
    def setting_key(self) -> tuple:
        """What the cells of one setting share, every fold alike: data, sizes, seed, explain mode and preset."""
        return (
            self.dataset,
            self.dataset_params,
            self.n_samples,
            self.n_decoys,
            self.seed,
            self.n_folds,
            self.explain,
            self.model,
        )


@dataclass(frozen=True)
class FoldTask:
    """Cells that share one fold's data and models."""

    cells: tuple[Cell, ...]

    @property
    def head(self) -> Cell:
        return self.cells[0]


@dataclass(frozen=True)
class GridSpec:
    """A full-factorial grid: datasets × sample sizes × decoy counts × folds × methods (× presets) × scorers, one seed.

    ``n_samples`` is one sample size or several. A method that explains a shared network (the MLP
    of tables, the CNN of images) gets one cell per preset in ``models`` of that network's kind
    (the kind's default preset when ``models`` names none); any other method gets one cell (its
    ``model`` is None). Under a scorer that judges the explained model, a control also gets one
    cell per other model kind the grid's methods explain (:meth:`judged_for`).
    ``decoys`` apply to the datasets that take decoys; the others get one configuration (their
    ``n_decoys`` is None); ``decoys`` may also map each input kind (``"tabular"``, ``"image"``)
    to its own counts (:meth:`decoys_for`). A (dataset, method) pair whose input kind the method
    does not accept is a ``ValueError``, or is left out with ``skip_inapplicable``. ``data_dir``
    is the folder of data sets read from files (it travels with each cell, outside its id).
    """

    datasets: tuple[str, ...]
    methods: tuple[str, ...]
    decoys: tuple[int, ...] | Mapping[str, tuple[int, ...]]
    n_samples: int | tuple[int, ...] = 1000
    n_folds: int = 6
    seed: int = 0
    explain: str = "test"
    dataset_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    suite: tuple[str, str] | None = None
    models: tuple[str, ...] = (DEFAULT_PRESET,)
    scorers: tuple[str, ...] = ("ground_truth",)
    skip_inapplicable: bool = False
    scorer_options: dict[str, Any] = field(default_factory=dict)
    data_dir: str | None = None

    def options_for(self, scorer: str) -> tuple[tuple[str, Any], ...]:
        """The grid's :attr:`scorer_options` that ``scorer`` takes (each option goes to every scorer taking it)."""
        return tuple(sorted((k, v) for k, v in self.scorer_options.items() if k in scorer_options(scorer)))

    @property
    def sizes(self) -> tuple[int, ...]:
        """The sample sizes, as a tuple."""
        return (self.n_samples,) if isinstance(self.n_samples, int) else tuple(self.n_samples)

    def decoys_for(self, dataset: str) -> tuple[int | None, ...]:
        """The decoy counts of ``dataset``: ``(None,)`` when it takes none, else the grid's counts (those of
        its input kind when :attr:`decoys` maps kinds to counts; ValueError when its kind has none)."""
        gen = datasets.spec(dataset)
        if not gen.decoys:
            return (None,)
        if not isinstance(self.decoys, Mapping):
            return tuple(self.decoys)
        if gen.kind not in self.decoys:
            raise ValueError(
                f"no decoy counts for {dataset} ({gen.kind} data): the grid has them for "
                f"{', '.join(self.decoys) or 'no kind'}"
            )
        return tuple(self.decoys[gen.kind])

    def methods_for(self, dataset: str) -> tuple[str, ...]:
        """The grid's methods that accept ``dataset``'s input kind; ValueError naming the others
        unless ``skip_inapplicable``."""
        kind = datasets.spec(dataset).kind
        refused = [m for m in self.methods if kind not in get_method(m).inputs]
        if refused and not self.skip_inapplicable:
            raise ValueError(
                f"{', '.join(refused)} cannot run on {dataset} ({kind} data): "
                f"{'it accepts' if len(refused) == 1 else 'they accept'} "
                f"{' / '.join(sorted({k for m in refused for k in get_method(m).inputs}))} inputs only"
            )
        return tuple(m for m in self.methods if m not in refused)

    def presets_for(self, method: str, kind: str, scorer: str | None = None) -> tuple[str | None, ...]:
        """The presets ``method`` explains on ``kind`` inputs: ``(None,)`` when it needs no preset-configured model.

        A method that explains no model (``random``, ``mrmr``) is judged on the input kind's
        default model by a scorer that measures the explained model (``judges_model``: ROAD, ROAR,
        KAR); for such a ``scorer`` it gets one cell per preset of that model in the grid, so it
        is judged on the same models as the methods beside it.
        """
        spec = get_method(method)
        needed = [k for k in spec.needs_for(kind) if model_kind(k).uses_preset]
        if not needed and scorer is not None and get_scorer(scorer).abilities.judges_model:
            needed = [k for k in (explained_kind(spec, kind),) if model_kind(k).uses_preset]
        if not needed:
            return (None,)
        chosen = tuple(p for p in self.models if get_preset(p).kind in needed)
        return chosen or tuple(DEFAULT_PRESETS[k] for k in needed)

    def judged_for(self, method: str, dataset: str, scorer: str) -> tuple[str, ...]:
        """The model kinds control ``method`` is judged on under ``scorer`` besides the input kind's default.

        Each method's chance must be measured on its own model: under a scorer that judges the
        explained model (``judges_model``), a control (:attr:`MethodSpec.control`) gets one cell per
        model kind that the grid's other methods on ``dataset`` explain and that no preset
        configures (the forest, beside ``rf`` and ``treeshap``), in the order they first appear.
        Preset-configured kinds need none: the control already runs on each preset of its default
        model (:meth:`presets_for`). Empty for any other method or scorer.
        """
        spec, kind = get_method(method), datasets.spec(dataset).kind
        if not spec.control or not get_scorer(scorer).abilities.judges_model:
            return ()
        own = explained_kind(spec, kind)
        explained = (
            explained_kind(get_method(m), kind)
            for m in self.methods_for(dataset)
            if m != method and self._randomisable(m, kind, scorer)
        )
        return tuple(k for k in dict.fromkeys(explained) if k != own and not model_kind(k).uses_preset)

    def _models_for(self, method: str, dataset: str, scorer: str) -> list[tuple[str | None, str | None]]:
        """``(preset, judged)`` of each cell ``method`` gets on ``dataset`` under ``scorer``."""
        presets = self.presets_for(method, datasets.spec(dataset).kind, scorer)
        return [(p, None) for p in presets] + [(None, k) for k in self.judged_for(method, dataset, scorer)]

    def cells(self) -> list[Cell]:
        for name in self.models:
            get_preset(name)  # KeyError listing the valid names
        for name in self.scorers:
            get_scorer(name)  # KeyError listing the valid names
        taken = {k for name in self.scorers for k in scorer_options(name)}
        stray = sorted(set(self.scorer_options) - taken)
        if stray:
            raise ValueError(
                f"no scorer of the grid ({', '.join(self.scorers)}) takes the option(s) {', '.join(stray)}"
            )
        for name in self.scorers:
            scorer = configure_scorer(name, self.options_for(name))  # ValueError when the scorer refuses a value
            for kind in sorted({datasets.spec(d).kind for d in self.datasets}):
                scorer.check_kind(kind)  # ValueError for settings the grid's input kinds cannot take
        self._check_retrainable()
        self._check_randomisable()
        return [
            Cell(
                d,
                n,
                n_decoys,
                self.seed,
                self.n_folds,
                fold,
                m,
                self.explain,
                scorer,
                dataset_params=tuple(sorted(self.dataset_params.get(d, {}).items())),
                suite=self.suite,
                model=preset,
                scorer_options=self.options_for(scorer),
                judged=judged,
                data_dir=self.data_dir,
            )
            for d in self.datasets
            for methods in (self.methods_for(d),)
            for n in self.sizes
            for n_decoys in self.decoys_for(d)
            for fold in range(self.n_folds)
            for m in methods
            for scorer in self.scorers
            if self._randomisable(m, datasets.spec(d).kind, scorer)
            for preset, judged in self._models_for(m, d, scorer)
        ]

    @staticmethod
    def _randomisable(method: str, kind: str, scorer: str) -> bool:
        """False when ``scorer`` randomises layers and ``method`` explains a model kind that declares none."""
        if not get_scorer(scorer).abilities.randomises_layers:
            return True
        return model_kind(explained_kind(get_method(method), kind)).layers is not None

    def _check_randomisable(self) -> None:
        """ValueError when a scorer that randomises layers meets a method whose model has none (left out with
        ``skip_inapplicable``), or is asked for layers a preset's network does not have."""
        for name in self.scorers:
            scorer = configure_scorer(name, self.options_for(name))
            if not scorer.abilities.randomises_layers:
                continue
            for d in self.datasets:
                kind = datasets.spec(d).kind
                for m in self.methods_for(d):
                    if not self._randomisable(m, kind, name) and not self.skip_inapplicable:
                        model = explained_kind(get_method(m), kind)
                        raise ValueError(
                            f"{name} randomises the layers of the model each method explains, and {m} on "
                            f"{d} explains a {model!r} model, which has none; drop {m} from the methods"
                        )
                    if not self._randomisable(m, kind, name):
                        continue
                    for preset in self.presets_for(m, kind, name):
                        n_layers = None if preset is None else getattr(get_preset(preset).config, "n_layers", None)
                        if n_layers is not None:
                            scorer.check_layers(n_layers, f"preset {preset!r}")

    def _check_retrainable(self) -> None:
        """ValueError when a scorer that retrains (ROAR, KAR) meets a method whose model kind cannot be retrained."""
        retraining = [name for name in self.scorers if get_scorer(name).abilities.retrains]
        if not retraining:
            return
        for d in self.datasets:
            kind = datasets.spec(d).kind
            for m in self.methods_for(d):
                model = explained_kind(get_method(m), kind)
                if not model_kind(model).retrainable:
                    raise ValueError(
                        f"{', '.join(retraining)} retrain the model each method explains, and {m} on {d} "
                        f"explains a {model!r} model, which cannot be retrained"
                    )

    @staticmethod
    def tasks(cells: list[Cell], block: int | None = None) -> list[FoldTask]:
        """Group cells by fold and by the models (and device) they need, in blocks of ``block`` settings (None: all
        settings in one block), the blocks in the grid's order: within a block fold 0 of every setting first, then
        fold 1, and so on, otherwise in the grid's order.

        Fold by fold: the first task of a setting trains the shared networks (and computes the parts of the methods
        that train their own) of all its folds as one batch (:func:`~synthbench.runner.cells.run_task`), and the
        next worker starts another setting instead of waiting for it. In blocks: a run stopped between blocks
        leaves no setting part-done whose batches, kept in the model cache only, a run resumed on another machine
        would compute again (:mod:`synthbench.runner.export`); twice the workers keeps every worker busy.

        A control judged on a model kind (:attr:`Cell.judged`) joins the methods that need that kind,
        so it is judged on the very model they explain.
        """
        if block is not None and block < 1:
            raise ValueError(f"block must be at least 1, got {block}")
        groups: dict[tuple, list[Cell]] = {}
        settings: dict[tuple, int] = {}
        for c in cells:
            settings.setdefault(c.setting_key, len(settings))
            groups.setdefault((c.task_key, c.needs, get_method(c.method).accelerated), []).append(c)

        def order(group: list[Cell]) -> tuple[int, int]:
            return (settings[group[0].setting_key] // block if block else 0), group[0].fold

        return [FoldTask(tuple(g)) for g in sorted(groups.values(), key=order)]
