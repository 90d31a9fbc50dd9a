"""Embedded neural feature selectors: concrete autoencoder, FsNet and DeepPINK.

Each method trains its own small PyTorch network on ``data.X_train`` (float32, ``(n, p)``) and
``data.y_train`` (int64 in ``{0, 1}``) and returns one finite, non-negative importance per
feature, shape ``(p,)``, higher = more important. None uses the shared models.

Concrete selectors (``concrete_autoencoder``, ``fsnet``)
    ``k`` selector neurons, each holding logits over the ``p`` inputs; in training a neuron
    outputs ``x @ softmax((logits + g) / T)`` with Gumbel noise ``g`` (one draw per neuron and
    mini-batch) and a temperature ``T`` annealed exponentially from ``start_temp`` (10) to
    ``end_temp`` (0.01) over all optimisation steps (:func:`temperature_schedule`). After
    training each neuron selects the argmax of its logits. The method does not know the true
    number of relevant features: it runs once with ``k = min(n_select, p)`` neurons and, when
    ``double_run`` is set, once more with ``min(2 n_select, p)`` (a k- and a 2k-run, as the 2023
    benchmark ran its concrete autoencoder, here read from one ranking so that both best-k and
    best-2k come from it; the 2023 FSNet ran once, with ``min(2k, p)`` neurons). The ranking (see
    :func:`tiered_importance`): features chosen by the k-run first, then those added by the
    2k-run, then the rest; ties within a tier are broken by the largest final softmax
    probability any neuron of either run gives the feature.

    ``concrete_autoencoder`` (Abid et al. 2019): the selector is followed by a head. In the
    2023 quantitative benchmark (Passemiers et al.) the CAE's output function was a classifier
    fitted on ``(X, y)``, i.e. the supervised variant; that is the default here
    (``target="y"``: MLP ``k -> 32 -> 32 -> 1``, binary cross-entropy). ``target="X"`` is the
    classic unsupervised CAE (decoder ``k -> 32 -> p``, mean squared reconstruction error) and
    ``target="both"`` sums the two losses.

    ``fsnet`` (Singh et al. 2023): the selector logits are not free parameters but the
    output of a weight-predictor MLP applied to each feature's histogram embedding
    (``n_bins`` bins over the column's training range, frequencies, standardised across
    features); a second weight predictor gives the decoder's output weights per feature. The
    loss is the classification cross-entropy plus ``reconstruction_weight`` times the mean
    squared reconstruction error of ``X`` from the selected features.

``deeppink`` (Lu et al. 2018)
    Inputs ``[X, X_tilde]`` with knockoffs from :mod:`synthbench.selection.knockoffs`; a
    pairwise-coupling filter ``f_j = z_j x_j + zt_j xt_j``; an MLP ``p -> width -> width -> 1``
    with an L1 penalty ``l1 * sum |W0|`` on its first dense layer. With ``w = (W2 W1 W0)^T``
    (p,), ``Z_j = z_j w_j`` and ``Zt_j = zt_j w_j``, the knockoff statistic is ``W_j = Z_j^2 -
    Zt_j^2``. The benchmark's scorers rank by ``|score|``, so the importance is the monotone
    shift ``W - min(W)`` (as the 2023 benchmark did): the most positive ``W_j`` ranks first and
    a strongly negative ``W_j`` (knockoff preferred) ranks last.

Training (all three): the benchmark's one loop,
:func:`~synthbench.models.loop.fit_network`, configured by :func:`selector_config`: Adam,
mini-batches of ``batch_size`` in a fresh random order each epoch, a fixed number of epochs (the
annealing schedule needs one; no early stopping), every random draw from torch generators seeded
from the method's ``rng``; one CPU thread, so a seed gives bit-identical scores on one machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from synthbench.methods.registry import register_method
from synthbench.models import SharedModels
from synthbench.models.device import cpu_threads, select_device
from synthbench.models.loop import TrainConfig, fit_network
from synthbench.protocol import FoldData
from synthbench.selection.knockoffs import make_knockoffs

__all__ = [
    "temperature_schedule",
    "gumbel_softmax_weights",
    "tiered_importance",
    "ConcreteFit",
    "fit_concrete",
    "DeepPinkFit",
    "fit_deeppink",
    "histogram_embedding",
    "seeded_generators",
    "selector_config",
]

HIDDEN = 32


# --------------------------------------------------------------------------- shared pieces


def temperature_schedule(n_steps: int, start: float = 10.0, end: float = 0.01) -> np.ndarray:
    """Exponentially annealed temperatures, one per optimisation step.

    Parameters
    ----------
    n_steps : int, at least 1
    start, end : positive floats

    Returns
    -------
    ndarray of float64, shape (n_steps,)
        ``start * (end / start) ** (t / (n_steps - 1))`` for ``t = 0 .. n_steps - 1``: the
        first entry is ``start``, the last ``end`` (a single step uses ``start``).
    """
    if n_steps < 1 or start <= 0 or end <= 0:
        raise ValueError("n_steps must be positive and the temperatures > 0")
    if n_steps == 1:
        return np.array([float(start)])
    t = np.arange(n_steps) / (n_steps - 1)
    out = start * (end / start) ** t
    out[-1] = end
    return out


def gumbel_softmax_weights(
    logits: torch.Tensor, temperature: float, generator: torch.Generator | None, *, hard: bool = False
) -> torch.Tensor:
    """Concrete (Gumbel-softmax) selection weights.

    Parameters
    ----------
    logits : tensor of shape (k, p), one row per selector neuron
    temperature : positive float
    generator : torch generator for the Gumbel noise (on the logits' device)
    hard : if True, return the one-hot argmax of each row (no noise)

    Returns
    -------
    tensor of shape (k, p); each row sums to 1.
    """
    if hard:
        return F.one_hot(logits.argmax(dim=1), logits.shape[1]).to(logits.dtype)
    u = torch.rand(logits.shape, generator=generator, device=logits.device, dtype=logits.dtype)
    gumbel = -torch.log((-torch.log(u.clamp_min(1e-10))).clamp_min(1e-10))
    return torch.softmax((logits + gumbel) / temperature, dim=1)


def tiered_importance(probs_k: np.ndarray, probs_2k: np.ndarray | None = None) -> np.ndarray:
    """Importances from a k-run and an optional 2k-run of a concrete selector.

    Parameters
    ----------
    probs_k : ndarray of shape (k, p)
        Final softmax probabilities of each selector neuron of the k-run.
    probs_2k : ndarray of shape (k2, p), optional
        The same for the 2k-run.

    Returns
    -------
    ndarray of float64, shape (p,), non-negative
        ``2 * tier + m`` where ``tier`` is 2 for features some neuron of the k-run selects
        (argmax), 1 for features only the 2k-run selects, 0 otherwise, and ``m`` in ``[0, 1]``
        is the largest probability any neuron of either run gives the feature. Tiers never
        overlap, so the k-run's choices come first, then the 2k-run's additions, then the
        rest by ``m``.
    """
    p = probs_k.shape[1]
    tier = np.zeros(p)
    m = probs_k.max(axis=0)
    if probs_2k is not None:
        tier[np.unique(probs_2k.argmax(axis=1))] = 1.0
        m = np.maximum(m, probs_2k.max(axis=0))
    tier[np.unique(probs_k.argmax(axis=1))] = 2.0
    return 2.0 * tier + m


def seeded_generators(rng: np.random.Generator, device: torch.device) -> tuple[torch.Generator, torch.Generator]:
    """A CPU generator (initialisation) and one on ``device`` (noise, batch order), both from ``rng``."""
    seeds = rng.integers(0, 2**62, size=2)
    cpu = torch.Generator(device="cpu").manual_seed(int(seeds[0]))
    dev = cpu if device.type == "cpu" else torch.Generator(device=device).manual_seed(int(seeds[1]))
    return cpu, dev


def _init_linear(layer: nn.Linear, generator: torch.Generator) -> nn.Linear:
    """Kaiming-uniform weights (leaky ReLU, a = 0) and zero bias, from ``generator``."""
    with torch.no_grad():
        nn.init.kaiming_uniform_(layer.weight, nonlinearity="leaky_relu", generator=generator)
        nn.init.zeros_(layer.bias)
    return layer


def _linear(n_in: int, n_out: int, generator: torch.Generator) -> nn.Linear:
    """An ``nn.Linear`` initialised from ``generator`` without touching torch's global generator."""
    return _init_linear(torch.nn.utils.skip_init(nn.Linear, n_in, n_out), generator)


def _mlp(n_in: int, n_out: int, generator: torch.Generator, width: int = HIDDEN, depth: int = 2) -> nn.Sequential:
    """``n_in -> width (x depth, LeakyReLU 0.2) -> n_out``."""
    layers: list[nn.Module] = []
    fan_in = n_in
    for _ in range(depth):
        layers += [_linear(fan_in, width, generator), nn.LeakyReLU(0.2)]
        fan_in = width
    layers.append(_linear(fan_in, n_out, generator))
    return nn.Sequential(*layers)


def selector_config(
    *, epochs: int, batch_size: int, lr: float, eps: float = 1e-8, weight_decay: float = 0.0, plateau: bool = False
) -> TrainConfig:
    """How the selectors train in :func:`~synthbench.models.loop.fit_network`: ``epochs`` passes
    over every row in random mini-batches (no held-out rows, no early stopping: the annealing
    schedules need a fixed number of steps), Adam with ``lr``, ``eps`` and ``weight_decay``
    and ``plateau``: the 2023 schedule (``lr_schedule="plateau2023"`` of
    :class:`~synthbench.models.loop.TrainConfig`) stepped on each epoch's summed loss. The last weights are kept."""
    if epochs < 1 or batch_size < 1:
        raise ValueError("epochs and batch_size must be positive")
    return TrainConfig(
        lr=lr,
        weight_decay=weight_decay,
        adam_eps=eps,
        batch_size=batch_size,
        max_epochs=epochs,
        validation="none",
        restore="last",
        lr_schedule="plateau2023" if plateau else "constant",
    )


def n_steps(n_rows: int, epochs: int, batch_size: int) -> int:
    """Optimisation steps of a :func:`selector_config` run: ``epochs * ceil(n_rows / batch_size)``."""
    return int(epochs) * math.ceil(n_rows / batch_size)


# --------------------------------------------------------------------------- concrete selectors


def histogram_embedding(X: np.ndarray, n_bins: int = 20) -> np.ndarray:
    """FsNet's per-feature histogram embedding.

    Parameters
    ----------
    X : ndarray of shape (n, p)
    n_bins : bins over each column's own ``[min, max]`` range

    Returns
    -------
    ndarray of float32, shape (p, n_bins)
        Bin frequencies (rows sum to 1 before standardisation), then each bin standardised
        across features (zero mean, unit variance; a constant bin becomes 0).
    """
    X = np.asarray(X, dtype=np.float64)
    n, p = X.shape
    lo, hi = X.min(axis=0), X.max(axis=0)
    width = np.where(hi > lo, hi - lo, 1.0)
    bins = np.clip(((X - lo) / width * n_bins).astype(np.int64), 0, n_bins - 1)  # (n, p)
    hist = np.zeros((p, n_bins))
    np.add.at(hist, (np.broadcast_to(np.arange(p), (n, p)), bins), 1.0)
    hist /= max(n, 1)
    sd = hist.std(axis=0)
    emb = (hist - hist.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    return emb.astype(np.float32)


class _ConcreteNet(nn.Module):
    """Concrete selector (free logits, or predicted from histograms for FsNet) plus heads."""

    def __init__(
        self,
        p: int,
        k: int,
        generator: torch.Generator,
        *,
        predict_y: bool,
        reconstruct: bool,
        embedding: torch.Tensor | None,
    ) -> None:
        super().__init__()
        self.p, self.k = p, k
        if embedding is None:  # concrete autoencoder: free logits, Glorot-normal scale
            std = math.sqrt(2.0 / (k + p))
            self.logits_param: nn.Parameter | None = nn.Parameter(torch.randn((k, p), generator=generator) * std)
            self.weight_predictor: nn.Sequential | None = None
        else:  # FsNet: logits (k, p) = WP(histograms (p, bins)).T
            self.register_buffer("embedding", embedding)
            self.logits_param = None
            self.weight_predictor = _mlp(embedding.shape[1], k, generator, depth=1)
        self.classifier = _mlp(k, 1, generator) if predict_y else None
        if reconstruct:
            self.decoder_hidden: nn.Sequential | None = nn.Sequential(_linear(k, HIDDEN, generator), nn.LeakyReLU(0.2))
            if embedding is None:
                self.decoder_out: nn.Module | None = _linear(HIDDEN, p, generator)
                self.decoder_predictor: nn.Sequential | None = None
            else:  # FsNet predicts the decoder's output weights (p, HIDDEN) per feature too
                self.decoder_out = None
                self.decoder_predictor = _mlp(embedding.shape[1], HIDDEN, generator, depth=1)
                self.decoder_bias = nn.Parameter(torch.zeros(p))
        else:
            self.decoder_hidden = None

    def logits(self) -> torch.Tensor:
        """Selector logits, shape (k, p)."""
        if self.weight_predictor is not None:
            return self.weight_predictor(self.embedding).T
        assert self.logits_param is not None  # a concrete autoencoder's (no weight predictor)
        return self.logits_param

    def forward(
        self, x: torch.Tensor, temperature: float, generator: torch.Generator | None, hard: bool = False
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """``x`` (b, p) -> (logit of y (b,) or None, reconstruction (b, p) or None)."""
        weights = gumbel_softmax_weights(self.logits(), temperature, generator, hard=hard)  # (k, p)
        selected = x @ weights.T  # (b, k)
        y_logit = self.classifier(selected).reshape(-1) if self.classifier is not None else None
        recon = None
        if self.decoder_hidden is not None:
            h = self.decoder_hidden(selected)
            if self.decoder_out is not None:
                recon = self.decoder_out(h)
            elif self.decoder_predictor is not None:  # FsNet's
                recon = h @ self.decoder_predictor(self.embedding).T + self.decoder_bias
        return y_logit, recon


@dataclass(frozen=True)
class ConcreteFit:
    """A trained concrete selector.

    Attributes
    ----------
    probs : ndarray of float64, shape (k, p); final softmax probabilities per neuron
    selected : ndarray of int64, shape (k,); argmax feature of each neuron (may repeat)
    temperatures : ndarray of float64, shape (n_steps,); the schedule used
    """

    probs: np.ndarray
    selected: np.ndarray
    temperatures: np.ndarray


def fit_concrete(
    X: np.ndarray,
    y: np.ndarray,
    k: int,
    *,
    kind: Literal["cae", "fsnet"] = "cae",
    target: Literal["y", "X", "both"] = "y",
    reconstruction_weight: float = 1.0,
    n_bins: int = 20,
    epochs: int = 100,
    batch_size: int = 64,
    lr: float = 3e-3,
    start_temp: float = 10.0,
    end_temp: float = 0.01,
    rng: np.random.Generator,
    device: torch.device | str = "cpu",
) -> ConcreteFit:
    """Train one concrete selector with ``k`` neurons.

    Parameters
    ----------
    X : ndarray of float32, shape (n, p);  y : ndarray of int, shape (n,), in ``{0, 1}``
    k : number of selector neurons, ``1 <= k`` (``k > p`` is allowed; neurons may coincide)
    kind : ``"cae"`` (free logits; head chosen by ``target``) or ``"fsnet"`` (logits from the
        histogram weight predictor; classifier plus ``reconstruction_weight`` times the
        reconstruction loss; ``target`` is ignored)
    epochs, batch_size, lr : training (:func:`selector_config`)
    start_temp, end_temp : endpoints of :func:`temperature_schedule`
    rng : numpy Generator seeding the torch generators
    device : torch device

    Returns
    -------
    ConcreteFit
    """
    if target not in ("y", "X", "both"):
        raise ValueError(f"target must be 'y', 'X' or 'both', got {target!r}")
    dev = select_device(device)
    cpu_gen, dev_gen = seeded_generators(rng, dev)
    n, p = X.shape
    if kind == "fsnet":
        emb = torch.as_tensor(histogram_embedding(X, n_bins))
        predict_y, reconstruct, rec_w = True, True, float(reconstruction_weight)
    elif kind == "cae":
        emb = None
        predict_y, reconstruct, rec_w = target in ("y", "both"), target in ("X", "both"), 1.0
    else:
        raise ValueError(f"kind must be 'cae' or 'fsnet', got {kind!r}")
    net = _ConcreteNet(p, k, cpu_gen, predict_y=predict_y, reconstruct=reconstruct, embedding=emb).to(dev)
    temps = temperature_schedule(n_steps(n, epochs, batch_size), start_temp, end_temp)

    def step_loss(module: nn.Module, xb: torch.Tensor, yb: torch.Tensor, step: int) -> torch.Tensor:
        y_logit, recon = module(xb, float(temps[step]), dev_gen)
        loss = torch.zeros((), device=dev)
        if y_logit is not None:
            loss = loss + F.binary_cross_entropy_with_logits(y_logit, yb.to(y_logit.dtype))
        if recon is not None:
            loss = loss + rec_w * F.mse_loss(recon, xb)
        return loss

    with cpu_threads(dev):
        fit_network(
            net,
            X,
            y,
            config=selector_config(epochs=epochs, batch_size=batch_size, lr=lr),
            loss=step_loss,
            generator=cpu_gen,
            device=dev,
        )
    with torch.no_grad():
        logits = net.logits().double().cpu()
    probs = torch.softmax(logits, dim=1).numpy()
    return ConcreteFit(probs=probs, selected=probs.argmax(axis=1).astype(np.int64), temperatures=temps)


def _concrete_method(
    data: FoldData,
    models: SharedModels,
    rng: np.random.Generator,
    kind: Literal["cae", "fsnet"],
    n_select: int,
    double_run: bool,
    **params,
) -> np.ndarray:
    p = data.n_features
    if n_select < 1:
        raise ValueError(f"n_select must be positive, got {n_select}")
    k, k2 = min(n_select, p), min(2 * n_select, p)
    device = select_device(models.settings.device)
    first = fit_concrete(data.X_train, data.y_train, k, kind=kind, rng=rng, device=device, **params)
    second = None
    if double_run and k2 > k:
        second = fit_concrete(data.X_train, data.y_train, k2, kind=kind, rng=rng, device=device, **params)
    return tiered_importance(first.probs, None if second is None else second.probs)


_CONCRETE_TRAINING = {"epochs": 100, "batch_size": 64, "lr": 3e-3, "start_temp": 10.0, "end_temp": 0.01}


@register_method(
    "concrete_autoencoder",
    description="concrete autoencoder (Abid et al. 2019), supervised head as in the 2023 benchmark; "
    "k and 2k selector runs, ranked k-run choices, then 2k-run additions, then max probability",
    reference="Abid, Balin & Zou 2019 (ICML)",
    needs=(),
    default=False,
    accelerated=True,
    params={"n_select": 10, "double_run": True, "target": "y", **_CONCRETE_TRAINING},
)
def concrete_autoencoder(data: FoldData, models: SharedModels, rng: np.random.Generator, **params) -> np.ndarray:
    """Concrete autoencoder importances, shape (p,); see the module docstring."""
    return _concrete_method(data, models, rng, "cae", **params)


@register_method(
    "fsnet",
    description="FsNet (Singh et al. 2023): concrete selector with logits from a histogram weight "
    "predictor, classification + reconstruction loss; k and 2k runs ranked as the concrete autoencoder",
    reference="Singh et al. 2023 (IJCNN; arXiv:2001.08322)",
    needs=(),
    default=False,
    accelerated=True,
    params={"n_select": 10, "double_run": True, "n_bins": 20, "reconstruction_weight": 1.0, **_CONCRETE_TRAINING},
)
def fsnet(data: FoldData, models: SharedModels, rng: np.random.Generator, **params) -> np.ndarray:
    """FsNet importances, shape (p,); see the module docstring."""
    return _concrete_method(data, models, rng, "fsnet", **params)


# --------------------------------------------------------------------------- DeepPINK


class _DeepPink(nn.Module):
    """Pairwise-coupling filter over ``[X, X_tilde]`` followed by an MLP ``p -> width -> width -> 1``."""

    def __init__(self, p: int, width: int, generator: torch.Generator) -> None:
        super().__init__()
        self.z = nn.Parameter(torch.ones(p))
        self.z_tilde = nn.Parameter(torch.ones(p))
        self.mlp = _mlp(p, 1, generator, width=width, depth=2)

    def forward(self, x: torch.Tensor, x_tilde: torch.Tensor) -> torch.Tensor:
        """``x``, ``x_tilde`` (b, p) -> logit of ``P(y = 1)`` (b,)."""
        return self.mlp(self.z * x + self.z_tilde * x_tilde).reshape(-1)

    def first_layer(self) -> nn.Linear:
        return cast(nn.Linear, self.mlp[0])

    def statistics(self) -> np.ndarray:
        """Knockoff statistics ``W_j = (z_j w_j)^2 - (zt_j w_j)^2``, shape (p,)."""
        with torch.no_grad():
            w = None
            for layer in self.mlp:
                if isinstance(layer, nn.Linear):
                    w = layer.weight.double() if w is None else layer.weight.double() @ w
            if w is None:
                raise ValueError("the MLP has no Linear layer")
            w = w.reshape(-1)  # (p,): W2 W1 W0
            W = (self.z.double() * w) ** 2 - (self.z_tilde.double() * w) ** 2
        return W.cpu().numpy()


@dataclass(frozen=True)
class DeepPinkFit:
    """A trained DeepPINK network.

    Attributes
    ----------
    statistics : ndarray of float64, shape (p,); ``W_j``, positive favours the original feature
    first_layer : ndarray of float32, shape (width, p); the L1-penalised dense weights
    knockoffs : str; ``"uniform"`` or ``"gaussian"``
    l1 : float; the penalty used
    """

    statistics: np.ndarray
    first_layer: np.ndarray
    knockoffs: str
    l1: float


def fit_deeppink(
    X: np.ndarray,
    y: np.ndarray,
    *,
    X_tilde: np.ndarray | None = None,
    knockoffs: Literal["auto", "uniform", "gaussian"] = "auto",
    l1: float | Literal["auto"] = "auto",
    width: int = HIDDEN,
    epochs: int = 100,
    batch_size: int = 64,
    lr: float = 1e-3,
    rng: np.random.Generator,
    device: torch.device | str = "cpu",
) -> DeepPinkFit:
    """Train DeepPINK on ``X`` (n, p) and its knockoffs.

    Parameters
    ----------
    X : ndarray of float32, shape (n, p);  y : ndarray of int, shape (n,), in ``{0, 1}``
    X_tilde : ndarray of shape (n, p), optional; knockoffs (drawn from ``rng`` with
        :func:`~synthbench.selection.knockoffs.make_knockoffs` of kind ``knockoffs`` when None)
    l1 : L1 penalty on the first dense layer, or ``"auto"`` for ``0.05 * sqrt(2 log p / n)``
        (Lu et al.'s choice)
    width : hidden units of the two hidden layers
    epochs, batch_size, lr : training (:func:`selector_config`)
    rng, device : as for :func:`fit_concrete`

    Returns
    -------
    DeepPinkFit
    """
    n, p = X.shape
    kind_used = "given"
    if X_tilde is None:
        X_tilde, kind_used = make_knockoffs(X, rng, knockoffs)
    lam = 0.05 * math.sqrt(2.0 * math.log(max(p, 2)) / n) if l1 == "auto" else float(l1)
    if lam < 0:
        raise ValueError(f"l1 must be non-negative, got {lam}")
    dev = select_device(device)
    cpu_gen, _ = seeded_generators(rng, dev)
    net = _DeepPink(p, width, cpu_gen).to(dev)
    W0 = net.first_layer().weight

    def step_loss(module: nn.Module, xb: torch.Tensor, yb: torch.Tensor, step: int) -> torch.Tensor:
        logit = module(xb[:, :p], xb[:, p:])  # the batch holds [X, X_tilde]
        loss = F.binary_cross_entropy_with_logits(logit, yb.to(logit.dtype))
        return loss + lam * W0.abs().sum() if lam > 0 else loss

    pairs = np.concatenate([np.asarray(X, dtype=np.float32), np.asarray(X_tilde, dtype=np.float32)], axis=1)
    with cpu_threads(dev):
        fit_network(
            net,
            pairs,
            y,
            config=selector_config(epochs=epochs, batch_size=batch_size, lr=lr),
            loss=step_loss,
            generator=cpu_gen,
            device=dev,
        )
    return DeepPinkFit(
        statistics=net.statistics(),
        first_layer=W0.detach().cpu().numpy().copy(),
        knockoffs=kind_used,
        l1=lam,
    )


@register_method(
    "deeppink",
    description="DeepPINK (Lu et al. 2018): knockoff pairwise-coupling layer + L1-penalised MLP; "
    "importance W_j - min(W) with W_j = Z_j^2 - Zt_j^2",
    reference="Lu, Fan, Lv & Noble 2018 (NeurIPS)",
    needs=(),
    default=False,
    accelerated=True,
    params={"knockoffs": "auto", "l1": "auto", "width": HIDDEN, "epochs": 100, "batch_size": 64, "lr": 1e-3},
)
def deeppink(data: FoldData, models: SharedModels, rng: np.random.Generator, **params) -> np.ndarray:
    """DeepPINK importances ``W - min(W)``, shape (p,), non-negative; see the module docstring."""
    device = select_device(models.settings.device)
    fit = fit_deeppink(data.X_train, data.y_train, rng=rng, device=device, **params)
    W = fit.statistics
    return W - W.min()
