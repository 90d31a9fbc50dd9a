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

The folds of a setting train as one batch (:meth:`~synthbench.models.SharedModels.method_folds`; the network is a
:class:`~synthbench.models.stacked.StackedNetwork`), each fold from its own stream, as it would alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, cast

import numpy as np
import torch
from torch import nn

from synthbench.datasets.tables.decoys import standardise
from synthbench.methods.registry import AS_RUN_2023, register_method
from synthbench.models import SharedModels
from synthbench.models.device import cpu_threads, select_device
from synthbench.models.loop import Member, fit_networks
from synthbench.models.mlp import build_seeded_mlp
from synthbench.models.presets import mlp_config
from synthbench.models.stacked import Draw, StackedNetwork, stacked_forward, sub_params
from synthbench.protocol import FoldData
from synthbench.selection.knockoffs import make_knockoffs

__all__ = ["PairedDeepPink", "deeppink_2023"]


#: Changes when :func:`deeppink_2023` computes other values for the same folds (part of the key of the parts stored
#: for a setting's folds).
_BATCH_VERSION = 1


class PairedDeepPink(StackedNetwork):
    """The 2023 DeepPINK network; ``forward`` maps ``(b, p, 2)`` pairs ``[x, x~]`` to logits ``(b, 1)``."""

    def __init__(self, mlp: nn.Sequential, p: int, generator: torch.Generator) -> None:
        super().__init__()
        self.pair_weight = nn.Parameter(torch.full((p, 2), 0.1))
        self.pair_bias = nn.Parameter(torch.zeros(p))
        self.feature_weight = nn.Parameter(torch.empty(p, 1))
        self.feature_bias = nn.Parameter(torch.zeros(p))
        with torch.no_grad():
            nn.init.xavier_normal_(self.feature_weight, generator=generator)
        self.mlp = mlp

    def stacked_logits(
        self,
        params: dict[str, torch.Tensor],
        buffers: dict[str, torch.Tensor],
        x: torch.Tensor,
        *,
        training: bool,
        draw: Draw | None,
    ) -> torch.Tensor:
        """The members' logits ``(K, b, 1)`` on their pairs ``x`` ``(K, b, p, 2)``."""
        a = (x * params["pair_weight"][:, None]).sum(dim=3) + params["pair_bias"][:, None]
        u = a * params["feature_weight"][:, None, :, 0] + params["feature_bias"][:, None]
        return stacked_forward(self.mlp, sub_params(params, "mlp"), u, training=training, draw=draw)

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        return self.one(self.stacked_logits, pairs, None, training=self.training)

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
    config = mlp_config(training)
    dev = select_device(models.settings.device)

    def member(fold: FoldData, fold_rng: np.random.Generator) -> Member:
        X = np.asarray(fold.X_train, dtype=np.float32)
        X_tilde, kind = make_knockoffs(np.concatenate([fold.X_train, fold.X_test]), fold_rng, knockoffs)
        if kind == "gaussian_2023":
            X_tilde = standardise(X_tilde, axis=0)
        pairs = np.stack([X, X_tilde[: X.shape[0]].astype(np.float32)], axis=2)  # (n, p, 2)
        gen = torch.Generator().manual_seed(int(fold_rng.integers(0, 2**62)))
        p = X.shape[1]
        return Member(PairedDeepPink(build_seeded_mlp(p, config, gen), p, gen), pairs, fold.y_train, gen)

    def compute(folds: Sequence[FoldData], rngs: Sequence[np.random.Generator]) -> list[np.ndarray]:
        members = [member(f, r) for f, r in zip(folds, rngs, strict=True)]
        with cpu_threads(dev):
            fit_networks(members, config=config.train, device=dev)
        W = [cast(PairedDeepPink, m.module).statistics() for m in members]
        return [w - w.min() for w in W]

    tag = ("deeppink_2023", _BATCH_VERSION, knockoffs, training, str(dev))
    return cast(np.ndarray, models.method_folds(data, rng, "deeppink_2023", tag, compute))
