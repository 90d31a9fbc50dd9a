"""Perturbation attributions: feature ablation, feature permutation, Shapley value sampling.

Inputs ``(n, *input_shape)`` are handled as ``(n, p)`` with ``p`` the number of input elements
per example (the model sees them reshaped back). A *feature* is one input element, or, with
``feature_mask``, a group of elements that is perturbed together (pixels of a patch, the channels
of a pixel): ``feature_mask`` is an integer tensor of ``input_shape`` (one grouping for every
example), ``(1, *input_shape)`` or ``(n, *input_shape)`` (one grouping per example), whose equal
values form a group, as captum's ``feature_mask``. Every element of a group receives the group's
attribution.

Every perturbed copy of the inputs is stacked into large batches (chunks of at most
``max_batch_elements`` elements per forward call); there is no Python loop over features,
samples or permutations, only over chunks.

Fast path (``fast=True``, default): for 2-D inputs without ``feature_mask`` and a model that is a
Sequential whose first non-identity layer is ``nn.Linear`` (the benchmark MLP), a perturbation
that changes feature ``j`` of row ``i`` by ``d`` changes that layer's pre-activation by
``d * W[:, j]``. The perturbed pre-activations are built directly (``O(width)`` per perturbation
instead of ``O(p * width)``) and only the rest of the network is run. The result equals the
generic path up to floating-point rounding; any other case uses the generic path, which perturbs
the inputs themselves.

Random draws (permutations) come from an explicit ``torch.Generator`` (``generator=``, or one
seeded from ``seed``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from synthbench.attribution.core import (
    DEFAULT_MAX_BATCH_ELEMENTS,
    AdditiveHead,
    Target,
    _from_first_linear,
    as_baseline,
    fast_layout,
    forward_target,
    make_generator,
    repeat_target,
    rows_per_chunk,
    select_target,
    slice_target,
    split_additive_head,
)
from synthbench.models.basis import BasisLinear

__all__ = [
    "columns_read",
    "feature_ablation",
    "feature_permutation",
    "shapley_sampling",
    "substitution_outputs",
    "Groups",
]


def _chunks(total: int, size: int) -> list[tuple[int, int]]:
    return [(i, min(total, i + size)) for i in range(0, total, size)]


@dataclass(frozen=True)
class Groups:
    """The features of flattened inputs ``(n, p)``: which group each element belongs to.

    Attributes
    ----------
    index : long tensor ``(p,)`` (one grouping for all examples) or ``(n, p)``: the group index
        in ``0..count-1`` of each element.
    count : number of groups ``G``.
    """

    index: torch.Tensor
    count: int

    @classmethod
    def of(cls, feature_mask: torch.Tensor | None, inputs: torch.Tensor) -> Groups:
        """Groups from a ``feature_mask`` (see the module docstring); None: every element alone."""
        n, shape = inputs.shape[0], tuple(inputs.shape[1:])
        p = inputs[0].numel() if n else int(torch.tensor(shape).prod())
        if feature_mask is None:
            return cls(torch.arange(p, device=inputs.device), p)
        mask = torch.as_tensor(feature_mask, device=inputs.device)
        if mask.dtype.is_floating_point or mask.dtype == torch.bool:
            raise ValueError(f"feature_mask must hold integer group ids, got dtype {mask.dtype}")
        if tuple(mask.shape) == shape:
            ids = mask.reshape(p)
        elif mask.dim() == len(shape) + 1 and tuple(mask.shape[1:]) == shape and mask.shape[0] in (1, n):
            ids = mask.reshape(mask.shape[0], p)
            ids = ids[0] if ids.shape[0] == 1 else ids
        else:
            raise ValueError(
                f"feature_mask of shape {tuple(mask.shape)} does not match inputs {tuple(inputs.shape)}: "
                f"expected {shape}, (1, *{shape}) or ({n}, *{shape})"
            )
        values, index = torch.unique(ids.long(), return_inverse=True)
        return cls(index.reshape(ids.shape), int(values.numel()))

    def members(self, g0: int, g1: int, r0: int, r1: int) -> torch.Tensor:
        """Boolean ``(g1 - g0, 1 or r1 - r0, p)``: element in group ``g`` (for examples ``r0:r1``)."""
        groups = torch.arange(g0, g1, device=self.index.device).view(-1, 1, 1)
        ids = self.index.view(1, 1, -1) if self.index.dim() == 1 else self.index[r0:r1].unsqueeze(0)
        return ids == groups

    def spread(self, per_group: torch.Tensor) -> torch.Tensor:
        """Group attributions ``(n, G)`` -> element attributions ``(n, p)``."""
        if self.index.dim() == 1:
            return per_group[:, self.index]
        return per_group.gather(1, self.index)

    @property
    def elementwise(self) -> bool:
        return self.index.dim() == 1 and self.count == self.index.numel()


def _flat_model(model: nn.Module, shape: tuple[int, ...]) -> Callable[[torch.Tensor], torch.Tensor]:
    """``model`` on flattened examples ``(m, p)``; the model itself when the inputs are 2-D."""
    if len(shape) == 1:
        return model
    return lambda z: model(fast_layout(z.reshape(-1, *shape)))


def substitution_outputs(
    model: nn.Module,
    inputs: torch.Tensor,
    values: torch.Tensor,
    target: Target,
    *,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
    fast: bool = True,
) -> torch.Tensor:
    """Target output with one feature substituted: ``out[j, i] = f(x_i with x_ij := values[j, i])``.

    A model that declares the columns it reads (:func:`columns_read`) is run on those columns' substitutions only;
    the row of every other column is its output on ``inputs`` unchanged (the same values, with less work).

    Parameters
    ----------
    inputs
        ``(n, p)``.
    values
        ``(p, n)`` replacement values, one row per feature.

    Returns
    -------
    torch.Tensor
        ``(p, n)``.
    """
    n, p = inputs.shape
    out = inputs.new_empty(p, n)
    split = split_additive_head(model, p) if fast else None
    read = columns_read(model) if fast else None
    with torch.no_grad():
        if split is not None:
            head, tail = split
            z = head(inputs)  # (n, h)
            h = z.shape[1]
            r_step = min(n, rows_per_chunk(h, max_batch_elements))
            f_step = rows_per_chunk(r_step * h, max_batch_elements)
            for r0, r1 in _chunks(n, r_step):
                t = slice_target(target, r0, r1)
                new = values[:, r0:r1].t()  # (r, p)
                for j0, j1 in _chunks(p, f_step):
                    feats = torch.arange(j0, j1, device=inputs.device)
                    zp = z[r0:r1].unsqueeze(0) + head.change(new, inputs[r0:r1], feats)
                    res = select_target(tail(zp.reshape(-1, h)), repeat_target(t, j1 - j0))
                    out[j0:j1, r0:r1] = res.view(j1 - j0, r1 - r0)
        else:
            columns = torch.arange(p, device=inputs.device) if read is None else read.to(inputs.device)
            if read is not None:  # a column the model does not read leaves its output as it is
                out[:] = forward_target(model, inputs, target, max_batch_elements)
            r_step = min(n, rows_per_chunk(p, max_batch_elements))
            f_step = rows_per_chunk(r_step * p, max_batch_elements)
            for r0, r1 in _chunks(n, r_step):
                t = slice_target(target, r0, r1)
                for c0, c1 in _chunks(len(columns), f_step):
                    f = c1 - c0
                    feats = columns[c0:c1]
                    xp = inputs[r0:r1].unsqueeze(0).repeat(f, 1, 1)  # (f, r, p)
                    xp[torch.arange(f, device=inputs.device), :, feats] = values[feats, r0:r1]
                    res = select_target(model(xp.reshape(-1, p)), repeat_target(t, f))
                    out[feats, r0:r1] = res.view(f, r1 - r0)
    return out


def columns_read(model: nn.Module) -> torch.Tensor | None:
    """The input columns ``model``'s output depends on, ascending int64: those it declares (its ``inputs_read``
    attribute: the booster's screened inputs), or those the fixed basis it starts with reads (a
    :class:`~synthbench.models.basis.BasisLinear`: the screened network's kept inputs); None where neither says
    (every column may matter)."""
    read = getattr(model, "inputs_read", None)
    if read is not None:
        return torch.as_tensor(read, dtype=torch.long)
    layers = _from_first_linear(model)
    return layers[0].read.cpu() if layers is not None and isinstance(layers[0], BasisLinear) else None


def _group_outputs(
    model: Callable[[torch.Tensor], torch.Tensor],
    inputs: torch.Tensor,
    groups: Groups,
    source: Callable[[int, int, int, int], torch.Tensor],
    target: Target,
    max_batch_elements: int,
) -> torch.Tensor:
    """Target output with one group substituted: ``out[g, i] = f(x_i with x_i[G_g] := source[g, i][G_g])``.

    ``inputs`` is ``(n, p)``; ``source(g0, g1, r0, r1)`` gives the replacement rows of groups
    ``g0:g1`` for examples ``r0:r1``, broadcastable to ``(g1 - g0, r1 - r0, p)``. Returns ``(G, n)``.
    """
    n, p = inputs.shape
    out = inputs.new_empty(groups.count, n)
    r_step = min(n, rows_per_chunk(p, max_batch_elements))
    g_step = rows_per_chunk(r_step * p, max_batch_elements)
    with torch.no_grad():
        for r0, r1 in _chunks(n, r_step):
            t = slice_target(target, r0, r1)
            x = inputs[r0:r1].unsqueeze(0)
            for g0, g1 in _chunks(groups.count, g_step):
                xp = torch.where(groups.members(g0, g1, r0, r1), source(g0, g1, r0, r1), x)
                res = select_target(model(xp.reshape(-1, p)), repeat_target(t, g1 - g0))
                out[g0:g1, r0:r1] = res.view(g1 - g0, r1 - r0)
    return out


def feature_ablation(
    model: nn.Module,
    inputs: torch.Tensor,
    target: Target,
    *,
    baselines: torch.Tensor | float | None = None,
    feature_mask: torch.Tensor | None = None,
    fast: bool = True,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
) -> torch.Tensor:
    """Occlusion of one feature at a time: ``f(x) - f(x with feature j := its baseline)``.

    Parameters
    ----------
    baselines
        Replacement values: None (zeros), a scalar, ``input_shape``, ``(1, *)`` or ``(n, *)``.
    feature_mask
        Groups of elements ablated together (module docstring); None: every element alone.

    Returns
    -------
    torch.Tensor
        The inputs' shape; positive when replacing the feature by its baseline lowers the target
        output (captum ``FeatureAblation``).
    """
    n, shape = inputs.shape[0], tuple(inputs.shape[1:])
    x = inputs.reshape(n, -1)
    base = as_baseline(baselines, inputs).reshape(n, -1)
    f_x = forward_target(model, inputs, target, max_batch_elements)
    if feature_mask is None and len(shape) == 1:
        ablated = substitution_outputs(model, x, base.t(), target, max_batch_elements=max_batch_elements, fast=fast)
        return f_x.unsqueeze(1) - ablated.t()
    groups = Groups.of(feature_mask, inputs)
    ablated = _group_outputs(
        _flat_model(model, shape), x, groups, lambda g0, g1, r0, r1: base[r0:r1], target, max_batch_elements
    )
    return groups.spread(f_x.unsqueeze(1) - ablated.t()).reshape(inputs.shape)


def _random_permutations(count: int, size: int, generator: torch.Generator, device: torch.device) -> torch.Tensor:
    """``(count, size)`` independent uniform random permutations (argsort of uniforms)."""
    return torch.argsort(torch.rand((count, size), generator=generator, device=device), dim=1)


def feature_permutation(
    model: nn.Module,
    inputs: torch.Tensor,
    target: Target,
    *,
    feature_mask: torch.Tensor | None = None,
    permutations: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    seed: int = 0,
    fast: bool = True,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
) -> torch.Tensor:
    """Permutation importance per example: ``f(x_i) - f(x_i with feature j taken from x_{pi_j(i)})``.

    Each feature (element, or group of ``feature_mask``) is shuffled across the batch by its own
    permutation ``pi_j`` (captum ``FeaturePermutation``); the elements of a group move together.

    Parameters
    ----------
    feature_mask
        Groups of elements (module docstring); None: every element alone.
    permutations
        Explicit ``(G, n)`` long tensor, row ``j`` a permutation of ``0..n-1`` (``G`` features, in
        the order of their ids). If None, drawn from ``generator``; a drawn identity permutation
        is replaced by its cyclic shift (captum re-draws identities) so every feature really moves.

    Returns
    -------
    torch.Tensor
        The inputs' shape; positive when shuffling the feature lowers the example's target output.
    """
    n, shape = inputs.shape[0], tuple(inputs.shape[1:])
    if n < 2:
        raise ValueError("feature_permutation needs at least 2 examples")
    groups = Groups.of(feature_mask, inputs)
    if permutations is None:
        g = make_generator(generator, seed, inputs.device)
        perms = _random_permutations(groups.count, n, g, inputs.device)
        identity = (perms == torch.arange(n, device=inputs.device)).all(dim=1)
        perms[identity] = torch.roll(perms[identity], 1, dims=1)
    else:
        perms = torch.as_tensor(permutations, dtype=torch.long, device=inputs.device)
        if tuple(perms.shape) != (groups.count, n):
            raise ValueError(f"permutations must have shape ({groups.count}, {n}), got {tuple(perms.shape)}")
    x = inputs.reshape(n, -1)
    f_x = forward_target(model, inputs, target, max_batch_elements)
    if feature_mask is None and len(shape) == 1:
        values = x.t().gather(1, perms)  # values[j, i] = x[perms[j, i], j]
        permuted = substitution_outputs(model, x, values, target, max_batch_elements=max_batch_elements, fast=fast)
        return f_x.unsqueeze(1) - permuted.t()
    permuted = _group_outputs(
        _flat_model(model, shape), x, groups, lambda g0, g1, r0, r1: x[perms[g0:g1, r0:r1]], target, max_batch_elements
    )
    return groups.spread(f_x.unsqueeze(1) - permuted.t()).reshape(inputs.shape)


def _path_outputs_fast(
    head: AdditiveHead,
    tail: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    base: torch.Tensor,
    perms: torch.Tensor,
    target: Target,
) -> torch.Tensor:
    """Outputs along each permutation path via cumulative updates of the head's output; ``(s, p, r)``."""
    s, p = perms.shape
    r = x.shape[0]
    z_base = head(base)  # (r, h)
    h = z_base.shape[1]
    z = head.change(x, base, perms)  # (s, p, r, h): each step's change of the head's output
    z.cumsum_(dim=1).add_(z_base)  # in place: these are the largest tensors of the method
    z[:, -1] = head(x)  # the full state exactly, so the telescoping sum ends at f(x)
    return select_target(tail(z.reshape(-1, h)), repeat_target(target, s * p)).view(s, p, r)


def _path_outputs_generic(
    model: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    base: torch.Tensor,
    perms: torch.Tensor,
    groups: Groups,
    r0: int,
    target: Target,
) -> torch.Tensor:
    """Outputs along each permutation path of the groups by building the inputs; ``(s, S, r)``.

    ``x`` and ``base`` are examples ``r0:r0 + r`` as ``(r, p)``; ``perms`` ``(s, S)`` lists distinct groups (all
    ``G`` of them, or those the model reads); after step ``k`` the groups ``perms[:, :k + 1]`` hold the input
    values and every other group the baseline.
    """
    s, n_steps = perms.shape
    r, p = x.shape
    rank = torch.full((s, groups.count), n_steps, dtype=torch.long, device=x.device)  # unlisted: never switched
    rank.scatter_(1, perms, torch.arange(n_steps, device=x.device).expand(s, n_steps))  # rank[s, j]: step of group j
    index = groups.index.view(1, p) if groups.index.dim() == 1 else groups.index[r0 : r0 + r]  # (1 or r, p)
    element_rank = rank[:, index]  # (s, 1 or r, p): when each element switches to its input value
    steps = torch.arange(n_steps, device=x.device).view(1, n_steps, 1, 1)
    present = element_rank.unsqueeze(1) <= steps  # (s, S, 1 or r, p)
    states = torch.where(present, x.view(1, 1, r, p), base.view(1, 1, r, p))
    return select_target(model(states.reshape(-1, p)), repeat_target(target, s * n_steps)).view(s, n_steps, r)


def shapley_sampling(
    model: nn.Module,
    inputs: torch.Tensor,
    target: Target,
    *,
    baselines: torch.Tensor | float | None = None,
    feature_mask: torch.Tensor | None = None,
    n_samples: int = 25,
    permutations: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    seed: int = 0,
    fast: bool = True,
    max_batch_elements: int = DEFAULT_MAX_BATCH_ELEMENTS,
) -> torch.Tensor:
    """Shapley value sampling: mean marginal contribution over random feature orderings.

    For each permutation ``pi`` of the features (shared by all examples, as in captum
    ``ShapleyValueSampling``) the features are switched from baseline to input value in the
    order ``pi``; feature ``pi_k`` is credited with ``f(state_k) - f(state_{k-1})``. The average
    over ``n_samples`` permutations is returned. For a model that says which columns it reads
    (:func:`columns_read`; elementwise features, ``fast``), each ordering is restricted to those columns, in its
    order: every other column's marginal contribution is exactly 0 and the read ones' are unchanged (up to the
    rounding of the fast path's final step), at ``m / p`` of the evaluations for ``m`` columns read.

    Parameters
    ----------
    baselines
        None (zeros), a scalar, ``input_shape``, ``(1, *)`` or ``(n, *)``.
    feature_mask
        Groups of elements switched together (module docstring); None: every element alone.
    permutations
        Explicit ``(n_samples, G)`` long tensor of feature orderings; otherwise drawn from
        ``generator`` (or ``seed``).

    Returns
    -------
    torch.Tensor
        The inputs' shape. Efficiency: without a mask every example sums to
        ``f(x) - f(baseline)`` (telescoping sum), for any number of permutations, up to rounding;
        with a mask the group values sum to it.
    """
    n, shape = inputs.shape[0], tuple(inputs.shape[1:])
    groups = Groups.of(feature_mask, inputs)
    if permutations is None:
        g = make_generator(generator, seed, inputs.device)
        perms = _random_permutations(int(n_samples), groups.count, g, inputs.device)
    else:
        perms = torch.as_tensor(permutations, dtype=torch.long, device=inputs.device)
        if perms.dim() != 2 or perms.shape[1] != groups.count:
            raise ValueError(f"permutations must have shape (n_samples, {groups.count}), got {tuple(perms.shape)}")
    s_total = perms.shape[0]
    read = columns_read(model) if fast and groups.elementwise else None
    if read is not None and 0 < len(read) < groups.count:  # every other column's marginal contribution is 0
        on = torch.zeros(groups.count, dtype=torch.bool, device=perms.device)
        on[read.to(perms.device)] = True
        perms = perms[on[perms]].view(s_total, len(read))  # each ordering of the columns the model reads
    x_all = inputs.reshape(n, -1)
    p = x_all.shape[1]
    base_all = as_baseline(baselines, inputs).reshape(n, -1)
    split = split_additive_head(model, p) if fast and feature_mask is None and len(shape) == 1 else None
    flat = _flat_model(model, shape)
    width = split[0].width if split is not None else p
    per_row_path = perms.shape[1] * width  # elements of one example's path through the (tail of the) model
    r_step = min(n, rows_per_chunk(per_row_path, max_batch_elements))
    s_step = min(s_total, rows_per_chunk(r_step * per_row_path, max_batch_elements))
    f_base = forward_target(model, base_all.reshape(inputs.shape), target, max_batch_elements)
    attr = inputs.new_zeros(n, groups.count)
    with torch.no_grad():
        for r0, r1 in _chunks(n, r_step):
            x, b = x_all[r0:r1], base_all[r0:r1]
            t = slice_target(target, r0, r1)
            for s0, s1 in _chunks(s_total, s_step):
                pc = perms[s0:s1]
                if split is not None:
                    outs = _path_outputs_fast(split[0], split[1], x, b, pc, t)
                else:
                    outs = _path_outputs_generic(flat, x, b, pc, groups, r0, t)
                prev = torch.cat([f_base[r0:r1].expand(s1 - s0, 1, r1 - r0), outs[:, :-1]], dim=1)
                contrib = outs - prev  # (s, G, r), credited to feature pc[s, k]
                attr[r0:r1].index_add_(1, pc.reshape(-1), contrib.permute(2, 0, 1).reshape(r1 - r0, -1))
    attr = attr / s_total
    return (attr if groups.elementwise else groups.spread(attr)).reshape(inputs.shape)
