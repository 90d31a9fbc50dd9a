"""Layer randomisation of trained networks: the model-parameter sanity check's model states.

A model kind that can be randomised declares its parametrised layers (:attr:`ModelKind.layers
<synthbench.models.shared.ModelKind>`): a function of a trained model returning its
:class:`Layer` objects **in forward order** (the order the input passes through them; a
module's registration order is not that order in general) and, for each, the initialiser the
kind's trainer draws that layer's weights and biases from. :func:`randomised` returns a copy of a
trained model with some layers re-drawn from their own initialisers, each from a generator
seeded for that layer alone, so a layer gets the same weights whichever other layers are
randomised with it (cascading and independent randomisation then share their states).

Normalisation layers (batch, layer, group or instance norms) are never declared: their
initialiser is a constant (scale 1, shift 0), so re-drawing them is not a randomisation; they
keep their trained parameters and running statistics, and only the layers around them are
randomised. :func:`sequential_layers` applies this rule to a flat ``nn.Sequential``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

__all__ = ["Layer", "Initialiser", "sequential_layers", "randomised", "NORMALISATION_LAYERS"]

#: ``initialise(layer, generator)``: re-draw the layer's parameters in place from ``generator``.
Initialiser = Callable[[Any, torch.Generator], None]  # a layer of the kind it initialises

#: Module types never declared as randomisable layers (see the module docstring).
NORMALISATION_LAYERS = (nn.modules.batchnorm._NormBase, nn.LayerNorm, nn.GroupNorm)


@dataclass(frozen=True)
class Layer:
    """One parametrised layer of a network.

    Attributes
    ----------
    name : the layer's path in the network (``module.get_submodule(name)``), e.g. ``"1"``
    initialise : how the kind's trainer initialises it (called under ``torch.no_grad``)
    """

    name: str
    initialise: Initialiser


def sequential_layers(module: nn.Sequential, initialise: Initialiser) -> tuple[Layer, ...]:
    """The children of a flat ``nn.Sequential`` that hold parameters, in its (forward) order.

    Every such child is initialised by ``initialise``; normalisation layers
    (:data:`NORMALISATION_LAYERS`) are left out (see the module docstring).
    """
    return tuple(
        Layer(name, initialise)
        for name, child in module.named_children()
        if any(q.requires_grad for q in child.parameters(recurse=False)) and not isinstance(child, NORMALISATION_LAYERS)
    )


def randomised(model: Any, layers: Sequence[Layer], names: Iterable[str], seeds: Mapping[str, int]) -> Any:
    """A copy of the trained network ``model`` whose layers ``names`` are re-drawn from their initialisers.

    Parameters
    ----------
    model : a trained network (``module`` in eval mode on its device); not changed
    layers : the model's declared layers (its kind's ``layers(model)``)
    names : the layers to randomise (any subset of ``layers``' names, any order)
    seeds : layer name -> seed of the ``torch.Generator`` (CPU) its parameters are drawn from;
        the draw is made on the CPU and copied to the model's device, so a seed gives the same
        weights on every device

    Raises
    ------
    ValueError
        For a name that is not one of ``layers``.
    """
    by_name = {layer.name: layer for layer in layers}
    names = list(names)
    missing = [n for n in names if n not in by_name]
    if missing:
        raise ValueError(f"no layer {', '.join(map(repr, missing))}; the model's layers: {', '.join(by_name)}")
    out = copy.deepcopy(model)
    with torch.no_grad():
        for name in names:
            live = out.module.get_submodule(name)
            fresh = copy.deepcopy(live).cpu()
            by_name[name].initialise(fresh, torch.Generator().manual_seed(int(seeds[name])))
            live.load_state_dict(fresh.state_dict())
    out.module.eval()
    return out
