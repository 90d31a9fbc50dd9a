"""The method registry: what each method needs and how it turns a fold into feature scores.

A method is a function ``fn(data, models, rng, **params) -> MethodOutput | ndarray`` where
``data`` is the fold's :class:`~synthbench.evaluation.FoldData` (columns permuted), ``models``
its :class:`~synthbench.models.SharedModels` (ask ``models.get(kind)`` for a model named in
``needs``; it is trained once per fold and shared by every method), and ``rng`` a generator
seeded from the cell. Returning a bare array means global scores of shape ``(p,)``.

Adding a method::

    from synthbench.methods import register_method

    @register_method("my_method", description="what it does")
    def my_method(data, models, rng):
        return my_scores(data.X_train, data.y_train)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from synthbench.evaluation.protocol import FoldData
from synthbench.evaluation.scorers import MethodOutput
from synthbench.models import SharedModels, kinds, model_kind

__all__ = ["MethodSpec", "register_method", "get_method", "method_names", "default_methods", "run_method"]

MethodFn = Callable[..., "MethodOutput | np.ndarray"]


@dataclass(frozen=True)
class MethodSpec:
    """A registered method.

    Attributes
    ----------
    name, description : str
    fn : the method function
    needs : model kinds it asks for (empty: raw data only)
    default : whether ``python -m synthbench.run`` runs it without ``--methods``
    params : default keyword parameters, recorded with each result
    accelerated : it runs torch code on the configured device (itself or through a model it
        needs), so executors may give its cells a share of a GPU
    max_features : the most features it handles within the benchmark's budget (24 GB, hours
        not days at n = 1000), or None; cells above it are recorded as skipped with the reason
    """

    name: str
    fn: MethodFn
    description: str
    needs: tuple[str, ...] = ()
    default: bool = True
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    accelerated: bool = False
    max_features: int | None = None

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
        return any(model_kind(k).uses_preset for k in self.needs)


_METHODS: dict[str, MethodSpec] = {}


def register_method(
    name: str,
    *,
    description: str,
    needs: tuple[str, ...] = (),
    default: bool = True,
    params: Mapping[str, Any] | None = None,
    accelerated: bool = False,
    max_features: int | None = None,
) -> Callable[[MethodFn], MethodFn]:
    """Decorator registering ``fn`` as method ``name`` (see the module docstring).

    ``accelerated``: the method itself trains or runs torch models on ``models.settings.device``;
    methods that need an accelerated model kind are accelerated without saying so.
    ``max_features``: the declared limit (see :class:`MethodSpec`).
    """

    def deco(fn: MethodFn) -> MethodFn:
        if name in _METHODS:
            raise ValueError(f"method {name!r} is already registered")
        unknown = set(needs) - set(kinds())
        if unknown:
            raise ValueError(f"method {name!r} needs unknown model kinds {sorted(unknown)}")
        on_device = accelerated or any(model_kind(k).accelerated for k in needs)
        _METHODS[name] = MethodSpec(name, fn, description, tuple(needs), default, MappingProxyType(dict(params or {})),
                                    on_device, max_features)
        return fn

    return deco


def method_names() -> list[str]:
    """Every registered method name, in registration order."""
    return list(_METHODS)


def default_methods() -> list[str]:
    """The methods run when none are named."""
    return [n for n, s in _METHODS.items() if s.default]


def get_method(name: str) -> MethodSpec:
    """The spec of method ``name``; the error lists the valid names."""
    try:
        return _METHODS[name]
    except KeyError:
        raise KeyError(f"unknown method {name!r}; valid names: {', '.join(_METHODS)}") from None


def run_method(spec: MethodSpec, data: FoldData, models: SharedModels) -> MethodOutput:
    """Run ``spec`` on one fold and return its validated output (ValueError when malformed)."""
    rng = data.rng("method", spec.name)
    out = spec.fn(data, models, rng, **spec.params)
    if not isinstance(out, MethodOutput):
        out = MethodOutput(np.asarray(out))
    return out.validate(data.n_features, data.X_explain.shape[0])
