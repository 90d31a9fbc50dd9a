"""Trained classifier networks with a scikit-learn-style probability interface.

:class:`TrainedNetwork` is the base of the trained MLP (:class:`~synthbench.models.mlp.TrainedMLP`)
and CNN (:class:`~synthbench.models.cnn.TrainedCNN`): ``predict_proba``, ``predict`` and
pickling as a CPU ``state_dict`` (worker processes, the disk cache).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch
from torch import nn

from synthbench.models.loop import PREDICT_BATCH

__all__ = ["TrainedNetwork", "predict_proba"]

log = logging.getLogger(__name__)


class TrainedNetwork:
    """A trained classifier network with a scikit-learn-style probability interface.

    Subclasses are dataclasses with the fields ``module`` (the network in eval mode, on
    ``device``), ``device`` and ``classes_`` (``[0, 1, ..., K - 1]``), and build an untrained
    module of the same architecture in :meth:`_architecture`. Pickling sends the weights as a
    CPU ``state_dict`` and rebuilds the module on load (on the CPU when CUDA is missing).
    """

    module: nn.Module
    device: torch.device
    classes_: np.ndarray

    def _architecture(self) -> nn.Module:
        raise NotImplementedError

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Class probabilities ``(n, K)``, float64, rows summing to 1 (see :func:`predict_proba`)."""
        return predict_proba(self.module, np.asarray(X, dtype=np.float32), self.device)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predicted labels, shape (n,), int64 (the most probable class; ``P(y = 1) > 0.5`` when binary)."""
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("module", "device")}
        state["state_dict"] = {k: v.detach().cpu().clone() for k, v in self.module.state_dict().items()}
        state["device"] = str(self.device)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        weights = state.pop("state_dict")
        device = torch.device(state.pop("device"))
        if device.type == "cuda" and not torch.cuda.is_available():
            log.info("%s was on %s; CUDA is unavailable here, loading it on the CPU", type(self).__name__, device)
            device = torch.device("cpu")
        self.__dict__.update(state)
        module = self._architecture()  # its drawn init is overwritten by the stored weights
        module.load_state_dict(weights)
        self.module = module.to(device).eval()
        self.device = device


def predict_proba(module: nn.Module, X: np.ndarray, device: torch.device) -> np.ndarray:
    """Class probabilities ``(n, K)`` float64 of a classifier ``module`` (eval mode) on ``X`` ``(n, *input_shape)``.

    One logit: ``[1 - sigmoid, sigmoid]``; ``K >= 2`` logits: softmax. Batches of :data:`PREDICT_BATCH` rows.
    """
    parts = []
    module.eval()
    with torch.inference_mode():
        for start in range(0, X.shape[0], PREDICT_BATCH):
            xb = torch.from_numpy(np.ascontiguousarray(X[start : start + PREDICT_BATCH], dtype=np.float32))
            parts.append(module(xb.to(device)).double().cpu())
    logits = torch.cat(parts) if parts else torch.empty(0, 1, dtype=torch.float64)
    if logits.dim() == 1 or logits.shape[1] == 1:
        p1 = 1.0 / (1.0 + np.exp(-logits.reshape(-1).numpy()))
        return np.column_stack([1.0 - p1, p1])
    return torch.softmax(logits, dim=1).numpy()
