"""K networks of one architecture held as one: a flat parameter buffer and a batched forward pass.

:class:`ParameterLayout` lays the trainable parameters of a network out as one row of ``D`` floats
(in ``named_parameters`` order); ``K`` members are a ``(K, D)`` buffer, and Adam
(:class:`StackedAdam`) updates every member's row in a few tensor operations, each member with its
own step count, learning rate and a mask that leaves a member that takes no step untouched, to the
bit.

:func:`stackable` says whether a network's forward pass can run for all members as one batched
computation (:func:`stacked_forward`): an ``nn.Sequential`` of ``Linear`` (one ``baddbmm`` for all
members; a product and a sum for a layer of one output, where the batched product of one member takes
another kernel), element-wise activations and the seeded random layers
(:class:`~synthbench.models.layers.GaussianNoise`, :class:`~synthbench.models.layers.SeededDropout`), whose
draws the caller supplies per member so each member draws from its own generator exactly what it would
draw alone. On the CPU a member's rows of a ``baddbmm`` are the same bits whatever the other members are
(``tests/test_batched_training.py``). Any other network is trained member by member by the same loop, on
its own module. Convolutions are among them: one grouped convolution of 29 CNNs took 6.6 times as long
as 29 convolutions one after the other on one CPU thread (``benchmarks/bench_batched_retrain.py --model
cnn``; 1.2 to 1.8 times as long in the channels-last layout the CNN trains in), and it rounds differently
from the convolution of one network. A member's parameters keep their memory layout in its row
(:attr:`ParameterLayout.orders`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch
import torch.nn.functional as F
from torch import nn

from synthbench.models.layers import GaussianNoise, SeededDropout

__all__ = [
    "ParameterLayout",
    "StackedAdam",
    "StackedNetwork",
    "StackedBatch",
    "stackable",
    "stacked_forward",
    "member_mean",
    "classification_rows",
    "sub_params",
    "generator_draw",
    "Draw",
    "ELEMENTWISE",
]

#: Floats a member's row of parameters is padded to a multiple of (see :class:`ParameterLayout`).
ALIGN = 64

#: Layers applied element by element: the same module computes every member's values.
ELEMENTWISE = (nn.ReLU, nn.LeakyReLU, nn.Softplus, nn.Sigmoid, nn.Tanh, nn.Identity)


class Draw(Protocol):
    """``draw(kind, shape)``: ``(K, b, *shape)``, each member's draw for the rows of its batch (``"normal"`` or
    ``"uniform"``) from its own generator, rows past a member's batch zero; ``draw(kind, shape, per_row=False)``:
    ``(K, *shape)``, one draw of ``shape`` for each member with rows in the step (zeros for a member without)."""

    def __call__(self, kind: str, shape: tuple[int, ...], *, per_row: bool = True) -> torch.Tensor: ...


def generator_draw(generator: torch.Generator | None, rows: int, device: torch.device) -> Draw:
    """The :data:`Draw` of one member (``K = 1``) with ``rows`` rows, from ``generator``."""

    def draw(kind: str, shape: tuple[int, ...], *, per_row: bool = True) -> torch.Tensor:
        f = torch.randn if kind == "normal" else torch.rand
        return f((rows, *shape) if per_row else shape, generator=generator, device=device)[None]

    return draw


def classification_rows(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Each row's classification loss from the members' logits ``(K, b, n_out)`` and int64 labels ``(K, b)``:
    ``(K, b)``; binary cross-entropy on the one logit where ``n_out`` is 1, cross-entropy over the classes
    otherwise (the loss of :func:`~synthbench.models.loop.classification_loss`, row by row)."""
    k, b = y.shape
    if logits.shape[-1] == 1:
        return F.binary_cross_entropy_with_logits(logits.reshape(k, b), y.to(logits.dtype), reduction="none")
    return F.cross_entropy(logits.flatten(0, 1), y.reshape(-1), reduction="none").reshape(k, b)


def member_mean(per_row: torch.Tensor, counts: torch.Tensor, real: torch.Tensor | None) -> torch.Tensor:
    """Each member's mean of ``per_row`` ``(K, b)`` over its ``counts`` ``(K,)`` real rows: ``(K,)``. ``real``
    ``(K, b)`` marks them where some rows are padding (None: every row is real); a padded row's term becomes an exact
    zero, so a member's value does not depend on whether its batch was padded."""
    if real is not None:
        per_row = torch.where(real, per_row, torch.zeros((), device=per_row.device))
    return per_row.sum(dim=1) / counts.clamp(min=1)


@dataclass(frozen=True)
class StackedBatch:
    """One optimisation step of ``K`` members, as :meth:`StackedNetwork.stacked_objective` reads it.

    Attributes
    ----------
    params, buffers : name -> ``(K, *shape)``, the members' parameters (:meth:`ParameterLayout.views`) and buffers
    x : ``(K, b, *input_shape)``, each member's batch;  y : int64 ``(K, b)``, its labels
    counts : ``(K,)``, each member's real rows;  real : bool ``(K, b)`` marking them, None where every row is real
    steps : each member's 0-based optimisation step;  draw : the members' random draws (:class:`Draw`)
    """

    params: dict[str, torch.Tensor]
    buffers: dict[str, torch.Tensor]
    x: torch.Tensor
    y: torch.Tensor
    counts: torch.Tensor
    real: torch.Tensor | None
    steps: Sequence[int]
    draw: Draw

    def mean(self, per_row: torch.Tensor) -> torch.Tensor:
        """Each member's mean of ``per_row`` ``(K, b)`` over its real rows (:func:`member_mean`): ``(K,)``."""
        return member_mean(per_row, self.counts, self.real)


class StackedNetwork(nn.Module):
    """A network whose ``K`` members the batched loop of :func:`~synthbench.models.loop.fit_networks` computes as one,
    from their stacked parameters (:meth:`ParameterLayout.views`: name -> ``(K, *shape)``) and buffers (name ->
    ``(K, *shape)``, each member's own).

    A subclass defines :meth:`stacked_logits`, and :meth:`stacked_objective` where it trains on another objective
    than the classification loss of its logits. Each member's values must depend on its own slices alone, so that
    a member computes the same alone or in a batch; :meth:`one` runs the stacked computation for this module alone
    (its ``forward``).
    """

    def stacked_objective(self, batch: StackedBatch) -> torch.Tensor:
        """Each member's training objective on its ``batch``: ``(K,)``. By default the mean classification loss of
        its logits in training mode."""
        logits = self.stacked_logits(batch.params, batch.buffers, batch.x, training=True, draw=batch.draw)
        return batch.mean(classification_rows(logits, batch.y))

    def stacked_logits(
        self,
        params: dict[str, torch.Tensor],
        buffers: dict[str, torch.Tensor],
        x: torch.Tensor,
        *,
        training: bool,
        draw: Draw | None,
    ) -> torch.Tensor:
        """Each member's logits on its rows ``x`` ``(K, b, *input_shape)``: ``(K, b, n_out)``."""
        raise NotImplementedError(f"{type(self).__name__} has no logits: it trains on its own objective, unvalidated")

    def one(self, compute: Callable[..., Any], x: torch.Tensor, generator: torch.Generator | None, **kw: Any) -> Any:
        """``compute(params, buffers, x[None], draw=..., **kw)`` for this module alone (``K = 1``), its random draws
        from ``generator``; a tensor result, or each of a tuple's, without its leading member axis."""
        params = {n: p[None] for n, p in self.named_parameters()}
        buffers = {n: b[None] for n, b in self.named_buffers()}
        out = compute(params, buffers, x[None], draw=generator_draw(generator, x.shape[0], x.device), **kw)
        return tuple(o[0] for o in out) if isinstance(out, tuple) else out[0]


@dataclass(frozen=True)
class ParameterLayout:
    """Where each trainable parameter of a network lies in its row of ``D`` floats.

    Attributes
    ----------
    names : parameter names, in ``named_parameters`` order (those that require grad)
    shapes : their shapes
    offsets : start of each in the row
    orders : for each, the order of its dimensions in memory (outermost first): a parameter's segment of the row
        holds its values in that order, so a module bound to its row (:meth:`bind`) keeps its parameters' memory
        layout; the identity but for a channels-last convolution weight, ``(0, 2, 3, 1)``
    size : ``D``, the row's length: a multiple of :data:`ALIGN`, so that element ``j`` of every member's row
        sits at the same place in a vector register whatever the number of members (vectorised element-wise
        kernels round their tail elements differently)
    """

    names: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    offsets: tuple[int, ...]
    orders: tuple[tuple[int, ...], ...]
    size: int

    @classmethod
    def of(cls, module: nn.Module) -> ParameterLayout:
        """The layout of ``module``'s parameters that require grad, the row padded to a multiple of :data:`ALIGN`."""
        names, shapes, offsets, orders, size = [], [], [], [], 0
        for name, param in module.named_parameters():
            if param.requires_grad:
                names.append(name)
                shapes.append(tuple(param.shape))
                offsets.append(size)
                orders.append(_memory_order(param))
                size += param.numel()
        return cls(tuple(names), tuple(shapes), tuple(offsets), tuple(orders), -(-size // ALIGN) * ALIGN)

    @property
    def used(self) -> int:
        """Floats of the row that hold parameters (the rest is padding, always zero)."""
        return self.offsets[-1] + math.prod(self.shapes[-1]) if self.names else 0

    def parameters(self, module: nn.Module) -> list[nn.Parameter]:
        """``module``'s parameters of this layout, in its order."""
        own = dict(module.named_parameters())
        return [own[n] for n in self.names]

    def row(self, module: nn.Module) -> torch.Tensor:
        """``module``'s parameters as one detached row ``(D,)`` (zeros past them)."""
        params = [p.detach().permute(o).reshape(-1) for p, o in zip(self.parameters(module), self.orders, strict=True)]
        device = params[0].device if params else None
        return torch.cat([*params, torch.zeros(self.size - self.used, device=device)])

    def _shaped(self, i: int, segment: torch.Tensor) -> torch.Tensor:
        """Parameter ``i`` as a view of its ``segment`` of a row (its shape, its memory order)."""
        order = self.orders[i]
        stored = segment.view([self.shapes[i][d] for d in order])
        return stored.permute(sorted(range(len(order)), key=order.__getitem__))

    def load(self, module: nn.Module, row: torch.Tensor) -> None:
        """Copy the row ``(D,)`` into ``module``'s parameters."""
        with torch.no_grad():
            for i, (p, off) in enumerate(zip(self.parameters(module), self.offsets, strict=True)):
                p.copy_(self._shaped(i, row[off : off + p.numel()]))

    def bind(self, module: nn.Module, row: torch.Tensor) -> None:
        """Make ``module``'s parameters views of the row ``(D,)`` (its storage), so updates of the row are theirs."""
        for i, (p, off) in enumerate(zip(self.parameters(module), self.offsets, strict=True)):
            p.data = self._shaped(i, row[off : off + p.numel()])

    def gradient(self, module: nn.Module) -> torch.Tensor:
        """``module``'s parameter gradients as one row ``(D,)`` (zeros where a parameter has none, and past them)."""
        params = self.parameters(module)
        grads = [
            torch.zeros(p.numel(), device=p.device) if p.grad is None else p.grad.permute(o).reshape(-1)
            for p, o in zip(params, self.orders, strict=True)
        ]
        return torch.cat([*grads, torch.zeros(self.size - self.used, device=params[0].device)])

    def views(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        """Every parameter of the ``K`` members of ``flat`` ``(K, D)``: name -> view ``(K, *shape)`` (the stacked
        pass: parameters in their own order, :func:`stackable`)."""
        if any(o != tuple(range(len(o))) for o in self.orders):
            raise ValueError("the stacked pass takes parameters stored in their own order only")
        sizes = [math.prod(shape) for shape in self.shapes]
        pieces = flat.split([*sizes, self.size - self.used], dim=1)  # one op: its backward is one cat
        return {
            n: piece.unflatten(1, shape) if shape else piece[:, 0]
            for n, shape, piece in zip(self.names, self.shapes, pieces[: len(sizes)], strict=True)
        }


def _memory_order(param: torch.Tensor) -> tuple[int, ...]:
    """The order of ``param``'s dimensions in memory, outermost first: ``(0, 2, 3, 1)`` for a 4-D tensor laid out
    channels-last (``torch.channels_last``), the identity for any other."""
    if param.dim() == 4 and param.stride() == param.contiguous(memory_format=torch.channels_last).stride():
        return (0, 2, 3, 1)  # also where both layouts agree (one channel): a bound view keeps these strides
    return tuple(range(param.dim()))


class StackedAdam:
    """Adam over the rows of a ``(K, D)`` buffer, each row a member with its own state: torch's fused kernel.

    Every parameter of every member is its own tensor (a segment of its row) in one call to torch's
    functional Adam (``torch.optim.adam.adam`` with ``fused=True``, as ``torch.optim.Adam(fused=True)``:
    L2 weight decay added to the gradient, bias corrections from the tensor's own step count). A member
    that takes no step (``active`` False) is left out of the call, so its parameters, moments and step
    count stay as they are, to the bit; members whose learning rates differ (their schedules) go in
    separate calls. Each tensor's update depends on that tensor alone, so a member's values do not depend
    on the other members.

    Parameters
    ----------
    flat : ``(K, D)``, updated in place; :attr:`grad`, of its shape, holds the gradient of the next :meth:`step`
    segments : ``(start, stop, group)`` of each parameter in a row; ``group`` indexes ``weight_decay``
    weight_decay : L2 weight decay of each parameter group
    eps, betas : Adam's
    """

    def __init__(
        self,
        flat: torch.Tensor,
        *,
        segments: Sequence[tuple[int, int, int]],
        weight_decay: Sequence[float],
        eps: float,
        betas: tuple[float, float] = (0.9, 0.999),
    ) -> None:
        self.segments = list(segments)
        self.weight_decay = list(weight_decay)
        self.eps = float(eps)
        self.betas = betas
        self.grad = torch.zeros_like(flat, requires_grad=False)
        self.m = torch.zeros_like(self.grad)
        self.v = torch.zeros_like(self.grad)
        self.counts = [
            [torch.zeros((), dtype=torch.float32, device=flat.device) for _ in self.segments]
            for _ in range(flat.shape[0])
        ]
        self._bind(flat)

    def _bind(self, flat: torch.Tensor) -> None:
        self.flat = flat
        buffers = (flat.detach(), self.grad, self.m, self.v)
        self.views = [[tuple(t[k, a:b] for t in buffers) for a, b, _ in self.segments] for k in range(flat.shape[0])]
        self._calls: tuple[tuple, dict[tuple[int, float], tuple[list[torch.Tensor], ...]]] | None = None

    @property
    def steps(self) -> list[int]:
        """Each member's step count."""
        return [int(c[0]) if c else 0 for c in self.counts]

    def step(self, lrs: Sequence[Sequence[float]], active: Sequence[bool]) -> None:
        """One update of the ``active`` rows by the gradient the caller wrote into :attr:`grad` ``(K, D)``;
        ``lrs[k][group]`` is member ``k``'s rate."""
        from torch.optim.adam import adam

        beta1, beta2 = self.betas
        with torch.no_grad():
            for (group, lr), (params, grads, ms, vs, counts) in self._grouped(lrs, active).items():
                adam(
                    params,
                    grads,
                    ms,
                    vs,
                    [],
                    counts,
                    fused=True,
                    amsgrad=False,
                    beta1=beta1,
                    beta2=beta2,
                    lr=lr,
                    weight_decay=self.weight_decay[group],
                    eps=self.eps,
                    maximize=False,
                )

    def _grouped(
        self, lrs: Sequence[Sequence[float]], active: Sequence[bool]
    ) -> dict[tuple[int, float], tuple[list[torch.Tensor], ...]]:
        """The active members' views grouped by (group, rate), one fused call each; built again only when the rates,
        the active members or the buffers (:meth:`_bind`) change, which is at an epoch's end, not every step."""
        key = (tuple(active), tuple(tuple(float(r) for r in rates) for rates in lrs))
        if self._calls is not None and self._calls[0] == key:
            return self._calls[1]
        calls: dict[tuple[int, float], tuple[list[torch.Tensor], ...]] = {}
        for k, on in enumerate(active):
            if not on:
                continue
            for (_, _, group), views, count in zip(self.segments, self.views[k], self.counts[k], strict=True):
                lists = calls.setdefault((group, float(lrs[k][group])), ([], [], [], [], []))
                for bucket, item in zip(lists, (*views, count), strict=True):
                    bucket.append(item)
        self._calls = (key, calls)
        return calls

    def keep(self, rows: torch.Tensor, flat: torch.Tensor) -> None:
        """Keep only the members ``rows`` (int64 indices), in that order (the others stopped); ``flat`` is the
        buffer of their rows the loop goes on with."""
        self.grad, self.m, self.v = self.grad[rows], self.m[rows], self.v[rows]
        self.counts = [self.counts[int(i)] for i in rows]
        self._bind(flat)


def stackable(module: nn.Module) -> bool:
    """Whether the batched loop computes ``module``'s members as one: a :class:`StackedNetwork` whose parameters all
    train, or a network :func:`stacked_forward` computes (an ``nn.Sequential`` of ``nn.Linear`` layers whose
    parameters all train, element-wise activations and seeded random layers, and no other parameter or buffer)."""
    if isinstance(module, StackedNetwork):
        return all(p.requires_grad for p in module.parameters())
    if type(module) is not nn.Sequential:
        return False
    for layer in module:
        if type(layer) is nn.Linear:
            if not all(p.requires_grad for p in layer.parameters()):
                return False
        elif isinstance(layer, (GaussianNoise, SeededDropout, *ELEMENTWISE)):
            if any(True for _ in layer.parameters()) or any(True for _ in layer.buffers()):
                return False
        else:
            return False
    return True


def stacked_forward(
    module: nn.Sequential,
    params: dict[str, torch.Tensor],
    x: torch.Tensor,
    *,
    training: bool,
    draw: Draw | None = None,
) -> torch.Tensor:
    """The outputs of ``K`` members of ``module``'s architecture on their own rows, as one computation.

    Parameters
    ----------
    module : a :func:`stackable` network (its own parameters are not read)
    params : name -> ``(K, *shape)``, the members' parameters (:meth:`ParameterLayout.views`)
    x : ``(K, b, *input_shape)``, each member's batch
    training : random layers draw (through ``draw``) in training mode, are the identity otherwise
    draw : the members' random draws (:data:`Draw`); needed when ``training`` and the network has a random layer

    Returns
    -------
    ``(K, b, *output_shape)``
    """
    for i, layer in enumerate(module):
        if isinstance(layer, nn.Linear):
            w, bias = params[f"{i}.weight"], params.get(f"{i}.bias")
            if w.shape[1] == 1:  # one output: the batched product of one member takes another kernel (other bits)
                x = (x * w).sum(dim=-1, keepdim=True)
                x = x if bias is None else x + bias[:, None]
            elif w.shape[2] > w.shape[1]:  # wide: as W x^T, so that W's gradient comes out in W's own layout
                xt = x.transpose(1, 2)
                x = (torch.bmm(w, xt) if bias is None else torch.baddbmm(bias[:, :, None], w, xt)).transpose(1, 2)
            else:
                x = (
                    torch.bmm(x, w.transpose(1, 2))
                    if bias is None
                    else torch.baddbmm(bias[:, None], x, w.transpose(1, 2))
                )
        elif isinstance(layer, GaussianNoise):
            if training and layer.sigma != 0.0:
                x = x + layer.sigma * _drawn(draw, "normal", x)
        elif isinstance(layer, SeededDropout):
            if training and layer.rate != 0.0:
                x = x * (_drawn(draw, "uniform", x) >= layer.rate) / (1.0 - layer.rate)
        else:
            x = layer(x)
    return x


def sub_params(params: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    """The parameters of the submodule named ``prefix`` (its names without ``prefix.``), for :func:`stacked_forward`."""
    start = f"{prefix}."
    return {n[len(start) :]: v for n, v in params.items() if n.startswith(start)}


def _drawn(draw: Draw | None, kind: str, x: torch.Tensor) -> torch.Tensor:
    if draw is None:
        raise ValueError("a random layer in training mode needs the members' draws")
    return draw(kind, tuple(x.shape[2:]))
