"""DeepPINK as the 2023 benchmark ran it (``src/deeppink.py``, ``src/nn_wrapper.py`` at commit 06afd2e).

The network takes each feature and its knockoff as a pair, ``(n, p, 2)``:

    a_j = w1_j · x_j + w1~_j · x~_j + b1_j         (pairwise coupling, weights start at 0.1, bias 0)
    u_j = w2_j · a_j + b2_j                        (a second per-feature layer, Xavier-normal, bias 0)
    logit = MLP(u)                                 (the 2023 MLP: noise 0.1, 2×16 LeakyReLU(0.2))

and is trained by the 2023 loop (the ``passemiers2023`` preset's settings: noisy summed
validation loss, final weights kept, plateau schedule, Adam 5e-4 with weight decay 1e-5). There
is no L1 penalty: the paper's code meant to add one on every ``nn.Linear`` among the module's
direct children, and there was none, so it added nothing. The statistic is

    W_j = (w1_j · v_j)^2 − (w1~_j · v_j)^2,   v_j = w2_j · (W_3 W_2 W_1)_j,

and the score is ``W − min(W)`` (higher = more important). Knockoffs are drawn for all the
fold's rows (training and held-out together, as the paper drew them for the whole set before
splitting) and the training part is used: fresh uniform draws on ``[-1, 1]`` for the uniform
synthetic sets, as the paper's; otherwise (``knockoffs="auto_2023"``) the paper's own Gaussian
construction (:func:`~synthbench.selection.knockoffs.gaussian_knockoffs_2023`), each knockoff column
then standardised over those rows, as the paper standardised its dag knockoffs.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch
from torch import nn

from synthbench.datasets.tables.decoys import standardise
from synthbench.methods.registry import AS_RUN_2023, register_method
from synthbench.models import SharedModels
from synthbench.models.device import cpu_threads, select_device
from synthbench.models.loop import fit_network
from synthbench.models.mlp import build_seeded_mlp
from synthbench.models.presets import mlp_config
from synthbench.protocol import FoldData
from synthbench.selection.knockoffs import make_knockoffs

__all__ = ["PairedDeepPink", "deeppink_2023"]


class PairedDeepPink(nn.Module):
    """The 2023 DeepPINK network; ``forward`` maps ``(b, p, 2)`` pairs ``[x, x~]`` to logits ``(b, 1)``."""

    def __init__(self, mlp: nn.Module, p: int, generator: torch.Generator) -> None:
        super().__init__()
        self.pair_weight = nn.Parameter(torch.full((p, 2), 0.1))
        self.pair_bias = nn.Parameter(torch.zeros(p))
        self.feature_weight = nn.Parameter(torch.empty(p, 1))
        self.feature_bias = nn.Parameter(torch.zeros(p))
        with torch.no_grad():
            nn.init.xavier_normal_(self.feature_weight, generator=generator)
        self.mlp = mlp

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        a = (pairs * self.pair_weight).sum(dim=2) + self.pair_bias
        return self.mlp(a * self.feature_weight[:, 0] + self.feature_bias)

    def statistics(self) -> np.ndarray:
        """``W_j = (w1_j v_j)^2 - (w1~_j v_j)^2``, float64 ``(p,)``; positive favours the original feature."""
        with torch.no_grad():
            chain = None
            for layer in self.mlp.modules():
                if isinstance(layer, nn.Linear):
                    w = layer.weight.double()
                    chain = w if chain is None else w @ chain
            if chain is None:
                raise ValueError("the MLP has no Linear layer")
            v = self.feature_weight.double()[:, 0] * chain.reshape(-1)
            z, z_tilde = self.pair_weight.double()[:, 0] * v, self.pair_weight.double()[:, 1] * v
            return (z**2 - z_tilde**2).cpu().numpy()


@register_method(
    "deeppink_2023",
    description="DeepPINK as the 2023 benchmark ran it: paired and per-feature layers before the 2023 MLP, no L1 "
    "penalty (the paper's was inert), the 2023 training loop; importance W_j - min(W)",
    reference=f"Lu, Fan, Lv & Noble 2018 (NeurIPS); {AS_RUN_2023}",
    default=False,
    accelerated=True,
    params={"knockoffs": "auto_2023", "training": "passemiers2023"},
)
def deeppink_2023(
    data: FoldData,
    models: SharedModels,
    rng: np.random.Generator,
    *,
    knockoffs: Literal["auto", "uniform", "gaussian", "auto_2023", "gaussian_2023"],
    training: str,
) -> np.ndarray:
    """DeepPINK importances ``W - min(W)``, shape (p,), non-negative (see the module docstring)."""
    X = np.asarray(data.X_train, dtype=np.float32)
    X_tilde, kind = make_knockoffs(np.concatenate([data.X_train, data.X_test]), rng, knockoffs)
    if kind == "gaussian_2023":
        X_tilde = standardise(X_tilde, axis=0)
    X_tilde = X_tilde[: X.shape[0]]
    pairs = np.stack([X, X_tilde.astype(np.float32)], axis=2)  # (n, p, 2)
    config = mlp_config(training)
    dev = select_device(models.settings.device)
    gen = torch.Generator().manual_seed(int(rng.integers(0, 2**62)))
    p = X.shape[1]
    net = PairedDeepPink(build_seeded_mlp(p, config, gen), p, gen)
    with cpu_threads(dev):
        fit_network(net, pairs, data.y_train, config=config.train, generator=gen, device=dev)
    W = net.statistics()
    return W - W.min()
