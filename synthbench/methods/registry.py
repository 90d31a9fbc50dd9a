"""The method registry: what each method needs and how it turns a fold into feature scores.

A method is a function ``fn(data, models, rng, **params) -> MethodOutput | ndarray`` where
``data`` is the fold's :class:`~synthbench.protocol.FoldData` (tables: columns permuted),
``models`` its :class:`~synthbench.models.SharedModels` (ask ``models.get(kind)`` for a model
named in ``needs``; it is trained once per fold and shared by every method), and ``rng`` a
generator seeded from the cell. Returning a bare array means global scores of the input shape
(``(p,)`` for tables). A method declares the input kinds it accepts (``inputs``, default tables
only); a grid that pairs it with data of another kind is refused before anything runs.

Adding a method::

    from synthbench.methods import register_method

    @register_method("my_method", description="what it does", reference="Author & Author 2024 (Venue)")
    def my_method(data, models, rng):
        return my_scores(data.X_train, data.y_train)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from synthbench.datasets import KINDS
from synthbench.methods.recipe import AttributionRecipe
from synthbench.models import SharedModels, kinds, model_kind
from synthbench.protocol import FoldData, MethodOutput
from synthbench.registry import Registry

__all__ = [
    "MethodSpec",
    "METHODS",
    "register_method",
    "get_method",
    "method_names",
    "default_methods",
    "run_method",
    "method_rng",
    "bind_kind",
]

MethodFn = Callable[..., "MethodOutput | np.ndarray"]

#: How the :attr:`MethodSpec.reference` of a method that replays the 2023 benchmark's code ends
#: (``"<the method's own reference>; " + AS_RUN_2023``).
AS_RUN_2023 = (
    "as run by Passemiers et al. 2023 (arXiv:2304.02383; the 2023 benchmark, "
    "github.com/AntoinePassemiers/Feature-Selection-Benchmark)"
)


@dataclass(frozen=True)
class MethodSpec:
    """A registered method.

    Attributes
    ----------
    name, description : str
    fn : the method function
    reference : the publication or software the method follows, as a short plain-text citation
        (``"Authors Year (Venue)"``, ``"Authors Year (arXiv:id)"``) or a library's name, no links; a
        method that replays another benchmark's code says so (``"...; " +`` :data:`AS_RUN_2023`), a
        control says ``"control ..."``. Shown beside the description in reports; empty for a plugin
        that gives none. Not a parameter: it never enters a cell id.
    needs : input kind -> the model kinds it asks for on that kind (empty: raw data only); its
        keys are the input kinds the method accepts (:attr:`inputs`)
    default : whether ``python -m synthbench.run`` runs it without ``--methods``
    params : default keyword parameters, recorded with each result
    kind_params : input kind -> parameters that replace ``params`` on that kind (images often need
        other defaults than tables); see :meth:`params_for`
    accelerated : it runs torch code on the configured device (itself or through a model it
        needs), so executors may give its cells a share of a GPU
    max_features : the most features it handles within the benchmark's budget (24 GB, hours
        not days at n = 1000), or None; cells above it are recorded as skipped with the reason
    recipe : for a method that explains its model with one attribution function, which function
        and which target rule (:class:`~synthbench.methods.recipe.AttributionRecipe`); its
        parameters on a kind are :meth:`params_for`. None for every other method.
    control : a control (``random``, ``input``, ``sobel``): a floor real methods must beat, not a
        method. Under a scorer that judges the explained model it is judged on every model the
        grid's methods explain (:meth:`~synthbench.runner.grid.GridSpec.judged_for`).
    maps : it returns a map per explained example (``MethodOutput.local``), not only scores fitted on
        the training rows, so a perturbation of the explained inputs can move it (fragility); the
        check battery verifies the declaration
    judged : input kind -> the model kind a method that explains none is judged on there, in place
        of the input kind's default model (:func:`~synthbench.scoring.base.explained_kind`); set
        by :meth:`judged_on` for one cell, empty as registered
    """

    name: str
    fn: MethodFn
    description: str
    reference: str = field(default="", kw_only=True)
    needs: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({"tabular": ()}))
    default: bool = True
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    accelerated: bool = False
    max_features: int | None = None
    kind_params: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: MappingProxyType({}))
    recipe: AttributionRecipe | None = None
    control: bool = False
    maps: bool = False
    judged: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def judged_on(self, kind: str, model: str) -> MethodSpec:
        """This spec, judged on model kind ``model`` on ``kind`` inputs by scorers that judge the explained model.

        Raises
        ------
        ValueError
            When the method explains a model of its own on ``kind`` inputs (it is judged on that
            one), or ``model`` does not train on ``kind`` inputs.
        """
        if self.explains(kind) is not None:
            raise ValueError(
                f"method {self.name!r} explains the {self.explains(kind)!r} model on {kind} inputs; "
                "it is judged on that model only"
            )
        if kind not in model_kind(model).inputs:
            raise ValueError(f"model kind {model!r} does not train on {kind} inputs")
        return dataclasses.replace(self, judged=MappingProxyType({**self.judged, kind: model}))

    def params_for(self, kind: str) -> dict[str, Any]:
        """The parameters the method runs with on ``kind`` inputs (``params`` unless ``kind_params`` says otherwise)."""
        return dict(self.kind_params.get(kind, self.params))

    @property
    def inputs(self) -> tuple[str, ...]:
        """The input kinds the method accepts (``"tabular"``, ``"image"``)."""
        return tuple(self.needs)

    def needs_for(self, kind: str) -> tuple[str, ...]:
        """The model kinds the method asks for on inputs of ``kind``; ValueError when it does not accept them."""
        if kind not in self.needs:
            raise ValueError(f"method {self.name!r} does not accept {kind} inputs (it takes {', '.join(self.inputs)})")
        return self.needs[kind]

    def explains(self, kind: str) -> str | None:
        """The one model kind the method explains on ``kind`` inputs, or None when it needs none or several."""
        needs = self.needs_for(kind)
        return needs[0] if len(needs) == 1 else None

    @property
    def family(self) -> str:
        """``"attribution"`` (explains the shared MLP), ``"neural selector"`` (trains networks of its own) or
        ``"classical"`` (filters, trees, controls): what report figures group by."""
        if self.uses_preset:
            return "attribution"
        return "neural selector" if self.accelerated else "classical"

    @property
    def uses_preset(self) -> bool:
        """It explains a model kind configured by a preset (the shared MLP): one cell per preset of a grid."""
        return any(model_kind(k).uses_preset for ks in self.needs.values() for k in ks)


def bind_kind(fn: Callable[..., Any], name: str, kind: str) -> MethodFn:
    """``fn(data, models, rng, kind=kind, **params)`` as a method named ``name``: one function registered for
    several model kinds (the two boosters, the network), the kind fixed by the registration, not a parameter (it
    enters no cell id)."""

    def method(data: FoldData, models: SharedModels, rng: np.random.Generator, **params: Any) -> Any:
        return fn(data, models, rng, kind=kind, **params)

    method.__name__ = name
    method.__doc__ = fn.__doc__
    return method


#: Every registered method, by name, in registration order.
METHODS: Registry[MethodSpec] = Registry("method")


def register_method(
    name: str,
    *,
    description: str,
    reference: str = "",
    needs: tuple[str, ...] | Mapping[str, tuple[str, ...]] = (),
    inputs: tuple[str, ...] = ("tabular",),
    default: bool = True,
    params: Mapping[str, Any] | None = None,
    accelerated: bool = False,
    max_features: int | None = None,
    kind_params: Mapping[str, Mapping[str, Any]] | None = None,
    recipe: AttributionRecipe | None = None,
    control: bool = False,
    maps: bool | None = None,
) -> Callable[[MethodFn], MethodFn]:
    """Decorator registering ``fn`` as method ``name`` (see the module docstring).

    ``reference``: the publication or software the method follows, a short citation such as
    ``"Sundararajan, Taly & Yan 2017 (ICML)"`` or a library's name (see :class:`MethodSpec`); the
    store records it and reports show it beside the description. Optional for plugins.
    ``needs``: the model kinds it asks for, the same on every kind in ``inputs``, or a mapping
    input kind -> model kinds (its keys then say which inputs it accepts).
    ``accelerated``: the method itself trains or runs torch models on ``models.settings.device``;
    methods that need an accelerated model kind are accelerated without saying so.
    ``max_features``: the declared limit (see :class:`MethodSpec`). ``kind_params``: per input
    kind, the parameters used there instead of ``params``. ``control``: a control, not a method;
    ``maps``: it returns a map per explained example (see :class:`MethodSpec`); None: True for a method
    that accepts images (every image method does) or explains with a ``recipe`` (an attribution map
    per example), False otherwise.
    """
    by_kind = dict(needs) if isinstance(needs, Mapping) else {kind: tuple(needs) for kind in inputs}
    by_kind = {kind: tuple(ks) for kind, ks in by_kind.items()}

    def deco(fn: MethodFn) -> MethodFn:
        if not by_kind or set(by_kind) - set(KINDS):
            raise ValueError(f"method {name!r}: input kinds must be some of {KINDS}, got {sorted(by_kind)}")
        unknown = {k for ks in by_kind.values() for k in ks} - set(kinds())
        if unknown:
            raise ValueError(f"method {name!r} needs unknown model kinds {sorted(unknown)}")
        for kind, ks in by_kind.items():
            wrong = [k for k in ks if kind not in model_kind(k).inputs]
            if wrong:
                raise ValueError(f"method {name!r}: model kinds {wrong} do not train on {kind} inputs")
        if not isinstance(reference, str):
            raise TypeError(
                f"method {name!r}: reference must be a string (a short citation), got {type(reference).__name__}"
            )
        on_device = accelerated or any(model_kind(k).accelerated for ks in by_kind.values() for k in ks)
        if set(kind_params or {}) - set(by_kind):
            raise ValueError(f"method {name!r}: kind_params for kinds it does not accept")
        frozen = MappingProxyType({k: MappingProxyType(dict(v)) for k, v in (kind_params or {}).items()})
        METHODS.add(
            name,
            MethodSpec(
                name,
                fn,
                description,
                MappingProxyType(by_kind),
                default,
                MappingProxyType(dict(params or {})),
                on_device,
                max_features,
                frozen,
                recipe,
                reference=reference,
                control=control,
                maps=("image" in by_kind or recipe is not None) if maps is None else bool(maps),
            ),
        )
        return fn

    return deco


def method_names() -> list[str]:
    """Every registered method name, in registration order."""
    return METHODS.names()


def default_methods() -> list[str]:
    """The methods run when none are named."""
    return [n for n, s in METHODS.items() if s.default]


def get_method(name: str) -> MethodSpec:
    """The spec of method ``name``; the error lists the valid names."""
    return METHODS[name]


def method_rng(spec: MethodSpec, data: FoldData, stream: tuple[int | str, ...] = ()) -> np.random.Generator:
    """The random stream of ``spec`` on the fold: ``data.rng("method", name, *stream)``, ``()`` the cell's own.

    The one rule every run of a method draws from, the cell's (:func:`run_method`) and a scorer's
    (:func:`~synthbench.scoring.reexplain.explain_again`), so the fold's own model and rows give the
    cell's output whichever runs it.
    """
    return data.rng("method", spec.name, *stream)


def run_method(
    spec: MethodSpec, data: FoldData, models: SharedModels, *, model: Any = None, stream: tuple[int | str, ...] = ()
) -> MethodOutput:
    """Run ``spec`` on one fold and return its validated output (ValueError when malformed).

    This is the seam a scorer uses to explain another model the same way: ``model`` replaces the
    fold's model of the kind the method explains (:meth:`MethodSpec.explains`) for this run only,
    so a randomised or retrained copy is explained with the method's own parameters, target
    rule and random stream (the same seed as the cell: on the fold's own model the output is
    identical). For a method that needs several models, substitute through
    ``models.with_model(kind, model)`` instead. ``stream`` names another random stream of the
    method's cell (``data.rng("method", name, *stream)``): a scorer that needs fresh draws for
    each model state (the ``random`` control redrawn per randomised model) passes one per state;
    ``()`` is the cell's own.

    Raises
    ------
    ValueError
        For inputs the method does not accept, a ``model`` for a method that explains no single
        model, or a malformed output.
    """
    rng = method_rng(spec, data, stream)
    spec.needs_for(data.kind)  # ValueError for inputs it does not accept
    if model is not None:
        kind = spec.explains(data.kind)
        if kind is None:
            raise ValueError(
                f"method {spec.name!r} explains no single model on {data.kind} inputs "
                f"(it needs {list(spec.needs_for(data.kind)) or 'none'}); use models.with_model(kind, model)"
            )
        models = models.with_model(kind, model)
    out = spec.fn(data, models, rng, **spec.params_for(data.kind))
    if not isinstance(out, MethodOutput):
        out = MethodOutput(np.asarray(out))
    return out.validate(data.input_shape, data.X_explain.shape[0])
