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
scores on one machine. Both train the folds of a setting as one batch
(:meth:`~synthbench.models.SharedModels.method_folds`): each network is a
:class:`~synthbench.models.stacked.StackedNetwork`, so one forward and backward pass computes every fold's step,
each fold from its own stream and on its own rows, as it would alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
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
from synthbench.models.loop import Member, fit_networks
from synthbench.models.mlp import build_seeded_mlp
from synthbench.models.presets import mlp_config
from synthbench.models.stacked import Draw, StackedBatch, StackedNetwork, stacked_forward, sub_params
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

#: Changes when the 2023 selectors compute other values for the same folds (part of the key of the parts stored
#: for a setting's folds).
_BATCH_VERSION = 1


def _gumbel(u: torch.Tensor, low: float) -> torch.Tensor:
    """Gumbel noise ``-log(-log(v))`` from uniform draws ``u`` on ``[0, 1)``, ``v = low + (1 - 2 low) u``: the
    paper's FSNet drew ``v`` from ``U(1e-5, 1 - 1e-5)``; keras' ``U(1e-7, 1)`` is taken as ``low = 1e-7`` (the
    upper ends differ by 1e-7)."""
    return -torch.log(-torch.log(low + (1.0 - 2.0 * low) * u))


class _Gumbel2023(StackedNetwork):
    """What the 2023 selectors share: a temperature schedule (``schedule(step)``, the temperature of each 0-based
    optimisation step in training), and the temperature and generator of the draws of ``forward`` (the module
    alone)."""

    def __init__(self, schedule: Callable[[int], float]) -> None:
        super().__init__()
        self.schedule = schedule
        self.temperature = 10.0
        self.gumbel_generator: torch.Generator | None = None

    def temperatures(self, steps: Sequence[int], device: torch.device) -> torch.Tensor:
        """The temperature of each member's step: ``(K, 1, 1)``."""
        return torch.tensor([self.schedule(s) for s in steps], device=device)[:, None, None]

    def alone(self, outputs: Callable[..., Any], x: torch.Tensor) -> Any:
        """``outputs`` for this module alone at :attr:`temperature`, drawing from :attr:`gumbel_generator`."""
        t = torch.full((1, 1, 1), self.temperature, device=x.device)
        return self.one(outputs, x, self.gumbel_generator, temperatures=t, training=self.training)


_Net = TypeVar("_Net", bound=_Gumbel2023)


def _fit_2023(
    build: Callable[[torch.Generator, int], _Net],
    Xs: Sequence[np.ndarray],
    ys: Sequence[np.ndarray],
    *,
    rngs: Sequence[np.random.Generator],
    device: torch.device | str,
    **training: Any,
) -> list[_Net]:
    """Build member ``i``'s network (``build(generator, i)``, from a CPU generator seeded from ``rngs[i]``), train
    every member on its ``(Xs[i], ys[i])`` as one batch of :func:`~synthbench.models.loop.fit_networks`
    (``training``: the keywords of :func:`~synthbench.methods.selectors.selector_config`) and return them.

    The Gumbel draws, input noise, dropout and batch order of a member come from its own generator.
    """
    dev = select_device(device)
    members = []
    for i, (X, y, rng) in enumerate(zip(Xs, ys, rngs, strict=True)):
        generator = seeded_generators(rng, dev)[0]
        members.append(Member(build(generator, i).to(dev), X, y, generator))
    with cpu_threads(dev):
        fit_networks(members, config=selector_config(**training), device=dev)
    return [m.module for m in members]  # type: ignore[misc]


def _grouped(keys: Sequence[Any]) -> list[list[int]]:
    """The indices of ``keys`` grouped by equal key, in order of first appearance."""
    groups: dict[Any, list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    return list(groups.values())


def _setting_method(
    data: FoldData,
    models: SharedModels,
    rng: np.random.Generator,
    name: str,
    compute: Callable[[Sequence[FoldData], Sequence[np.random.Generator]], list[Any]],
) -> Any:
    """This fold's result of ``compute(folds, rngs)``, computed for the setting's folds at once
    (:meth:`~synthbench.models.SharedModels.method_folds`)."""
    device = str(select_device(models.settings.device))
    return models.method_folds(data, rng, name, (name, _BATCH_VERSION, device), compute)


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

    def __init__(
        self, p: int, n_neurons: int, generator: torch.Generator, schedule: Callable[[int], float] = lambda _: 10.0
    ) -> None:
        super().__init__(schedule)
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

    def outputs(
        self,
        params: dict[str, torch.Tensor],
        buffers: dict[str, torch.Tensor],
        x: torch.Tensor,
        *,
        draw: Draw | None,
        temperatures: torch.Tensor,
        training: bool,
    ) -> torch.Tensor:
        """The members' sigmoid outputs on ``x`` ``(K, b, p)``: ``(K, b)``; in training the selection is the
        softmax of the logits plus Gumbel noise at ``temperatures`` ``(K, 1, 1)``, otherwise each neuron's argmax
        column."""
        logits = params["logits"]  # (K, n_neurons, p)
        if training:
            assert draw is not None
            g = _gumbel(draw("uniform", tuple(logits.shape[1:]), per_row=False), 1e-7)
            weights = torch.softmax((logits + g) / temperatures, dim=2)
        else:
            weights = F.one_hot(logits.argmax(dim=2), logits.shape[2]).to(x.dtype)
        selected = torch.bmm(x, weights.transpose(1, 2))
        head = stacked_forward(self.head, sub_params(params, "head"), selected, training=training, draw=draw)
        return torch.sigmoid(head)[..., 0]

    def stacked_objective(self, batch: StackedBatch) -> torch.Tensor:
        """The mean squared error between each member's sigmoid output and its labels: ``(K,)``."""
        t = self.temperatures(batch.steps, batch.x.device)
        out = self.outputs(batch.params, batch.buffers, batch.x, draw=batch.draw, temperatures=t, training=True)
        return batch.mean((out - batch.y.to(out.dtype)) ** 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.alone(self.outputs, x)


def fit_cae_2023(
    Xs: Sequence[np.ndarray],
    ys: Sequence[np.ndarray],
    n_neurons: int,
    *,
    epochs: int,
    rngs: Sequence[np.random.Generator],
    device: torch.device | str = "cpu",
    lr: float = 1e-4,
) -> list[np.ndarray]:
    """One run of the paper's concrete autoencoder on each ``(Xs[i], ys[i])`` (float32 ``(n_i, p)``, labels in
    ``{0, 1}``), seeded from ``rngs[i]``, trained as one batch (members whose batch size or steps per epoch differ
    in batches of their own); the selected column of each neuron of each, int64 ``(n_neurons,)``.

    ``n_neurons >= 1`` (``K > p`` is allowed; neurons may coincide); ``epochs``: every one is run; ``lr``: Adam's
    step size.
    """
    if n_neurons < 1:
        raise ValueError(f"n_neurons must be positive, got {n_neurons}")
    out: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * len(Xs)
    shapes = [(cae_batch_size(X.shape[0]), math.ceil(X.shape[0] / cae_batch_size(X.shape[0]))) for X in Xs]
    for group in _grouped(shapes):
        bs, per_epoch = shapes[group[0]]
        temps = cae_temperatures(epochs * per_epoch).tolist()
        nets = _fit_2023(
            lambda g, i: _CAE2023(Xs[i].shape[1], n_neurons, g, temps.__getitem__),
            [Xs[i] for i in group],
            [ys[i] for i in group],
            rngs=[rngs[i] for i in group],
            device=device,
            epochs=epochs,
            batch_size=bs,
            lr=lr,
            eps=1e-7,
        )
        for i, net in zip(group, nets, strict=True):
            out[i] = net.logits.detach().argmax(dim=1).cpu().numpy().astype(np.int64)
    return out


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

    def compute(folds: Sequence[FoldData], rngs: Sequence[np.random.Generator]) -> list[MethodOutput]:
        Xs, ys = [f.X_train for f in folds], [f.y_train for f in folds]
        runs = [
            fit_cae_2023(Xs, ys, factor * k, epochs=epochs, rngs=rngs, device=device) for factor, epochs in CAE_RUNS
        ]
        return [MethodOutput(_indicator(a, p), scores_2k=_indicator(b, p)) for a, b in zip(*runs, strict=True)]

    return _setting_method(data, models, rng, "concrete_autoencoder_2023", compute)


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

    def __init__(
        self,
        U: torch.Tensor,
        n_neurons: int,
        classifier: nn.Sequential,
        generator: torch.Generator,
        schedule: Callable[[int], float] = lambda _: 10.0,
    ) -> None:
        super().__init__(schedule)
        n_bins = U.shape[1]
        self.register_buffer("U", U)
        self.selector_weight = nn.Parameter(torch.empty(n_bins, n_neurons))
        self.reconstruction_weight = nn.Parameter(torch.empty(n_neurons, n_bins))
        with torch.no_grad():
            nn.init.xavier_uniform_(self.selector_weight, generator=generator)
            nn.init.xavier_uniform_(self.reconstruction_weight, generator=generator)
        self.classifier = classifier

    def logits(self) -> torch.Tensor:
        """Selector logits, shape (p, K)."""
        return self.U @ self.selector_weight

    def outputs(
        self,
        params: dict[str, torch.Tensor],
        buffers: dict[str, torch.Tensor],
        x: torch.Tensor,
        *,
        draw: Draw | None,
        temperatures: torch.Tensor,
        training: bool,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The members' classifier logits ``(K, b)`` and reconstructions ``(K, b, p)`` of ``x`` ``(K, b, p)``, the
        selection drawn with Gumbel noise at ``temperatures`` ``(K, 1, 1)`` (in training and out of it, as the
        paper's)."""
        assert draw is not None
        U = buffers["U"]  # (K, p, n_bins)
        logits = torch.bmm(U, params["selector_weight"])  # (K, p, n_neurons)
        g = _gumbel(draw("uniform", tuple(logits.shape[1:]), per_row=False), 1e-5)
        selected = torch.bmm(x, torch.softmax((logits + g) / temperatures, dim=1))  # (K, b, n_neurons)
        recon = torch.bmm(selected, torch.bmm(params["reconstruction_weight"], U.transpose(1, 2)))
        logit = stacked_forward(
            self.classifier, sub_params(params, "classifier"), selected, training=training, draw=draw
        )
        return logit[..., 0], recon

    def stacked_objective(self, batch: StackedBatch) -> torch.Tensor:
        """Binary cross-entropy of the classifier's logit plus 10 times the mean squared reconstruction error over a
        member's rows and features: ``(K,)``."""
        x = batch.x
        t = self.temperatures(batch.steps, x.device)
        logit, recon = self.outputs(batch.params, batch.buffers, x, draw=batch.draw, temperatures=t, training=True)
        bce = F.binary_cross_entropy_with_logits(logit, batch.y.to(logit.dtype), reduction="none")
        return batch.mean(bce) + 10.0 * batch.mean((recon - x).pow(2).sum(dim=2)) / x.shape[2]

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.alone(self.outputs, x)

    def importances(self) -> np.ndarray:
        """``softmax(logits, dim=0).mean(axis=1)``, float64 (p,)."""
        with torch.no_grad():
            return torch.softmax(self.logits().double(), dim=0).mean(dim=1).cpu().numpy()


def fit_fsnet_2023(
    Xs: Sequence[np.ndarray],
    ys: Sequence[np.ndarray],
    n_neurons: int,
    *,
    rngs: Sequence[np.random.Generator],
    device: torch.device | str = "cpu",
    epochs: int = 2000,
) -> list[np.ndarray]:
    """One run of the paper's FSNet on each ``(Xs[i], ys[i])``, seeded from ``rngs[i]``, trained as one batch
    (members whose steps per epoch differ in batches of their own); the importances of each, float64 ``(p,)`` (see
    the module docstring)."""
    if n_neurons < 1:
        raise ValueError(f"n_neurons must be positive, got {n_neurons}")
    out: list[np.ndarray] = [np.empty(0)] * len(Xs)
    per_epoch = [math.ceil(X.shape[0] / 64) for X in Xs]
    for group in _grouped(per_epoch):
        steps = per_epoch[group[0]]

        def build(g: torch.Generator, i: int, steps: int = steps) -> _FSNet2023:
            mlp = build_seeded_mlp(n_neurons, mlp_config("passemiers2023"), g)  # the 2023 MLP as classifier
            U = torch.as_tensor(histogram_matrix_2023(Xs[group[i]]))
            return _FSNet2023(U, n_neurons, mlp, g, lambda step: fsnet_temperature(step // steps, epochs))

        nets = _fit_2023(
            build,
            [Xs[i] for i in group],
            [ys[i] for i in group],
            rngs=[rngs[i] for i in group],
            device=device,
            epochs=epochs,
            batch_size=64,
            lr=5e-3,
            weight_decay=1e-6,
            plateau=True,
        )
        for i, net in zip(group, nets, strict=True):
            out[i] = net.importances()
    return out


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
    device = select_device(models.settings.device)

    def compute(folds: Sequence[FoldData], rngs: Sequence[np.random.Generator]) -> list[np.ndarray]:
        Xs, ys = [f.X_train for f in folds], [f.y_train for f in folds]
        return fit_fsnet_2023(Xs, ys, min(2 * k, p), rngs=rngs, device=device)

    return _setting_method(data, models, rng, "fsnet_2023", compute)
