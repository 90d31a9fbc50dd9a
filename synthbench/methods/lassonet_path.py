"""LassoNet's regularisation path (Lemhadri, Ruan, Abraham & Tibshirani, 2021) for many members as one computation.

:func:`lassonet_paths` computes, for each member (its own training rows, labels and seed), what
``LassoNetClassifier(...).path(X, y)`` of the ``lassonet`` package computes, and returns its
``feature_importances_``: the same validation split (scikit-learn's ``train_test_split`` with the member's seed),
the same initialisation and per-epoch shuffles (torch's CPU generator seeded with the member's seed, then its
state carried on in the member's own generator), the same dense fit (Adam, with the proximal step at ``lambda = 0``
after every step), the same warm-started path (one SGD optimiser with momentum for the whole path, ``lambda``
multiplied by ``path_multiplier`` after every step until no feature is selected), the same early stopping on the
validation objective (``cross-entropy + lambda * sum_j ||skip_j||_2``, improving when below ``tol`` times the best)
and the same importances (the ``lambda`` at which a feature leaves, in float32; ``inf`` for a feature the dense fit
already dropped or that never leaves).

What is batched: every product is torch's batched one over the members (on one thread it runs, for each member,
the kernel a lone ``Linear`` runs, to the bit, wherever inner size x rows x columns is at least 400; the first layer
and the skip connection are one product of ``h + 2`` outputs so that this holds from p = 2 on), every member's
optimiser step is one update of a ``(members, parameters)`` buffer, the hierarchical proximal step
(:class:`HierProx`, the package's operator) runs once over every member's features, and the members'
cross-entropies are one call. The validation objective is each member's own call, with the package's shapes. Each
member trains as the package trains it alone, to the bit on the CPU (``tests/test_lassonet_path.py`` checks it
against the package; at p = 1 the first layer's product takes another kernel). A member whose early stopping ends
its epochs at a ``lambda``, or whose path has ended (no feature left), waits unchanged while the others go on: a
step computes only the members that take it (their rows of the parameters and the optimiser's state gathered,
stepped and written back), so a member that has finished costs nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from lassonet.model import LassoNet
from sklearn.model_selection import train_test_split

__all__ = ["HierProx", "LassoNetPath", "lassonet_paths", "package_importances"]

_ADAM = (0.9, 0.999, 1e-8)  # torch's Adam defaults: the package's dense optimiser


@dataclass(frozen=True)
class LassoNetPath:
    """A ``LassoNetClassifier`` path's settings, named as the package names them (its defaults where it has one).

    ``hidden_dims`` the hidden layers; ``lambda_start`` the first penalty, multiplied by ``path_multiplier`` after
    every path step; ``n_iters`` and ``patience`` the epochs and early-stopping patience of the dense fit and of
    each path step; ``batch_size`` the mini-batch (the last partial batch of an epoch is dropped); ``tol`` the
    relative improvement early stopping asks; ``M`` the hierarchy constant; ``val_size`` the validation share.
    The optimisers are the package's: Adam (lr 1e-3) for the dense fit, SGD (lr 1e-3, momentum 0.9) along the path.
    No dropout, no L2 penalty, two classes.
    """

    hidden_dims: tuple[int, ...]
    lambda_start: float
    batch_size: int
    path_multiplier: float = 1.02
    n_iters: tuple[int, int] = (1000, 100)
    patience: tuple[int, int] = (100, 10)
    tol: float = 0.99
    M: float = 10.0
    val_size: float = 0.1
    lr: tuple[float, float] = (1e-3, 1e-3)
    momentum: float = 0.9

    def __post_init__(self) -> None:
        if self.lambda_start <= 0 or self.path_multiplier <= 1:
            raise ValueError("lambda_start must be positive and path_multiplier above 1")
        if self.batch_size < 1 or not self.hidden_dims:
            raise ValueError("batch_size must be positive and hidden_dims non-empty")


class _Members:
    """The members' networks as one ``(K, P)`` parameter buffer with per-layer views, their data and generators."""

    def __init__(
        self,
        Xs: Sequence[np.ndarray],
        ys: Sequence[np.ndarray],
        seeds: Sequence[int],
        cfg: LassoNetPath,
        dev: torch.device,
    ) -> None:
        self.cfg, self.dev, self.K = cfg, dev, len(Xs)
        self.p = Xs[0].shape[1]
        nets, self.generators, train, self.val = [], [], [], []
        for X, y, seed in zip(Xs, ys, seeds, strict=True):
            X_tr, X_va, y_tr, y_va = train_test_split(
                np.asarray(X, dtype=np.float32), np.asarray(y), test_size=cfg.val_size, random_state=seed
            )
            train.append((torch.as_tensor(X_tr), torch.as_tensor(y_tr, dtype=torch.int64)))
            self.val.append((torch.as_tensor(X_va).to(dev), torch.as_tensor(y_va, dtype=torch.int64).to(dev)))
            with torch.random.fork_rng(devices=[]):  # the package initialises on the global generator
                torch.default_generator.manual_seed(int(seed))
                nets.append(LassoNet(self.p, *cfg.hidden_dims, 2, dropout=0))
                generator = torch.Generator()
                generator.set_state(torch.default_generator.get_state())
            self.generators.append(generator)
        self.n_train = [len(t[1]) for t in train]
        #: each member's mini-batch (all its rows when fewer than a batch) and full batches an epoch
        self.batch = [min(cfg.batch_size, n) for n in self.n_train]
        self.n_batches = [n // b for n, b in zip(self.n_train, self.batch, strict=True)]
        n_max = max(self.n_train)
        self.X = torch.zeros(self.K, n_max, self.p)
        self.y = torch.zeros(self.K, n_max, dtype=torch.int64)
        for k, (X_tr, y_tr) in enumerate(train):
            self.X[k, : len(y_tr)], self.y[k, : len(y_tr)] = X_tr, y_tr
        self.X, self.y = self.X.to(dev), self.y.to(dev)
        # One row per member: the first layer's weights with the skip connection's below them (one product computes
        # both, (h + 2, p)), then the first layer's bias and every further layer's weights and bias; each a view.
        tensors = [
            [torch.cat([net.layers[0].weight, net.skip.weight]), net.layers[0].bias]
            + [t for layer in net.layers[1:] for t in (layer.weight, layer.bias)]
            for net in nets
        ]
        self.theta = torch.stack([torch.cat([t.detach().reshape(-1) for t in ts]) for ts in tensors]).to(dev)
        self.shapes = [tuple(t.shape) for t in tensors[0]]
        self.params = self.views(self.theta)
        self.h = cfg.hidden_dims[0]
        self.no_skip_bias = torch.zeros(self.K, 2, device=dev)
        self.rows = torch.arange(self.K, device=dev).unsqueeze(1)

    def views(self, theta: torch.Tensor) -> list[torch.Tensor]:
        """Each layer's parameters of the members whose rows ``theta`` ``(S, P)`` holds, as views that take a
        gradient: the first layer's weights above the skip connection's ``(S, h + 2, p)``, its bias, then every
        further layer's weights and bias."""
        sizes = [math.prod(shape) for shape in self.shapes]
        pieces = theta.split(sizes, dim=1)
        return [v.view(len(theta), *shape).requires_grad_() for v, shape in zip(pieces, self.shapes, strict=True)]

    @property
    def skip(self) -> torch.Tensor:
        """The skip connection's weights, ``(K, 2, p)`` (a view of the buffer)."""
        return self.params[0][:, self.h :]

    def forward(self, x: torch.Tensor, params: list[torch.Tensor]) -> torch.Tensor:
        """Logits ``(S, n, 2)`` of the members whose ``params`` (:meth:`views`) are given, on their rows ``x``
        ``(S, n, p)``.

        Every product is torch's batched one, which on one thread computes each member's product with the kernel a
        lone ``Linear`` calls (to the bit) where its size (inner x rows x columns) is at least 400; the first
        layer and the skip connection are one product so that it is, from p = 2 on."""
        W, b = params[0::2], params[1::2]
        bias = torch.cat([b[0], self.no_skip_bias[: len(x)]], dim=1).unsqueeze(1)
        z = torch.baddbmm(bias, x, W[0].transpose(1, 2))
        h = F.relu(z[..., : self.h])
        for i in range(1, len(W)):
            h = torch.baddbmm(b[i].unsqueeze(1), h, W[i].transpose(1, 2))
            if i < len(W) - 1:
                h = F.relu(h)
        return z[..., self.h :] + h

    def validation(self, k: int, lam: float) -> float:
        """Member ``k``'s validation objective at penalty ``lam``, as the package computes it (float64)."""
        W, b = self.params[0::2], self.params[1::2]
        X_va, y_va = self.val[k]
        with torch.no_grad():
            S = W[0][k, self.h :]
            h = torch.addmm(b[0][k], X_va, W[0][k, : self.h].T)
            for i in range(1, len(W)):
                h = torch.addmm(b[i][k], F.relu(h), W[i][k].T)
            loss = F.cross_entropy(X_va @ S.T + h, y_va).item()
            return loss + lam * torch.norm(S, p=2, dim=0).sum().item()

    def selected(self) -> torch.Tensor:
        """Bool ``(K, p)``: the features each member still uses (a nonzero skip column)."""
        with torch.no_grad():
            return torch.norm(self.skip, p=2, dim=1) != 0


class _Trainer:
    """The package's ``_train`` for every member at once: epochs of shuffled mini-batches, an optimiser step and the
    proximal step after each, early stopping per member."""

    def __init__(self, members: _Members) -> None:
        self.m = members
        K, dev = members.K, members.dev
        self.adam_steps = [0.0] * K
        self.moments = (torch.zeros_like(members.theta), torch.zeros_like(members.theta))
        self.buffer = torch.zeros_like(members.theta)
        self.prox = HierProx(members.h, K * members.p, members.cfg.M, dev)
        self.by_feature = torch.empty(K * members.p, members.h + 2, device=dev)  # (K p, h + 2)

    def run(self, lam: float, phase: int, members: list[int]) -> None:
        """Train the ``members`` (their indices) at penalty ``lam``: ``phase`` 0 the dense fit, 1 a path step."""
        m, cfg = self.m, self.m.cfg
        epochs, patience, lr = cfg.n_iters[phase], cfg.patience[phase], cfg.lr[phase]
        best = {k: m.validation(k, lam) for k in members}
        since = dict.fromkeys(members, 0)
        active = list(members)
        for _ in range(epochs):
            if not active:
                break
            order = torch.zeros(m.K, m.X.shape[1], dtype=torch.int64)
            for k in active:
                order[k, : m.n_train[k]] = torch.randperm(m.n_train[k], generator=m.generators[k])
            order = order.to(m.dev)
            for i in range(max(m.n_batches[k] for k in active)):
                self._step(order, i, [k for k in active if i < m.n_batches[k]], lam, phase, lr)
            for k in list(active):
                value = m.validation(k, lam)
                if not math.isfinite(value):
                    raise FloatingPointError(f"LassoNet member {k}: validation objective {value} at lambda {lam}")
                if value < cfg.tol * best[k]:
                    best[k], since[k] = value, 0
                else:
                    since[k] += 1
                if since[k] == patience:
                    active.remove(k)

    def _step(self, order: torch.Tensor, i: int, stepping: list[int], lam: float, phase: int, lr: float) -> None:
        """One mini-batch of the ``stepping`` members: the loss's gradient, the optimiser's step, the proximal step.

        Only the stepping members are computed: where some members wait, their rows of the parameters and the
        optimiser's state are gathered, stepped and written back (a member's values do not depend on the others in
        the computation, so this is what computing every member and keeping the stepping ones' would give)."""
        m = self.m
        sizes = {m.batch[k] for k in stepping}
        bs = max(sizes)
        picked = None if len(stepping) == m.K else torch.tensor(stepping, device=m.dev)
        rows = order[:, i * bs : (i + 1) * bs]
        if picked is None:
            theta, params, x, y = m.theta, m.params, m.X[m.rows, rows], m.y[m.rows, rows]
        else:
            theta = m.theta[picked]
            params, at = m.views(theta), picked.unsqueeze(1)
            x, y = m.X[at, rows[picked]], m.y[at, rows[picked]]
        out = m.forward(x, params)
        if len(sizes) == 1:  # each member's mean cross-entropy (its gradient that of the package's mean)
            loss = F.cross_entropy(out.reshape(-1, 2), y.reshape(-1), reduction="none").view(-1, bs).mean(1).sum()
        else:  # members of other batch sizes (fewer training rows than a batch): each its own rows
            batches = [m.batch[k] for k in stepping]
            loss = torch.stack([F.cross_entropy(o[:b], t[:b]) for o, t, b in zip(out, y, batches, strict=True)]).sum()
        grad = torch.cat([g.reshape(len(stepping), -1) for g in torch.autograd.grad(loss, params)], dim=1)
        with torch.no_grad():
            theta = theta.detach()
            if phase == 0:  # theta + (-step_size * exp_avg) / denom
                theta.addcdiv_(*self._adam(grad, picked, stepping, lr))
            else:  # theta - lr * buffer
                theta.add_(self._sgd(grad, picked), alpha=-lr)
            self._prox(theta, lam * lr)
            if picked is not None:
                m.theta[picked] = theta

    def _adam(
        self, grad: torch.Tensor, picked: torch.Tensor | None, stepping: list[int], lr: float
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """torch's single-tensor Adam for the ``stepping`` members (rows ``picked`` of the state; None: all), whose
        gradient ``grad`` is; returns ``(numerator, denominator)`` of the update ``theta + (-step_size * exp_avg) /
        denom`` (``addcdiv`` with a value per member)."""
        beta1, beta2, eps = _ADAM
        first, second = self.moments if picked is None else (self.moments[0][picked], self.moments[1][picked])
        first.lerp_(grad, 1 - beta1)
        second.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        if picked is not None:
            self.moments[0][picked], self.moments[1][picked] = first, second
        for k in stepping:
            self.adam_steps[k] += 1.0
        steps = [self.adam_steps[k] for k in stepping]  # Python floats, as torch computes the corrections
        step_size = torch.tensor([[-(lr / (1 - beta1**s))] for s in steps], dtype=torch.float32, device=grad.device)
        bc2_sqrt = torch.tensor([[(1 - beta2**s) ** 0.5] for s in steps], dtype=torch.float32, device=grad.device)
        return step_size * first, (second.sqrt() / bc2_sqrt).add_(eps)

    def _sgd(self, grad: torch.Tensor, picked: torch.Tensor | None) -> torch.Tensor:
        """torch's single-tensor SGD with momentum for the members whose gradient ``grad`` is (rows ``picked`` of
        the state; None: all): their new momentum buffer, which the step subtracts times the learning rate."""
        momentum = self.m.cfg.momentum
        buffer = self.buffer if picked is None else self.buffer[picked]
        buffer.mul_(momentum).add_(grad)  # from a zero buffer: the gradient itself, as torch starts
        if picked is not None:
            self.buffer[picked] = buffer
        return buffer

    def _prox(self, theta: torch.Tensor, lam: float) -> None:
        """The hierarchical proximal step on the features of the members whose rows ``theta`` ``(S, P)`` holds, in
        place (:class:`HierProx`): each feature's first-layer weights (h) and skip weights (2), one row per feature
        of every member."""
        m = self.m
        S = len(theta)
        W = theta[:, : (m.h + 2) * m.p].view(S, m.h + 2, m.p)
        rows = self.by_feature[: S * m.p]  # a copy, never a view of the weights
        rows.view(S, m.p, m.h + 2).copy_(W.transpose(1, 2))
        rows[:, : m.h], rows[:, m.h :] = self.prox(rows[:, m.h :], rows[:, : m.h], lam)
        W.copy_(rows.view(S, m.p, m.h + 2).transpose(1, 2))


class HierProx:
    """The lassonet package's hierarchical proximal operator (:func:`lassonet.prox.prox` with ``lambda_bar = 0``),
    feature by feature, to the bit, with its constants made once for a shape.

    ``__call__(v, u, lam)``: ``v`` the skip weights ``(N, 2)``, ``u`` the first layer's ``(N, h)`` (one row per
    feature, transposed from the package's columns, any number of members' features stacked), ``lam`` the threshold
    (penalty times learning rate). Returns ``(u', v')``: the first layer's and the skip's new weights. A feature
    whose skip weights are all zero ends with zero weights. On the CPU the sorted magnitudes come from NumPy's
    sort (values only, vectorised): torch's sort along the hidden units takes 5 to 20 times as long, and sorting
    values is exact, so the result is the same.
    """

    def __init__(self, h: int, n: int, M: float, device: torch.device, shortcut_rows: int = 1024) -> None:
        self.M, self.h, self.shortcut_rows = M, h, shortcut_rows
        self.scale = 1 + torch.arange(h + 1.0, device=device).view(1, -1) * M**2
        # work space, rewritten by every call: the sorted magnitudes above a 0, and the thresholds a_s, then x
        self.lower = torch.zeros(n, h + 1, device=device)
        self.x = torch.zeros(n, h + 1, device=device)

    def __call__(self, v: torch.Tensor, u: torch.Tensor, lam: float) -> tuple[torch.Tensor, torch.Tensor]:
        """The new ``(u, v)``. A feature the step certainly empties (its ``a_s`` at every ``m`` at least its skip
        norm, with a margin far above float32 rounding: every ``x_m`` is 0) gets the package's zeros (signed as the
        package signs them) without the sort; the others go through the whole operator. The shortcut is looked for
        at a positive threshold on at least ``shortcut_rows`` rows: below (6 folds x 128 features, one CPU thread)
        its own passes cost more than the work they save."""
        u_abs = u.abs()
        if lam <= 0 or len(u) < self.shortcut_rows:
            return self._whole(v, u, u_abs, lam)
        total = u_abs.sum(dim=1, keepdim=True)
        a_least = lam - self.M * total  # a_s at m = h, the smallest, up to rounding
        margin = self.M * total * 1e-5 + a_least.abs() * 1e-6
        dead = (a_least - margin >= torch.sqrt((v * v).sum(dim=1, keepdim=True)) * (1 + 1e-5)).squeeze(1)
        if not dead.any():
            return self._whole(v, u, u_abs, lam)
        new_u, new_v = torch.where(u >= 0, 0.0, -0.0), v * 0.0
        live = torch.nonzero(~dead).squeeze(1)
        if len(live):
            new_u[live], new_v[live] = self._whole(v[live], u[live], u_abs[live], lam)
        return new_u, new_v

    def _whole(
        self, v: torch.Tensor, u: torch.Tensor, u_abs: torch.Tensor, lam: float
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The operator on every row of ``(v, u)`` (``u_abs = |u|``), as the package computes it."""
        M, h, n = self.M, self.h, len(u)
        lower, x = self.lower[:n], self.x[:n]
        if u_abs.device.type == "cpu":
            lower.numpy()[:, :h] = np.sort(u_abs.numpy(), axis=1)[:, ::-1]
        else:
            lower[:, :h] = torch.sort(u_abs, dim=1, descending=True).values
        # a_s = lam - M * [0, cumsum]; each in-place step rounds as the package's expression does
        x[:, 0] = 0.0
        x[:, 1:] = torch.cumsum(lower[:, :h], dim=1)
        x.mul_(M).neg_().add_(lam)
        # over the package's (2, N) layout: torch reduces a contiguous pair in another order (an ulp apart)
        norm_v = torch.norm(v.T.contiguous(), p=2, dim=0).unsqueeze(1)
        nonzero = norm_v > 0
        # x = relu(1 - a_s / |v|) / (1 + s M^2), 0 where v is 0
        x.div_(torch.where(nonzero, norm_v, 1.0)).neg_().add_(1).relu_().div_(self.scale)
        x.masked_fill_(~nonzero, 0.0)
        w = x.mul(M).mul_(norm_v)
        idx = torch.sum(lower > w, dim=1, keepdim=True)
        new_u = torch.minimum(u_abs, torch.gather(w, 1, idx))
        return torch.where(u >= 0, new_u, -new_u), torch.gather(x, 1, idx) * v


def lassonet_paths(
    Xs: Sequence[np.ndarray],
    ys: Sequence[np.ndarray],
    seeds: Sequence[int],
    config: LassoNetPath,
    device: torch.device | str = "cpu",
) -> list[np.ndarray]:
    """Each member's ``LassoNetClassifier.path`` importances, the members trained as one computation.

    Parameters
    ----------
    Xs : float32 ``(n_k, p)`` per member (the same ``p`` for all);  ys : int ``(n_k,)`` in ``{0, 1}`` per member
    seeds : per member, the validation split's ``random_state`` and the seed of the generator that initialises the
        network and shuffles its epochs (the package's ``random_state`` with torch's global generator seeded so)
    config : the path's settings
    device : where the members train

    Returns
    -------
    list of float64 ``(p,)``, one per member: the ``lambda`` (rounded to float32, as the package stores it) of the
    first path step after which the feature is no longer selected; ``inf`` when the dense fit already dropped it or
    it never leaves.
    """
    if not (len(Xs) == len(ys) == len(seeds)) or not Xs:
        raise ValueError("Xs, ys and seeds must be non-empty and of one length")
    if len({X.shape[1] for X in Xs}) != 1:
        raise ValueError("every member must have the same features")
    if any(not np.isin(y, (0, 1)).all() for y in ys):
        raise ValueError("the labels must be 0 and 1 (two classes)")
    members = _Members(Xs, ys, seeds, config, torch.device(device))
    trainer = _Trainer(members)
    trainer.run(0.0, 0, list(range(members.K)))
    selected = members.selected().cpu()
    current = selected.clone()  # selected at every step so far: a feature's importance is its first leave
    importances = torch.full((members.K, members.p), float("inf"))
    lam = float(config.lambda_start)
    while selected.any():  # a member whose model selects nothing has ended its path and selects nothing after
        trainer.run(lam, 1, torch.nonzero(selected.any(dim=1)).flatten().tolist())
        selected = members.selected().cpu()
        importances[current & ~selected] = lam
        current &= selected
        lam *= config.path_multiplier
    return [row.double().numpy() for row in importances]


def package_importances(X: np.ndarray, y: np.ndarray, seed: int, config: LassoNetPath) -> np.ndarray:
    """The reference: ``LassoNetClassifier(...).path(X, y)``'s ``feature_importances_`` (float64 ``(p,)``) on the CPU,
    one member at a time, torch's global generator seeded with ``seed`` inside ``fork_rng`` (its state restored)
    and the package's warning about a large ``lambda_start`` off; what :func:`lassonet_paths` gives each member."""
    from lassonet import LassoNetClassifier

    clf = LassoNetClassifier(
        hidden_dims=config.hidden_dims,
        lambda_start=config.lambda_start,
        path_multiplier=config.path_multiplier,
        batch_size=config.batch_size,
        n_iters=config.n_iters,
        patience=config.patience,
        tol=config.tol,
        M=config.M,
        dropout=0,
        val_size=config.val_size,
        verbose=0,
        random_state=seed,
        torch_seed=None,
        device=torch.device("cpu"),
    )
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(int(seed))
        clf.path(np.asarray(X, dtype=np.float32), np.asarray(y), disable_lambda_warning=True)
    return clf.feature_importances_.double().numpy()
