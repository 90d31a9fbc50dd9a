"""Embedded feature selection: methods whose importances come out of training a network.

Registered methods (none runs by default; none uses a shared model, each trains its own):

``lassonet_2023``
    The package's path as the 2023 benchmark called it, scored by its ``feature_importances_``: computed for the
    folds of a setting as one batch by :mod:`synthbench.methods.lassonet_path` (each fold's path the package's, to
    the bit).
``lassonet``
    The ``lassonet`` package's :class:`~lassonet.LassoNetClassifier` (Lemhadri et al., 2021),
    one hidden layer of 16 units. The score of a feature is the penalty ``lambda`` at which it
    leaves the regularisation path, made finite and tie-broken by :func:`path_scores`.
``cancelout_sigmoid``, ``cancelout_softmax``
    CancelOut (Borisov et al., 2019): a learnable per-feature gate in front of the benchmark MLP,
    trained jointly with it; the score is the trained gate value (see :class:`CancelOutGate`).
``deep_lasso``
    Deep Lasso (Cherepanova et al., 2023): the benchmark MLP trained with a group-lasso penalty on
    the input gradients of the loss; the score is the per-feature norm of the loss's input
    gradient on the explained rows (see :func:`input_gradient_norms`).

The neural methods reuse :func:`~synthbench.models.mlp.build_mlp` and the benchmark's training
protocol (Adam, mini-batches of 64, binary cross-entropy on the logit, early stopping on the
loss of a random 20 % validation part, best weights restored; the 2023 CancelOuts train with the
``passemiers2023`` preset's loop instead, which keeps the last weights) through one shared loop,
:func:`~synthbench.models.loop.fit_networks`, with a penalty term in the batch loss. Each accepts
``ensemble = B``: with ``B > 1`` it is trained on ``B`` bootstrap samples of the training rows
and the scores are averaged (:func:`bootstrap_ensemble`). The CancelOuts train a setting's folds
(and an ensemble's members) as one batch (:class:`GatedMLP`).

Randomness: every draw comes from the method's ``rng`` (a NumPy generator), through integer
seeds for ``torch.Generator`` objects; torch's global generator is never left changed.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Literal, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from synthbench.methods.lassonet_path import LassoNetPath, lassonet_paths
from synthbench.methods.registry import AS_RUN_2023, register_method
from synthbench.models import SharedModels
from synthbench.models.device import cpu_threads, select_device
from synthbench.models.loop import Member, TrainConfig, fit_network, fit_networks
from synthbench.models.mlp import MLPConfig, build_seeded_mlp
from synthbench.models.presets import mlp_config
from synthbench.models.stacked import Draw, StackedBatch, StackedNetwork, stacked_forward, sub_params
from synthbench.protocol import FoldData

__all__ = [
    "CancelOutGate",
    "bootstrap_ensemble",
    "ensemble_members",
    "ensemble_mean",
    "GatedMLP",
    "bootstrap_indices",
    "cancelout_penalty",
    "deep_lasso_penalty",
    "ensemble_seeds",
    "fit_cancelout",
    "fit_deep_lasso",
    "fit_lassonet",
    "input_gradient_norms",
    "lassonet_seed",
    "path_scores",
]

#: Largest seed drawn from ``rng`` for a member of an ensemble (fits torch's 64-bit seeds).
_SEED_BOUND = 2**62

#: Training of the embedded selectors' networks: the benchmark MLP's settings, with patience
#: counted from the best epoch so far (not the previous one).
EMBEDDED_CONFIG = MLPConfig(train=TrainConfig(stopping="best"))


def _device(models: SharedModels) -> torch.device:
    return select_device(models.settings.device)


# ---------------------------------------------------------------------------------------------
# Bootstrap ensembles
# ---------------------------------------------------------------------------------------------


def ensemble_seeds(rng: np.random.Generator, n_members: int) -> list[int]:
    """The seeds of the ``n_members`` members of an ensemble: one draw of ``n_members`` integers
    in ``[0, 2**62)`` from ``rng``."""
    if n_members < 1:
        raise ValueError(f"ensemble must be a positive integer, got {n_members}")
    return [int(s) for s in rng.integers(0, _SEED_BOUND, size=n_members)]


def bootstrap_indices(n: int, seed: int) -> np.ndarray:
    """``n`` row indices drawn uniformly with replacement from ``range(n)`` by
    ``np.random.default_rng(seed)``; int64 ``(n,)``."""
    return np.random.default_rng(seed).integers(0, n, size=n)


def bootstrap_ensemble(
    fit: Callable[[FoldData, int], np.ndarray],
    data: FoldData,
    rng: np.random.Generator,
    n_members: int = 1,
) -> np.ndarray:
    """Mean importances of ``fit`` over bootstrap samples of the training rows.

    Parameters
    ----------
    fit : ``fit(data, seed) -> (p,)`` importances of one model trained on ``data.X_train`` with
        all its randomness from ``seed``.
    data : FoldData
    rng : the method's generator; :func:`ensemble_seeds` draws the members' seeds from it.
    n_members : int
        1: a single ``fit(data, seed)`` on the whole training part, no resampling. ``B > 1``:
        member ``b`` gets seed ``s_b`` and ``data`` with ``X_train, y_train`` replaced by the
        rows :func:`bootstrap_indices` ``(n_train, s_b)``; the result is the mean of the ``B``
        importance vectors.

    Returns
    -------
    ndarray of float64, shape (p,)
    """
    return ensemble_mean([fit(member, seed) for member, seed in ensemble_members(data, rng, n_members)])


def ensemble_members(data: FoldData, rng: np.random.Generator, n_members: int = 1) -> list[tuple[FoldData, int]]:
    """The members of :func:`bootstrap_ensemble`: ``(data, seed)`` for each, ``data`` itself for one member, its
    bootstrap rows (:func:`bootstrap_indices` of the seed) for each of several."""
    seeds = ensemble_seeds(rng, n_members)
    if n_members == 1:
        return [(data, seeds[0])]
    X, y = data.X_train, data.y_train
    picks = [(bootstrap_indices(X.shape[0], seed), seed) for seed in seeds]
    return [(dataclasses.replace(data, X_train=np.ascontiguousarray(X[r]), y_train=y[r]), s) for r, s in picks]


def ensemble_mean(importances: Sequence[np.ndarray]) -> np.ndarray:
    """The members' importances averaged (float64 ``(p,)``; one member's as they are)."""
    if len(importances) == 1:
        return np.asarray(importances[0], dtype=np.float64)
    total = np.zeros(len(importances[0]))
    for imp in importances:
        total += np.asarray(imp, dtype=np.float64)
    return total / len(importances)


# ---------------------------------------------------------------------------------------------
# CancelOut
# ---------------------------------------------------------------------------------------------


class CancelOutGate(nn.Module):
    """Per-feature gate ``x -> x * g(w)`` of CancelOut (Borisov et al., 2019).

    Parameters
    ----------
    n_features : int, ``p``
    activation : ``"sigmoid"``: ``g(w) = sigmoid(w)``, weights start at ``init = 4`` (as the
        reference code: every gate starts at ``sigmoid(4) ≈ 0.982``). ``"softmax"``:
        ``g(w) = p * softmax(w)``, weights start at 0 (every gate at 1; the gates always
        average 1, so the input scale is kept).
    init : float or None, the starting weight (None: the default of the activation).
    scaled : softmax only: multiply by ``p`` (True) or not (the 2023 benchmark's gate: every
        gate starts at ``1 / p``, shrinking the input ``p``-fold).

    Attributes
    ----------
    weight : nn.Parameter ``(p,)``, the raw gate weights ``w``
    """

    def __init__(
        self,
        n_features: int,
        activation: Literal["sigmoid", "softmax"] = "sigmoid",
        init: float | None = None,
        scaled: bool = True,
    ) -> None:
        super().__init__()
        if activation not in ("sigmoid", "softmax"):
            raise ValueError(f"activation must be 'sigmoid' or 'softmax', got {activation!r}")
        self.activation = activation
        self.scaled = bool(scaled)
        start = (4.0 if activation == "sigmoid" else 0.0) if init is None else float(init)
        self.weight = nn.Parameter(torch.full((n_features,), start))

    def gates(self, weight: torch.Tensor | None = None) -> torch.Tensor:
        """The gate values ``g(w)`` of ``weight`` (``(..., p)``; None: the gate's own ``(p,)``), along its last
        axis: in (0, 1) for sigmoid, positive summing to ``p`` for softmax."""
        w = self.weight if weight is None else weight
        if self.activation == "sigmoid":
            return torch.sigmoid(w)
        soft = torch.softmax(w, dim=-1)
        return soft * w.shape[-1] if self.scaled else soft

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gates()

    def extra_repr(self) -> str:
        return f"n_features={self.weight.shape[0]}, activation={self.activation}"


def cancelout_penalty(
    weight: torch.Tensor, lambda_var: float, lambda_l1: float, *, signed: bool = False
) -> torch.Tensor:
    """The CancelOut regulariser ``-lambda_var * var(w / p) + lambda_l1 * ||w / p||_1`` of gate weights ``weight``
    ``(..., p)``, along the last axis: shape ``weight.shape[:-1]``.

    As in the paper's loss, on the raw gate weights ``w`` (before the activation) divided by
    the number of features ``p``; ``var`` is the unbiased sample variance (0 when ``p = 1``).
    Rewarding variance pushes the gates apart; the L1 term pulls the weights towards 0.
    ``signed=True``: ``sum(w / p)`` instead of the norm (the 2023 benchmark's code), which keeps
    pushing weights down once they are negative.
    """
    w = weight / weight.shape[-1]
    var = torch.var(w, dim=-1) if w.shape[-1] > 1 else w.new_zeros(w.shape[:-1])
    return -lambda_var * var + lambda_l1 * (w.sum(dim=-1) if signed else w.abs().sum(dim=-1))


class GatedMLP(StackedNetwork):
    """CancelOut's network: a :class:`CancelOutGate` before the benchmark MLP, trained on the classification loss
    plus the gate's :func:`cancelout_penalty`; its members train as one batch (a
    :class:`~synthbench.models.stacked.StackedNetwork`)."""

    def __init__(
        self, gate: CancelOutGate, mlp: nn.Sequential, lambda_var: float, lambda_l1: float, *, signed: bool
    ) -> None:
        super().__init__()
        self.gate, self.mlp = gate, mlp
        self.lambda_var, self.lambda_l1, self.signed = float(lambda_var), float(lambda_l1), bool(signed)

    def stacked_logits(
        self,
        params: dict[str, torch.Tensor],
        buffers: dict[str, torch.Tensor],
        x: torch.Tensor,
        *,
        training: bool,
        draw: Draw | None,
    ) -> torch.Tensor:
        """The members' logits on their rows ``x`` ``(K, b, p)``, each row gated by its member's ``g(w)``."""
        gated = x * self.gate.gates(params["gate.weight"])[:, None]
        return stacked_forward(self.mlp, sub_params(params, "mlp"), gated, training=training, draw=draw)

    def stacked_objective(self, batch: StackedBatch) -> torch.Tensor:
        """Each member's mean classification loss plus its gate's penalty: ``(K,)``."""
        loss = super().stacked_objective(batch)
        if self.lambda_var == 0.0 and self.lambda_l1 == 0.0:
            return loss
        w = batch.params["gate.weight"]
        return loss + cancelout_penalty(w, self.lambda_var, self.lambda_l1, signed=self.signed)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.one(self.stacked_logits, x, None, training=self.training)


def fit_cancelout(
    Xs: Sequence[np.ndarray],
    ys: Sequence[np.ndarray],
    seeds: Sequence[int],
    *,
    activation: Literal["sigmoid", "softmax"],
    lambda_var: float,
    lambda_l1: float,
    gate_lr: float | None,
    init: float | None = None,
    softmax_scaled: bool = True,
    signed_l1: bool = False,
    device: torch.device | str = "cpu",
    config: MLPConfig = EMBEDDED_CONFIG,
) -> list[tuple[np.ndarray, GatedMLP]]:
    """Train ``CancelOutGate -> benchmark MLP`` on each ``(Xs[i], ys[i])`` (a member each, all as one batch) and
    return each one's gate values.

    Parameters
    ----------
    Xs : float32 ``(n_i, p)`` per member;  ys : int ``(n_i,)`` in ``{0, 1}`` per member
    seeds : per member, seeds the MLP's initialisation, the validation split, batch order and noise.
    activation, lambda_var, lambda_l1 : see :class:`CancelOutGate` and :func:`cancelout_penalty`.
    gate_lr : Adam learning rate of the gate weights (no weight decay on them). The MLP keeps
        ``config.lr``; at that rate (5e-4) and with early stopping after some tens of epochs a
        gate weight moves by well under 0.1, too little for ``sigmoid(w)`` near ``w = 4`` to
        separate features. None: the gate is trained like every other weight (``config.lr``
        and ``config.weight_decay``, as the 2023 benchmark did).
    init, softmax_scaled : the gate's starting weight and softmax scaling (:class:`CancelOutGate`).
    signed_l1 : the penalty's signed sum instead of the L1 norm (:func:`cancelout_penalty`).
    device, config : where to train and the MLP's architecture and training settings.

    Returns
    -------
    per member, ``(gates, module)``: float64 ``(p,)``, the trained ``g(w)`` (higher = more important), and the
    trained :class:`GatedMLP` in eval mode
    """
    dev = select_device(device)
    members = []
    for X, y, seed in zip(Xs, ys, seeds, strict=True):
        gen = torch.Generator().manual_seed(int(seed))
        gate = CancelOutGate(X.shape[1], activation, init, scaled=softmax_scaled)
        net = GatedMLP(gate, build_seeded_mlp(X.shape[1], config, gen), lambda_var, lambda_l1, signed=signed_l1)
        own = () if gate_lr is None else (gate.weight,)
        members.append(Member(net, X, y, gen, gate_params=own))
    with cpu_threads(dev):
        fit_networks(members, config=config.train, device=dev, gate_lr=gate_lr)
    out = []
    for member in members:
        net = cast(GatedMLP, member.module)
        with torch.no_grad():
            out.append((net.gate.gates().double().cpu().numpy(), net))
    return out


_CANCELOUT = "Borisov, Haug & Kasneci 2019 (ICANN)"

#: Changes when the CancelOuts compute other values for the same folds (part of the key of the parts stored for a
#: setting's folds).
_CANCELOUT_VERSION = 1


def _register_cancelout(
    name: str, activation: Literal["sigmoid", "softmax"], description: str, params: dict, reference: str = _CANCELOUT
) -> None:
    def method(
        data: FoldData, models: SharedModels, rng: np.random.Generator, *, ensemble: int, training: str, **options
    ) -> np.ndarray:
        config = EMBEDDED_CONFIG if training == "embedded" else mlp_config(training)
        dev = _device(models)

        def compute(folds: Sequence[FoldData], rngs: Sequence[np.random.Generator]) -> list[np.ndarray]:
            parts = [ensemble_members(f, r, ensemble) for f, r in zip(folds, rngs, strict=True)]
            flat = [m for part in parts for m in part]
            fits = fit_cancelout(
                [d.X_train for d, _ in flat],
                [d.y_train for d, _ in flat],
                [seed for _, seed in flat],
                activation=activation,
                device=dev,
                config=config,
                **options,
            )
            gates = iter(g for g, _ in fits)
            return [ensemble_mean([next(gates) for _ in part]) for part in parts]

        tag = (name, _CANCELOUT_VERSION, ensemble, training, tuple(sorted(options.items())), str(dev))
        return cast(np.ndarray, models.method_folds(data, rng, name, tag, compute))

    method.__name__ = name
    method.__doc__ = f"CancelOut ({activation}) in front of the benchmark MLP; scores = trained gates, shape (p,)."
    register_method(name, description=description, reference=reference, default=False, accelerated=True, params=params)(
        method
    )


_register_cancelout(
    "cancelout_sigmoid",
    "sigmoid",
    "CancelOut (Borisov et al. 2019): gate sigmoid(w), w starting at 4, before the benchmark MLP, "
    "loss − λ_var·var(w/p) + λ_l1·‖w/p‖₁; score = trained gate",
    {"lambda_var": 1.0, "lambda_l1": 0.1, "gate_lr": 0.01, "ensemble": 1, "training": "embedded"},
)
_register_cancelout(
    "cancelout_softmax",
    "softmax",
    "CancelOut (Borisov et al. 2019): gate p·softmax(w), w starting at 0, before the benchmark MLP, "
    "loss − λ_var·var(w/p) + λ_l1·‖w/p‖₁; score = trained gate",
    {"lambda_var": 1.0, "lambda_l1": 0.1, "gate_lr": 0.01, "ensemble": 1, "training": "embedded"},
)
#: The 2023 benchmark's CancelOuts (src/cancelout.py, src/nn_wrapper.py at 06afd2e): weights start at 1, the
#: gate trained with the network (lr 5e-4, weight decay 1e-5), the 2023 training loop (the passemiers2023
#: preset); the sigmoid one with −0.2·var(w/p) + 0.1·sum(w/p) (a signed sum), the softmax one with no penalty
#: at all and an unscaled softmax (every gate 1/p at the start).
_register_cancelout(
    "cancelout_sigmoid_2023",
    "sigmoid",
    "CancelOut as the 2023 benchmark ran it: sigmoid gate from w = 1, loss − 0.2·var(w/p) + 0.1·Σ w/p, the gate "
    "trained with the MLP, the passemiers2023 training loop",
    {
        "lambda_var": 0.2,
        "lambda_l1": 0.1,
        "gate_lr": None,
        "init": 1.0,
        "signed_l1": True,
        "ensemble": 1,
        "training": "passemiers2023",
    },
    f"{_CANCELOUT}; {AS_RUN_2023}",
)
_register_cancelout(
    "cancelout_softmax_2023",
    "softmax",
    "CancelOut as the 2023 benchmark ran it: softmax gate (not ×p, so every gate starts at 1/p), no penalty, "
    "the gate trained with the MLP, the passemiers2023 training loop",
    {
        "lambda_var": 0.0,
        "lambda_l1": 0.0,
        "gate_lr": None,
        "init": 1.0,
        "softmax_scaled": False,
        "ensemble": 1,
        "training": "passemiers2023",
    },
    f"{_CANCELOUT}; {AS_RUN_2023}",
)


# ---------------------------------------------------------------------------------------------
# Deep Lasso
# ---------------------------------------------------------------------------------------------


def deep_lasso_penalty(xb: torch.Tensor, loss: torch.Tensor, lam: float) -> torch.Tensor:
    """``lam * sum_j ||dL/dx_{:, j}||_2``: group lasso on the batch's input gradients.

    ``loss`` is the batch's mean loss, ``xb`` the batch ``(b, p)`` it was computed from
    (requiring grad); the gradient is taken with ``create_graph=True`` so the penalty is
    differentiated through. The norm of each column is over the ``b`` rows of the batch.
    """
    (grad,) = torch.autograd.grad(loss, xb, create_graph=True)
    # sqrt(sum of squares + tiny): the plain norm has a NaN gradient at an all-zero column.
    return lam * torch.sqrt(grad.pow(2).sum(dim=0) + 1e-20).sum()


def input_gradient_norms(module: nn.Module, X: np.ndarray, y: np.ndarray, device: torch.device) -> np.ndarray:
    """``||dL/dx_{:, j}||_2`` of the mean binary cross-entropy ``L`` of ``module`` on ``(X, y)``.

    Parameters
    ----------
    module : eval-mode network mapping ``(n, p)`` to logits ``(n, 1)``
    X : float32 ``(n, p)``;  y : int ``(n,)`` in ``{0, 1}``
    device : where ``module`` lives

    Returns
    -------
    ndarray of float64, shape (p,), non-negative
    """
    x = torch.as_tensor(np.ascontiguousarray(X, dtype=np.float32), device=device).requires_grad_(True)
    target = torch.as_tensor(np.asarray(y), device=device).to(torch.float32)
    module.eval()
    loss = F.binary_cross_entropy_with_logits(module(x).reshape(-1), target)
    (grad,) = torch.autograd.grad(loss, x)
    return grad.double().norm(dim=0).cpu().numpy()


def fit_deep_lasso(
    X: np.ndarray,
    y: np.ndarray,
    seed: int,
    *,
    lam: float,
    device: torch.device | str = "cpu",
    config: MLPConfig = EMBEDDED_CONFIG,
) -> nn.Sequential:
    """Train the benchmark MLP with the Deep Lasso penalty (:func:`deep_lasso_penalty`).

    Parameters
    ----------
    X : float32 ``(n, p)``;  y : int ``(n,)`` in ``{0, 1}``
    seed : seeds the initialisation, validation split, batch order and noise
    lam : float, the penalty weight (0: plain training, still through this loop)
    device, config : as for :func:`fit_cancelout`

    Returns
    -------
    nn.Sequential, the trained MLP in eval mode on ``device``
    """
    dev = select_device(device)
    gen = torch.Generator().manual_seed(int(seed))
    module = build_seeded_mlp(X.shape[1], config, gen)
    penalty = None if lam == 0.0 else (lambda _m, xb, loss: deep_lasso_penalty(xb, loss, lam))  # noqa: E731
    with cpu_threads(dev):
        result = fit_network(
            module,
            X,
            y,
            config=config.train,
            generator=gen,
            device=dev,
            penalty=penalty,
            input_grad=penalty is not None,
        )
    return cast(nn.Sequential, result.module)  # the module given


@register_method(
    "deep_lasso",
    description="Deep Lasso (Cherepanova et al. 2023): benchmark MLP trained with loss + λ·Σ_j ‖∂L/∂x_j‖₂ "
    "over each batch; score = ‖∂L/∂x_j‖₂ on the explained rows",
    reference="Cherepanova et al. 2023 (NeurIPS Datasets and Benchmarks)",
    default=False,
    accelerated=True,
    params={"lam": 0.1, "ensemble": 1},
)
def deep_lasso(
    data: FoldData, models: SharedModels, rng: np.random.Generator, *, lam: float, ensemble: int
) -> np.ndarray:
    """Per-feature input-gradient norm of the loss on the explained rows, shape ``(p,)``, of an
    MLP trained with the Deep Lasso penalty (averaged over a bootstrap ensemble when
    ``ensemble > 1``)."""
    dev = _device(models)

    def fit(d: FoldData, seed: int) -> np.ndarray:
        module = fit_deep_lasso(d.X_train, d.y_train, seed, lam=lam, device=dev)
        return input_gradient_norms(module, d.X_explain, d.y_explain, dev)

    return bootstrap_ensemble(fit, data, rng, ensemble)


# ---------------------------------------------------------------------------------------------
# LassoNet
# ---------------------------------------------------------------------------------------------


def path_scores(leave_lambda: np.ndarray, tiebreak: np.ndarray, multiplier: float = 2.0) -> np.ndarray:
    """Finite scores from the penalties at which features leave a regularisation path.

    Parameters
    ----------
    leave_lambda : float ``(p,)``, ``>= 0`` or ``+inf``; ``inf`` = the feature never left.
    tiebreak : float ``(p,)``, ``>= 0``; orders features with equal ``leave_lambda`` (higher =
        more important); equal values stay tied.
    multiplier : float > 1; ``inf`` becomes ``multiplier * max finite lambda`` (1 when no value
        is finite or the largest is 0), i.e. a value above every finite one.

    Returns
    -------
    ndarray of float64, shape (p,), finite
        ``lambda' + 0.5 * gap * tiebreak / max(tiebreak)``, where ``lambda'`` is ``leave_lambda``
        with ``inf`` replaced and ``gap`` the smallest difference between distinct ``lambda'``
        (1 when all are equal). The order is lexicographic in ``(leave_lambda, tiebreak)``:
        a later leave always ranks higher, whatever the tie-break (up to float rounding, which
        can only leave a tie unbroken).
    """
    lam = np.asarray(leave_lambda, dtype=np.float64).copy()
    tb = np.asarray(tiebreak, dtype=np.float64)
    if lam.shape != tb.shape or lam.ndim != 1:
        raise ValueError(f"leave_lambda and tiebreak must be 1-D of the same shape, got {lam.shape} and {tb.shape}")
    if np.isnan(lam).any() or (lam < 0).any() or not np.isfinite(tb).all() or (tb < 0).any():
        raise ValueError("leave_lambda must be >= 0 or +inf and tiebreak finite and >= 0")
    if multiplier <= 1.0:
        raise ValueError(f"multiplier must exceed 1, got {multiplier}")
    finite = np.isfinite(lam)
    top = lam[finite].max() if finite.any() else 0.0
    lam[~finite] = multiplier * top if top > 0 else 1.0
    distinct = np.unique(lam)
    gap = float(np.diff(distinct).min()) if distinct.size > 1 else 1.0
    scale = tb.max()
    return lam + (0.5 * gap * tb / scale if scale > 0 else 0.0)


def _seeded_path(clf, X: np.ndarray, y: np.ndarray, seed: int, dev: torch.device, callback=None) -> list:
    """``clf.path(X, y)`` with torch's CPU generator seeded inside ``fork_rng`` (the global state is restored
    afterwards), one CPU thread, and the package's warning about a large ``lambda_start`` silenced."""
    with torch.random.fork_rng(devices=[]), cpu_threads(dev), warnings.catch_warnings():
        torch.default_generator.manual_seed(int(seed))
        warnings.filterwarnings("ignore", message=r"lambda_start=", category=UserWarning)
        return clf.path(np.asarray(X, dtype=np.float32), np.asarray(y, dtype=np.int64), callback=callback)


def fit_lassonet(
    X: np.ndarray,
    y: np.ndarray,
    seed: int,
    *,
    hidden_dims: tuple[int, ...],
    lambda_start: float,
    warmup_multiplier: float,
    path_multiplier: float,
    n_iters: tuple[int, int],
    patience: tuple[int, int],
    M: float,
    device: torch.device | str = "cpu",
) -> tuple[np.ndarray, np.ndarray]:
    """Fit a LassoNet path and return, per feature, when it leaves and its last skip weight.

    Parameters
    ----------
    X : float32 ``(n, p)``;  y : int ``(n,)`` in ``{0, 1}``
    seed : the validation split's ``random_state`` and the seed of torch's CPU generator for
        the network's initialisation (set inside ``torch.random.fork_rng``, so the global
        state is restored afterwards).
    hidden_dims, n_iters, patience, M : passed to ``LassoNetClassifier``; full-batch training
        (``batch_size=None``), no dropout, 10 % validation split, the package's optimisers
        (Adam 1e-3 for the dense model, SGD 1e-3 with momentum 0.9 along the path).
    lambda_start, warmup_multiplier, path_multiplier : the penalty sequence. It starts at
        ``lambda_start`` and is multiplied by ``warmup_multiplier`` after each step while
        every feature is still selected, then by ``path_multiplier`` once one has left. (The
        package's automatic start takes seconds at p = 10 and minutes at p = 1000, and its
        fine steps below the first departure cost most of the path.)
    device : where to train.

    Returns
    -------
    leave_lambda : float64 ``(p,)``
        The ``lambda`` of the first path step (after the dense model) at which the feature is
        no longer selected; 0 when the dense model already drops it; ``inf`` when it is still
        selected at the end of the path (the path stops when no feature is left, so this
        happens only on a truncated path). Agrees with ``feature_importances_`` except that the
        package gives ``inf`` to features the dense model drops.
    last_norm : float64 ``(p,)``
        ``||theta_j||_2`` (the feature's skip-connection weights) at the last path step where
        it was still selected (0 if never): the tie-break among features leaving together.
    """
    from lassonet import LassoNetClassifier

    dev = select_device(device)
    norms: list[torch.Tensor] = []

    def record(model: LassoNetClassifier, hist: list) -> None:
        norms.append(model.model.skip.weight.detach().norm(dim=0).double().cpu())

    if lambda_start <= 0 or warmup_multiplier <= 1 or path_multiplier <= 1:
        raise ValueError("lambda_start must be positive and the multipliers above 1")
    p = X.shape[1]

    def lambdas_seq() -> Iterator[float]:
        # Advanced by the package after each step, so the model shows what that step selected.
        lam = float(lambda_start)
        while True:
            yield lam
            dense = clf.model is not None and int(clf.model.selected_count()) == p
            lam *= warmup_multiplier if dense else path_multiplier

    clf = LassoNetClassifier(
        hidden_dims=tuple(hidden_dims),
        lambda_seq=lambdas_seq(),
        path_multiplier=path_multiplier,
        n_iters=tuple(n_iters),
        patience=tuple(patience),
        M=M,
        dropout=None,
        batch_size=None,
        val_size=0.1,
        device=dev,
        verbose=0,
        random_state=int(seed) % (2**32),
        torch_seed=None,
    )
    path = _seeded_path(clf, X, y, seed, dev, callback=record)
    selected = torch.stack([h.selected for h in path]).numpy().astype(bool)  # (steps, p)
    lambdas = np.array([h.lambda_ for h in path], dtype=np.float64)
    leave = np.full(p, np.inf)
    last_norm = np.zeros(p)
    stack = torch.stack(norms).numpy()  # (steps, p), aligned with path
    for j in range(p):
        out = np.flatnonzero(~selected[:, j])
        if out.size:
            leave[j] = lambdas[out[0]] if out[0] > 0 else 0.0
        kept = np.flatnonzero(selected[:, j])
        if kept.size:
            last_norm[j] = stack[kept[-1], j]
    return leave, last_norm


_LASSONET = "Lemhadri, Ruan, Abraham & Tibshirani 2021 (JMLR); lassonet package"
_LASSONET_PARAMS = {
    "hidden_dims": (16,),
    "lambda_start": 0.1,
    "warmup_multiplier": 2.0,
    "path_multiplier": 1.1,
    "n_iters": (300, 50),
    "patience": (30, 5),
    "M": 10.0,
}


@register_method(
    "lassonet",
    description="LassoNet (lassonet package), 16 hidden units; score = λ at which a feature leaves the path "
    "(never leaving: above the largest; ties broken by the skip weight norm)",
    reference=_LASSONET,
    default=False,
    accelerated=True,
    params=_LASSONET_PARAMS,
)
def lassonet_method(
    data: FoldData,
    models: SharedModels,
    rng: np.random.Generator,
    *,
    hidden_dims: tuple[int, ...],
    lambda_start: float,
    warmup_multiplier: float,
    path_multiplier: float,
    n_iters: tuple[int, int],
    patience: tuple[int, int],
    M: float,
) -> np.ndarray:
    """Finite path scores (:func:`path_scores`) of a LassoNet path on the training part, ``(p,)``."""
    seed = int(rng.integers(0, 2**31 - 1))
    leave, last_norm = fit_lassonet(
        data.X_train,
        data.y_train,
        seed,
        hidden_dims=hidden_dims,
        lambda_start=lambda_start,
        warmup_multiplier=warmup_multiplier,
        path_multiplier=path_multiplier,
        n_iters=n_iters,
        patience=patience,
        M=M,
        device=_device(models),
    )
    return path_scores(leave, last_norm, multiplier=path_multiplier)


_LASSONET_2023_PARAMS = {
    "hidden_dims": (32, 32),
    "n_iters": (30, 30),
    "batch_size": 64,
    "patience": 10,
    "lambda_start": 3.2768,
    "tol": 0.9999,
}


@register_method(
    "lassonet_2023",
    description="LassoNet as the 2023 benchmark ran it: 2×32 hidden units, mini-batches of 64, λ from 3.2768 "
    "(×1.02), 30 epochs a step; score = the package's feature_importances_ (inf made finite, above the rest)",
    reference=f"{_LASSONET}; {AS_RUN_2023}",
    default=False,
    accelerated=True,
    params=_LASSONET_2023_PARAMS,
)
def lassonet_2023(
    data: FoldData,
    models: SharedModels,
    rng: np.random.Generator,
    *,
    hidden_dims: tuple[int, ...],
    n_iters: tuple[int, int],
    batch_size: int,
    patience: int,
    lambda_start: float,
    tol: float,
) -> np.ndarray:
    """``LassoNetClassifier(...).path(X_train, y_train)``'s ``feature_importances_``, shape ``(p,)``, computed for
    every fold of the setting as one batch (:func:`~synthbench.methods.lassonet_path.lassonet_paths`, each fold's
    path the package's to the bit; :meth:`~synthbench.models.SharedModels.method_folds`).

    The package's importance is the ``lambda`` at which a feature leaves the path, and ``inf``
    for a feature that never leaves *or that the dense model already dropped* (the package's
    quirk, kept as the 2023 benchmark had it). ``inf`` becomes a finite value above every other
    (:func:`path_scores` with no tie-break); equal values are tied and the scorer orders them at random.
    """
    config = LassoNetPath(
        hidden_dims=tuple(hidden_dims),
        lambda_start=lambda_start,
        batch_size=batch_size,
        n_iters=tuple(n_iters),  # type: ignore[arg-type]
        patience=(patience, patience),
        tol=tol,
    )
    dev = _device(models)

    def paths(folds: Sequence[FoldData], rngs: Sequence[np.random.Generator]) -> list[np.ndarray]:
        seeds = [lassonet_seed(r) for r in rngs]
        with cpu_threads(dev):
            return lassonet_paths([f.X_train for f in folds], [f.y_train for f in folds], seeds, config, dev)

    tag = ("lassonet_2023", _PATH_VERSION, dataclasses.astuple(config), str(dev))
    importance = models.method_folds(data, rng, "lassonet_2023", tag, paths)
    return path_scores(importance, np.zeros_like(importance))


def lassonet_seed(rng: np.random.Generator) -> int:
    """The seed of a LassoNet path (its validation split and generator) drawn from a method's stream."""
    return int(rng.integers(0, 2**31 - 1))


#: Changes when :func:`~synthbench.methods.lassonet_path.lassonet_paths` computes other paths (part of the key of
#: the paths stored for a setting's folds).
_PATH_VERSION = 1
