"""The concrete autoencoder and FSNet as the 2023 benchmark ran them (``src/core.py`` and
``src/fsnet.py`` at commit 06afd2e), for the faithful ``passemiers2023`` suite.

Both are told the dataset's true number ``k`` of relevant features, as the paper's code passed
it; synthbench's own ``concrete_autoencoder`` and ``fsnet`` do not know it.

``concrete_autoencoder_2023``
    The ``concrete_autoencoder`` package's keras selector (Abid et al. 2019) as the paper called
    it, written again in torch. Two independent runs: ``K = k`` neurons for 300 epochs, whose
    selections are the method's ``scores``, and ``K = 2k`` for 30 epochs, whose selections are
    its ``scores_2k`` (only ``best_2k`` reads those; the paper scored its 2k run alone).

    * Selector: logits ``(K, p)`` drawn from keras' ``glorot_normal`` (a normal of standard
      deviation ``sqrt(2 / (K + p))`` truncated at two of its own deviations and rescaled to
      that variance). In training, step ``s`` outputs ``x @ softmax((logits + g) / T_s).T`` with
      Gumbel noise ``g`` (one draw of shape ``(K, p)`` per step, from ``U(1e-7, 1)``) and
      ``T_s = max(T_min, T_0 alpha^(s+1))``, ``alpha = (T_min / T_0)^(1 / (epochs * steps))``,
      ``T_0 = 10``, ``T_min = 0.01``.
    * Output function: ``GaussianNoise(0.1) -> Dense(32) -> Dropout(0.2) -> LeakyReLU(0.2) ->
      Dense(32) -> Dropout(0.2) -> LeakyReLU(0.2) -> Dense(1, sigmoid)``, Glorot-uniform weights
      and zero biases (keras' defaults).
    * Loss: mean squared error between the sigmoid output and ``y``. Adam at ``1e-4`` (keras'
      ``beta`` 0.9 / 0.999 and ``epsilon`` 1e-7), batches of ``max(n // 256, 16)`` in a fresh
      order each epoch, every epoch run (the package's stopper has infinite patience and the
      paper's ``tryout_limit = 1`` allows no retry).
    * Scores: 1 for each feature that some neuron's logit argmax selects, 0 elsewhere.
      Duplicate selections collapse, so fewer than ``K`` features may be marked; the scorer then
      breaks the ties among the unmarked ones at random, as the paper's ``argsort`` broke them by
      column position after its random column shuffle.

``fsnet_2023``
    The paper's own FSNet: one run with ``K = min(2k, p)`` neurons.

    * Histogram matrix ``U`` ``(p, 30)``: for each column, the 30-bin ``np.histogram`` counts
      times the bin centres, then standardised over all entries at once.
    * Selector logits ``(p, K) = U @ W_s`` and reconstruction weights ``(K, p) = W_r @ U.T``, with
      ``W_s`` ``(30, K)`` and ``W_r`` ``(K, 30)`` Xavier-uniform and no bias (linear weight
      predictors). In training ``M = softmax((logits + g) / tau, dim=0)`` over the features, with
      Gumbel noise from ``U(1e-5, 1 - 1e-5)`` drawn per batch, the selection is ``x @ M``, and
      ``tau = 10 (0.01 / 10)^((e + 1) / 2000)`` in epoch ``e``.
    * Classifier: the 2023 MLP (the ``passemiers2023`` preset's network: noise 0.1, 2×16
      LeakyReLU(0.2)) on the ``K`` selected values; its encoder and decoder were identities.
    * Loss: binary cross-entropy on the classifier's logit plus ``10 * mean((x - x @ M @ W_r @
      U.T)^2)``; Adam at 5e-3 with weight decay 1e-6, ReduceLROnPlateau as the 2023 loop (on the
      epoch's summed loss), batches of 64 over every training row, 2000 epochs, no early stopping.
    * Scores: each feature's softmax probability averaged over the neurons,
      ``softmax(logits, dim=0).mean(axis=1)``, for both best-k and best-2k.

Every random draw (initialisation, batch order, Gumbel noise, input noise, dropout) comes from
torch generators seeded from the method's ``rng``; one CPU thread, so a seed gives bit-identical
scores on one machine.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from synthbench.methods.registry import AS_RUN_2023, register_method
from synthbench.methods.selectors import seeded_generators, selector_config
from synthbench.models import SharedModels
from synthbench.models.device import cpu_threads, select_device
from synthbench.models.layers import GaussianNoise, SeededDropout
from synthbench.models.loop import fit_network
from synthbench.models.mlp import build_seeded_mlp
from synthbench.models.presets import mlp_config
from synthbench.protocol import FoldData, MethodOutput

__all__ = [
    "cae_batch_size",
    "cae_temperatures",
    "fit_cae_2023",
    "histogram_matrix_2023",
    "fsnet_temperature",
    "fit_fsnet_2023",
]

#: The paper's concrete-autoencoder runs: (neurons as a multiple of k, epochs).
CAE_RUNS = ((1, 300), (2, 30))


def _gumbel(
    shape: tuple[int, ...], low: float, generator: torch.Generator | None, device: torch.device
) -> torch.Tensor:
    """Gumbel noise ``-log(-log(u))``, ``u ~ U(low, 1 - low)``: the paper's FSNet drew from ``U(1e-5, 1 - 1e-5)``;
    keras' ``U(1e-7, 1)`` is taken as ``low = 1e-7`` (the upper ends differ by 1e-7)."""
    u = low + (1.0 - 2.0 * low) * torch.rand(shape, generator=generator, device=device)
    return -torch.log(-torch.log(u))


class _Gumbel2023(nn.Module):
    """What the 2023 selectors share: a temperature, and the generator of their Gumbel draws during training."""

    temperature: float
    gumbel_generator: torch.Generator | None


_Net = TypeVar("_Net", bound=_Gumbel2023)


def _fit_2023(
    build: Callable[[torch.Generator], _Net],
    X: np.ndarray,
    y: np.ndarray,
    loss: Callable[[_Net, torch.Tensor, torch.Tensor, int], torch.Tensor],
    *,
    rng: np.random.Generator,
    device: torch.device | str,
    **training: Any,
) -> _Net:
    """Build a network from a CPU generator seeded from ``rng``, train it on ``(X, y)`` with
    :func:`~synthbench.models.loop.fit_network` (``training``: the keywords of
    :func:`~synthbench.methods.selectors.selector_config`) and return it.

    ``loss(net, x_batch, y_batch, step)`` gives a batch's loss (``y`` as int64 labels). The Gumbel
    draws, input noise, dropout and batch order come from the run's device generator.
    """
    dev = select_device(device)
    cpu_gen, dev_gen = seeded_generators(rng, dev)
    net = build(cpu_gen).to(dev)
    net.gumbel_generator = dev_gen
    try:
        with cpu_threads(dev):
            fit_network(net, X, y, config=selector_config(**training), loss=loss, generator=cpu_gen, device=dev)
    finally:
        net.gumbel_generator = None
    return net


# --------------------------------------------------------------------------- concrete autoencoder


def cae_batch_size(n_rows: int) -> int:
    """The package's default batch size, ``max(n // 256, 16)``."""
    return max(n_rows // 256, 16)


def cae_temperatures(n_steps: int, start: float = 10.0, end: float = 0.01) -> np.ndarray:
    """The package's per-step temperatures ``max(end, start * alpha^(s+1))``, shape (n_steps,),
    ``alpha = (end / start)^(1 / n_steps)``: the first step already uses ``start * alpha`` and
    the last ``end`` (up to rounding)."""
    if n_steps < 1 or start <= 0 or end <= 0:
        raise ValueError("n_steps must be positive and the temperatures > 0")
    alpha = math.exp(math.log(end / start) / n_steps)
    return np.maximum(end, start * alpha ** np.arange(1, n_steps + 1))


class _CAE2023(_Gumbel2023):
    """Concrete selector ``(K, p)`` plus the paper's keras output function; ``forward`` gives the sigmoid output
    (b,)."""

    def __init__(self, p: int, n_neurons: int, generator: torch.Generator) -> None:
        super().__init__()
        std = math.sqrt(2.0 / (n_neurons + p))
        logits = torch.empty(n_neurons, p)
        nn.init.trunc_normal_(logits, std=1.0, a=-2.0, b=2.0, generator=generator)
        self.logits = nn.Parameter(logits * (std / 0.87962566103423978))  # keras' glorot_normal
        dense = [torch.nn.utils.skip_init(nn.Linear, a, b) for a, b in ((n_neurons, 32), (32, 32), (32, 1))]
        with torch.no_grad():
            for layer in dense:
                nn.init.xavier_uniform_(layer.weight, generator=generator)
                nn.init.zeros_(layer.bias)
        self.head = nn.Sequential(
            GaussianNoise(0.1),
            dense[0],
            SeededDropout(0.2),
            nn.LeakyReLU(0.2),
            dense[1],
            SeededDropout(0.2),
            nn.LeakyReLU(0.2),
            dense[2],
        )
        self.temperature = 10.0
        self.gumbel_generator: torch.Generator | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            g = _gumbel(tuple(self.logits.shape), 1e-7, self.gumbel_generator, x.device)
            weights = torch.softmax((self.logits + g) / self.temperature, dim=1)
        else:
            weights = F.one_hot(self.logits.argmax(dim=1), self.logits.shape[1]).to(x.dtype)
        return torch.sigmoid(self.head(x @ weights.T)).reshape(-1)


def fit_cae_2023(
    X: np.ndarray,
    y: np.ndarray,
    n_neurons: int,
    *,
    epochs: int,
    rng: np.random.Generator,
    device: torch.device | str = "cpu",
    lr: float = 1e-4,
) -> np.ndarray:
    """One run of the paper's concrete autoencoder; the selected column of each neuron, int64 (n_neurons,).

    Parameters
    ----------
    X : float32 (n, p);  y : int (n,) in ``{0, 1}``
    n_neurons : ``K >= 1`` (``K > p`` is allowed; neurons may coincide)
    epochs : every one is run;  rng : seeds the torch generators;  lr : Adam's step size
    """
    if n_neurons < 1:
        raise ValueError(f"n_neurons must be positive, got {n_neurons}")
    n, p = X.shape
    bs = cae_batch_size(n)
    temps = cae_temperatures(epochs * math.ceil(n / bs)).tolist()

    def loss(net: _CAE2023, xb: torch.Tensor, yb: torch.Tensor, step: int) -> torch.Tensor:
        net.temperature = temps[step]
        return F.mse_loss(net(xb), yb.to(xb.dtype))

    net = _fit_2023(
        lambda g: _CAE2023(p, n_neurons, g),
        X,
        y,
        loss,
        rng=rng,
        device=device,
        epochs=epochs,
        batch_size=bs,
        lr=lr,
        eps=1e-7,
    )
    return net.logits.detach().argmax(dim=1).cpu().numpy().astype(np.int64)


def _true_k(data: FoldData) -> int:
    k = 0 if data.relevant is None else int(np.count_nonzero(data.relevant))
    if k < 1:
        raise ValueError("the 2023 selectors are told the true k, and this dataset has no relevant feature")
    return k


def _indicator(selected: np.ndarray, p: int) -> np.ndarray:
    out = np.zeros(p)
    out[selected] = 1.0
    return out


@register_method(
    "concrete_autoencoder_2023",
    description="the 2023 benchmark's keras concrete autoencoder: told the true k, a k-run (300 epochs) for best-k "
    "and a separate 2k-run (30 epochs) for best-2k, lr 1e-4, batches max(n//256,16), MSE on a sigmoid head",
    reference=f"Abid, Balin & Zou 2019 (ICML); {AS_RUN_2023}",
    default=False,
    accelerated=True,
)
def concrete_autoencoder_2023(data: FoldData, models: SharedModels, rng: np.random.Generator) -> MethodOutput:
    """Selection indicators of the k-run (``scores``) and the 2k-run (``scores_2k``), each (p,); see the module
    docstring."""
    k, p = _true_k(data), data.n_features
    device = select_device(models.settings.device)
    runs = [
        fit_cae_2023(data.X_train, data.y_train, factor * k, epochs=epochs, rng=rng, device=device)
        for factor, epochs in CAE_RUNS
    ]
    return MethodOutput(_indicator(runs[0], p), scores_2k=_indicator(runs[1], p))


# --------------------------------------------------------------------------- FSNet


def histogram_matrix_2023(X: np.ndarray, n_bins: int = 30) -> np.ndarray:
    """FSNet's ``U`` (float32, (p, n_bins)): per column, ``np.histogram`` counts times bin centres,
    then standardised over all entries together (a constant matrix stays 0)."""
    X = np.asarray(X, dtype=np.float64)
    U = np.empty((X.shape[1], n_bins))
    for j in range(X.shape[1]):
        counts, edges = np.histogram(X[:, j], n_bins)
        U[j] = counts * 0.5 * (edges[:-1] + edges[1:])
    U -= U.mean()
    sd = U.std()
    return (U / sd if sd > 0 else U).astype(np.float32)


def fsnet_temperature(epoch: int, epochs: int, start: float = 10.0, end: float = 0.01) -> float:
    """``start (end / start)^((epoch + 1) / epochs)``: the temperature of 0-based ``epoch``."""
    return start * (end / start) ** ((epoch + 1) / epochs)


class _FSNet2023(_Gumbel2023):
    """Linear weight predictors on ``U`` plus the 2023 classifier; ``forward`` gives (logit (b,), reconstruction (b,
    p))."""

    U: torch.Tensor  # a buffer

    def __init__(self, U: torch.Tensor, n_neurons: int, classifier: nn.Module, generator: torch.Generator) -> None:
        super().__init__()
        n_bins = U.shape[1]
        self.register_buffer("U", U)
        self.selector_weight = nn.Parameter(torch.empty(n_bins, n_neurons))
        self.reconstruction_weight = nn.Parameter(torch.empty(n_neurons, n_bins))
        with torch.no_grad():
            nn.init.xavier_uniform_(self.selector_weight, generator=generator)
            nn.init.xavier_uniform_(self.reconstruction_weight, generator=generator)
        self.classifier = classifier
        self.temperature = 10.0
        self.gumbel_generator: torch.Generator | None = None

    def logits(self) -> torch.Tensor:
        """Selector logits, shape (p, K)."""
        return self.U @ self.selector_weight

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.logits()
        g = _gumbel(tuple(logits.shape), 1e-5, self.gumbel_generator, x.device)
        selected = x @ torch.softmax((logits + g) / self.temperature, dim=0)  # (b, K)
        recon = selected @ (self.reconstruction_weight @ self.U.T)  # (b, p)
        return self.classifier(selected).reshape(-1), recon

    def importances(self) -> np.ndarray:
        """``softmax(logits, dim=0).mean(axis=1)``, float64 (p,)."""
        with torch.no_grad():
            return torch.softmax(self.logits().double(), dim=0).mean(dim=1).cpu().numpy()


def fit_fsnet_2023(
    X: np.ndarray,
    y: np.ndarray,
    n_neurons: int,
    *,
    rng: np.random.Generator,
    device: torch.device | str = "cpu",
    epochs: int = 2000,
) -> np.ndarray:
    """One run of the paper's FSNet; its importances, float64 (p,) (see the module docstring)."""
    if n_neurons < 1:
        raise ValueError(f"n_neurons must be positive, got {n_neurons}")
    steps_per_epoch = math.ceil(X.shape[0] / 64)

    def build(g: torch.Generator) -> _FSNet2023:
        mlp = build_seeded_mlp(n_neurons, mlp_config("passemiers2023"), g)  # the 2023 MLP as classifier
        return _FSNet2023(torch.as_tensor(histogram_matrix_2023(X)), n_neurons, mlp, g)

    def loss(net: _FSNet2023, xb: torch.Tensor, yb: torch.Tensor, step: int) -> torch.Tensor:
        net.temperature = fsnet_temperature(step // steps_per_epoch, epochs)
        logit, recon = net(xb)
        return F.binary_cross_entropy_with_logits(logit, yb.to(logit.dtype)) + 10.0 * F.mse_loss(recon, xb)

    net = _fit_2023(
        build,
        X,
        y,
        loss,
        rng=rng,
        device=device,
        epochs=epochs,
        batch_size=64,
        lr=5e-3,
        weight_decay=1e-6,
        plateau=True,
    )
    return net.importances()


@register_method(
    "fsnet_2023",
    description="the 2023 benchmark's FSNet: told the true k, one run of min(2k, p) neurons, linear weight "
    "predictors on 30-bin histograms, reconstruction weighted 10, 2000 epochs, mean softmax importances",
    reference=f"Singh et al. 2023 (IJCNN; arXiv:2001.08322); {AS_RUN_2023}",
    default=False,
    accelerated=True,
)
def fsnet_2023(data: FoldData, models: SharedModels, rng: np.random.Generator) -> np.ndarray:
    """Mean selection probabilities, shape (p,), non-negative; see the module docstring."""
    k, p = _true_k(data), data.n_features
    return fit_fsnet_2023(
        data.X_train, data.y_train, min(2 * k, p), rng=rng, device=select_device(models.settings.device)
    )
