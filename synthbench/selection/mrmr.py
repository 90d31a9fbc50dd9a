"""Minimum-redundancy maximum-relevance (mRMR) feature selection on discrete data.

:func:`mrmr` is a vectorised re-implementation of the selection done by Hanchuan Peng's
reference C++ program (Peng, Long & Ding, IEEE TPAMI 27(8), 2005), as shipped in the
``pymrmr`` Python binding; :func:`pymrmr_select` calls that binding. The two return the
same features in the same order on the same data, including every quirk of the reference
listed below.

Behaviour of the reference implementation (pymrmr 0.1.11, ``mrmr.cpp``)
-----------------------------------------------------------------------
* **Estimator.** Plug-in (empirical) mutual information in **bits**. Each variable is
  rounded to an integer and shifted by its minimum, so its states are ``min..max``; empty
  states contribute nothing. The binary is compiled with ``-Ofast``, which fixes the exact
  floating-point operations: probabilities are ``count * (1/n)``; marginals are sums of the
  joint probabilities (one of them as a 2-lane vectorised sum); the sum runs over the
  non-empty cells of ``p(a,b) * log(p(a,b) / (p(a) * p(b)))`` and is multiplied by
  ``1/log(2)`` (see :func:`_exact_mi`).
* **Relevance ranking.** The relevance ``I(feature; class)`` of every feature is stored as a
  32-bit float and the features are sorted by it, descending, with the Numerical Recipes
  ``sort2`` quicksort (not stable). Features whose float32 relevance ties are therefore
  ordered by that quicksort, which this module replays exactly.
* **First pick.** The feature ranked first by that sort (the most relevant one).
* **Candidate pool.** Only the ``min(5000, p)`` top-ranked features are ever candidates;
  features ranked lower can never be selected. ``k`` larger than the pool is not supported
  by the reference (it pads its answer with the class column), so :func:`mrmr` refuses it.
* **Later picks.** For every unselected pool feature, in rank order: relevance (recomputed in
  double precision), redundancy = mean of ``I(selected_j; candidate)`` over the features
  selected so far, and the score ``relevance - redundancy`` (``"MID"``) or
  ``relevance / (redundancy + 0.0001)`` (``"MIQ"``; the ``0.0001`` keeps a zero redundancy
  finite). The first candidate in rank order with the strictly largest score wins, so exact
  ties go to the better-ranked feature.

How this module reproduces it
-----------------------------
Relevance is computed for all features at once with the reference binary's own floating-point
operations (same sums in the same order, the C library ``log``), so the float32 ranking is
bit-identical.
Redundancy is updated once per pick for all pool candidates at once from joint histograms
(``numpy.bincount`` on combined codes) with a fast entropy formula, together with a rigorous
bound on its distance from the reference's value. Whenever a candidate's score is within
those bounds of the best one, the scores of all such candidates are recomputed exactly in
the reference's floating-point order and the reference's tie-break is applied. No ``p x p``
matrix is ever built.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import sys
from collections.abc import Iterator, Sequence

import numpy as np

__all__ = [
    "POOL_SIZE",
    "SCHEMES",
    "discretise",
    "mrmr",
    "mrmr_scores",
    "pymrmr_select",
    "selection_scores",
]

#: Size of the reference implementation's candidate pool (``poolUseFeaLen`` in ``mrmr.cpp``).
POOL_SIZE = 5000
#: The selection criteria: ``"MIQ"`` (quotient) and ``"MID"`` (difference).
SCHEMES = ("MIQ", "MID")

_LN2 = math.log(2.0)
# The reference multiplies by this constant instead of dividing by log(2).
_INV_LN2 = 1.0 / _LN2
_EPS = float(np.finfo(np.float64).eps)
_INT32 = np.iinfo(np.int32)
# Largest number of cells of one block of joint histograms held in memory at a time.
_BLOCK_CELLS = 1 << 21


# --------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------
def discretise(X: np.ndarray, scale: float = 20.0) -> np.ndarray:
    """Discretise centred features as ``round(scale * x)``; the benchmark's default for mRMR.

    synthbench's features are centred, with values in ``[-1, 1]``; with the default
    ``scale=20`` each feature gets at most 41 integer states ``-20..20`` (a bin width of 0.05).
    Nothing is rescaled or clipped: values outside ``[-1, 1]`` simply give more states.
    Rounding is half-to-even (:func:`numpy.rint`) and is done in float64.

    Parameters
    ----------
    X : array_like of float, shape (n_samples, n_features)
        Centred features, normally in ``[-1, 1]``; must be finite.
    scale : float, default 20.0
        Number of states per unit of ``x``; must be positive and finite.

    Returns
    -------
    ndarray of int64, shape (n_samples, n_features)
    """
    scale = float(scale)
    if not math.isfinite(scale) or scale <= 0:
        raise ValueError(f"scale must be a positive finite number, got {scale}")
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinite values")
    Z = np.rint(X * scale)
    if Z.size and (Z.min() < _INT32.min or Z.max() > _INT32.max):
        raise ValueError("scale * X does not fit in 32-bit integers; use a smaller scale")
    return Z.astype(np.int64)


def mrmr(X_discrete: np.ndarray, y: np.ndarray, k: int, *, scheme: str = "MIQ") -> list[int]:
    """Select ``k`` features by mRMR, exactly as the reference implementation (pymrmr) does.

    See the module docstring for the estimator, the candidate pool, the tie-breaking and the
    other details of the reference that this function reproduces.

    Parameters
    ----------
    X_discrete : array_like of int, shape (n_samples, n_features)
        Integer-valued features (e.g. from :func:`discretise`); integer-valued floats are
        accepted. Values must fit in 32-bit integers, as the reference reads them as C ``int``.
    y : array_like of int, shape (n_samples,)
        Integer class labels (any number of classes).
    k : int
        Number of features to select, ``1 <= k <= min(n_features, 5000)``.
    scheme : {"MIQ", "MID"}, default "MIQ"
        ``"MIQ"``: relevance / (mean redundancy + 0.0001); ``"MID"``: relevance - mean
        redundancy.

    Returns
    -------
    list of int
        The ``k`` selected column indices, in selection order.

    Raises
    ------
    ValueError
        On shapes that do not match, non-integer or non-finite values, values outside the
        32-bit range, an unknown ``scheme``, or ``k`` outside ``1..min(n_features, 5000)``.
    TypeError
        If ``k`` is not an integer.
    """
    X, yv, k = _validate(X_discrete, y, k, scheme)
    return _Selector(X, yv, scheme).select(k)


def pymrmr_select(X_discrete: np.ndarray, y: np.ndarray, k: int, *, scheme: str = "MIQ") -> list[int]:
    """Select ``k`` features with the reference implementation, ``pymrmr.mRMR``.

    The class goes in the first column of the DataFrame handed to pymrmr and feature ``j``
    in a column named ``"f{j}"``, which maps the answer back to indices. The reference prints
    its tables to the C-level standard output; that output is discarded by redirecting file
    descriptor 1 to ``os.devnull`` for the duration of the call (so output written to it by
    other threads meanwhile is lost too), and restored afterwards, also on error.

    Parameters
    ----------
    X_discrete, y, k, scheme
        As for :func:`mrmr`, and validated the same way.

    Returns
    -------
    list of int
        The ``k`` selected column indices, in selection order.
    """
    import pandas as pd
    import pymrmr

    X, yv, k = _validate(X_discrete, y, k, scheme)
    p = X.shape[1]
    names = [f"f{j}" for j in range(p)]
    frame = pd.DataFrame(X, columns=names)
    frame.insert(0, "class", yv)
    with _silence_c_stdout():
        chosen = pymrmr.mRMR(frame, scheme, k)
    index = {name: j for j, name in enumerate(names)}
    try:
        return [index[name] for name in chosen]
    except KeyError as err:  # pragma: no cover - only if pymrmr misbehaves
        raise RuntimeError(f"pymrmr returned an unexpected column: {err}") from None


def selection_scores(selected: Sequence[int], n_features: int) -> np.ndarray:
    """Turn an ordered selection into per-feature scores.

    Parameters
    ----------
    selected : sequence of int
        Distinct column indices in selection order.
    n_features : int
        Number of features ``p``.

    Returns
    -------
    ndarray of float64, shape (n_features,)
        The i-th selected feature (0-based ``i``) scores ``len(selected) - i``; unselected
        features score 0 (the benchmark's scorer breaks those ties at random).
    """
    selected = [int(j) for j in selected]
    if len(set(selected)) != len(selected):
        raise ValueError("selected contains repeated indices")
    if any(j < 0 or j >= n_features for j in selected):
        raise ValueError(f"selected indices must lie in 0..{n_features - 1}")
    scores = np.zeros(n_features, dtype=np.float64)
    m = len(selected)
    scores[selected] = np.arange(m, 0, -1, dtype=np.float64)
    return scores


def mrmr_scores(X_discrete: np.ndarray, y: np.ndarray, n_select: int, *, scheme: str = "MIQ") -> np.ndarray:
    """Per-feature scores from an mRMR selection of ``n_select`` features.

    Parameters
    ----------
    X_discrete, y, scheme
        As for :func:`mrmr`.
    n_select : int
        Number of features to select (the ``k`` of :func:`mrmr`).

    Returns
    -------
    ndarray of float64, shape (n_features,)
        ``n_select, n_select - 1, ..., 1`` for the selected features in selection order, 0 for
        the others.
    """
    chosen = mrmr(X_discrete, y, n_select, scheme=scheme)
    return selection_scores(chosen, np.shape(X_discrete)[1])


# --------------------------------------------------------------------------------------
# Validation and I/O helpers
# --------------------------------------------------------------------------------------
def _as_integer_array(a: np.ndarray, name: str) -> np.ndarray:
    """Return ``a`` as int64, refusing non-integer, non-finite or out-of-range values."""
    arr = np.asarray(a)
    if arr.dtype == np.bool_:
        return arr.astype(np.int64)
    if np.issubdtype(arr.dtype, np.integer):
        out = arr.astype(np.int64)
    elif np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or infinite values")
        if np.any(arr != np.round(arr)):
            raise ValueError(
                f"{name} must hold integer values; discretise continuous features first, "
                "e.g. with synthbench.selection.mrmr.discretise(X)"
            )
        out = arr.astype(np.int64)
    else:
        raise ValueError(
            f"{name} must be an integer array (got dtype {arr.dtype}); discretise continuous "
            "features first, e.g. with synthbench.selection.mrmr.discretise(X)"
        )
    if out.size and (out.min() < _INT32.min or out.max() > _INT32.max):
        raise ValueError(f"{name} values must fit in 32-bit integers (the reference reads C int)")
    return out


def _validate(X_discrete: np.ndarray, y: np.ndarray, k: int, scheme: str) -> tuple[np.ndarray, np.ndarray, int]:
    """Check the arguments shared by :func:`mrmr` and :func:`pymrmr_select`."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an integer, got {type(k).__name__}")
    k = int(k)
    X = _as_integer_array(X_discrete, "X_discrete")
    if X.ndim != 2:
        raise ValueError(f"X_discrete must be 2-D (n_samples, n_features), got shape {X.shape}")
    n, p = X.shape
    if n < 1 or p < 1:
        raise ValueError(f"X_discrete must have at least one sample and one feature, got shape {X.shape}")
    yv = _as_integer_array(y, "y")
    if yv.ndim != 1 or yv.shape[0] != n:
        raise ValueError(f"y must have shape ({n},) to match X_discrete, got {yv.shape}")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if k > p:
        raise ValueError(f"k={k} exceeds the number of features p={p}")
    if k > POOL_SIZE:
        raise ValueError(f"k={k} exceeds the reference implementation's candidate pool of {POOL_SIZE} features")
    return np.ascontiguousarray(X), yv, k


@contextlib.contextmanager
def _silence_c_stdout() -> Iterator[None]:
    """Send file descriptor 1 to ``os.devnull`` inside the block, flushing both stdio layers."""
    sys.stdout.flush()
    _flush_c_stdio()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        try:
            yield
        finally:
            _flush_c_stdio()  # the C library buffers stdout when it is not a terminal
            os.dup2(saved, 1)
    finally:
        os.close(devnull)
        os.close(saved)


def _flush_c_stdio() -> None:
    """``fflush(NULL)`` in the C library, where it can be reached."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):  # pragma: no cover - platform dependent
        pass


# --------------------------------------------------------------------------------------
# Core
# --------------------------------------------------------------------------------------
def _range_codes(XT: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-variable states as the reference numbers them: ``value - minimum``.

    Parameters
    ----------
    XT : ndarray of int64, shape (p, n)
        One variable per row.

    Returns
    -------
    codes : ndarray of int64, shape (p, n)
        ``0 .. n_states - 1``.
    n_states : ndarray of int64, shape (p,)
        ``max - min + 1`` per variable (states may be empty).
    """
    low = XT.min(axis=1)
    codes = XT - low[:, None]
    return codes, codes.max(axis=1) + 1


def _exact_mi(a: np.ndarray, h: int, B: np.ndarray, widths: np.ndarray) -> np.ndarray:
    """Mutual information (bits) with the reference binary's exact floating-point operations.

    pymrmr compiles ``mrmr.cpp`` with ``-Ofast``; the machine code of ``calMutualInfo(v1=a,
    v2=b)`` computes, with ``H`` and ``W`` the numbers of states of ``a`` and ``b``:

    * ``p(a=i, b=j) = count * (1.0 / n)`` (the division is hoisted as a reciprocal);
    * ``p_b[j]`` = sequential sum over ``i`` of ``p(i, j)``;
    * ``p_a[i]`` = ``(E + O) [+ p(i, W-1) if W is odd]``, with ``E`` and ``O`` the sequential
      sums over the even and the odd ``j < W - W % 2`` (a 2-lane vectorised reduction);
    * the sequential sum, ``j`` outer and ``i`` inner, over non-empty cells, of
      ``p(i,j) * log(p(i,j) / (p_a[i] * p_b[j]))`` with the C library's ``log``;
    * times the constant ``1 / log(2)``.

    This function performs exactly these operations (IEEE double, C ``log`` through
    :func:`math.log`), so its values equal the reference's bit for bit.

    Parameters
    ----------
    a : ndarray of int64, shape (n,)
        States ``0..h-1`` of the first variable (``v1``).
    h : int
    B : ndarray of int64, shape (m, n)
        States of ``m`` second variables (``v2``), row ``c`` in ``0..widths[c]-1``.
    widths : ndarray of int64, shape (m,)

    Returns
    -------
    ndarray of float64, shape (m,)
    """
    m, n = B.shape
    out = np.empty(m, dtype=np.float64)
    recip = 1.0 / n
    limit = max(1 << 12, 8 * n)
    dense = np.flatnonzero(widths * h <= limit)
    for c in np.flatnonzero(widths * h > limit).tolist():
        out[c] = _exact_mi_sparse(a, B[c], int(widths[c]), recip)
    if dense.size == 0:
        return out
    w_cap = int(widths[dense].max())
    block = max(1, _BLOCK_CELLS // max(w_cap * h, n))
    for lo in range(0, dense.size, block):
        rows = dense[lo : lo + block]
        mb = rows.size
        w = widths[rows]
        W = int(w.max())
        cells = W * h
        keys = (np.arange(mb, dtype=np.int64)[:, None] * cells) + B[rows] * h + a[None, :]
        counts = np.bincount(keys.ravel(), minlength=mb * cells).reshape(mb, W, h)
        pab = counts * recip  # [candidate, j (state of b), i (state of a)]
        p_b = np.cumsum(pab, axis=2)[:, :, -1]
        even_cum = np.cumsum(pab[:, 0::2, :], axis=1)
        odd_sum = np.cumsum(pab[:, 1::2, :], axis=1)[:, -1, :] if W >= 2 else np.zeros((mb, h))
        p_a = even_cum[:, -1, :] + odd_sum
        odd_w = np.flatnonzero(w % 2 == 1)
        if odd_w.size:
            wo = w[odd_w]
            idx = (wo - 1) // 2 - 1
            even_excl = np.where((idx >= 0)[:, None], even_cum[odd_w, np.maximum(idx, 0), :], 0.0)
            p_a[odd_w] = (even_excl + odd_sum[odd_w]) + pab[odd_w, wo - 1, :]
        nz = counts > 0
        cand, jj, ii = np.nonzero(nz)
        vals = pab[nz]
        ratio = vals / (p_a[cand, ii] * p_b[cand, jj])
        logs = np.array(list(map(math.log, ratio.tolist())), dtype=np.float64)
        terms = np.zeros((mb, cells), dtype=np.float64)
        terms.reshape(-1)[np.flatnonzero(nz)] = vals * logs
        out[rows] = np.cumsum(terms, axis=1)[:, -1] * _INV_LN2
    return out


def _exact_mi_sparse(a: np.ndarray, b: np.ndarray, w: int, recip: float) -> float:
    """:func:`_exact_mi` for one pair, visiting only the non-empty cells (many states)."""
    keys, counts = np.unique(b * (int(a.max()) + 1) + a, return_counts=True)
    js, is_ = np.divmod(keys, int(a.max()) + 1)  # sorted by j, then i
    cells = list(zip(js.tolist(), is_.tolist(), (counts * recip).tolist()))
    even: dict[int, float] = {}
    odd: dict[int, float] = {}
    last: dict[int, float] = {}
    p_b: dict[int, float] = {}
    for j, i, v in cells:
        if w % 2 == 1 and j == w - 1:
            last[i] = v
        elif j % 2 == 0:
            even[i] = even.get(i, 0.0) + v
        else:
            odd[i] = odd.get(i, 0.0) + v
        p_b[j] = p_b.get(j, 0.0) + v
    acc = 0.0
    for j, i, v in cells:
        p_a = (even.get(i, 0.0) + odd.get(i, 0.0)) + last.get(i, 0.0)
        acc += v * math.log(v / (p_a * p_b[j]))
    return acc * _INV_LN2


def _nr_sort2_order(keys: np.ndarray) -> np.ndarray:
    """Replay Numerical Recipes ``sort2`` (as in pymrmr's ``sort2.cpp``) on float32 keys.

    Returns the permutation it applies: ``order[r]`` is the original position of the element
    that ends at rank ``r`` (ascending keys). Where all keys are distinct any sort gives the
    same answer, so a stable numpy sort is used; otherwise the quicksort is replayed step by
    step, as it decides the order of ties.
    """
    n = keys.size
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    if n < 2 or not np.any(sorted_keys[1:] == sorted_keys[:-1]):
        return order
    arr: list[float] = [0.0] + keys.astype(np.float64).tolist()  # 1-based, as in the C code
    brr: list[int] = [0] + list(range(n))
    M, NSTACK = 7, 50
    istack = [0] * (NSTACK + 1)
    jstack = 0
    l, ir = 1, n
    while True:
        if ir - l < M:
            for j in range(l + 1, ir + 1):
                a, b = arr[j], brr[j]
                i = j - 1
                while i >= 1:
                    if arr[i] <= a:
                        break
                    arr[i + 1] = arr[i]
                    brr[i + 1] = brr[i]
                    i -= 1
                arr[i + 1] = a
                brr[i + 1] = b
            if jstack == 0:
                return np.asarray(brr[1:], dtype=np.int64)
            ir = istack[jstack]
            l = istack[jstack - 1]
            jstack -= 2
        else:
            k = (l + ir) >> 1
            arr[k], arr[l + 1] = arr[l + 1], arr[k]
            brr[k], brr[l + 1] = brr[l + 1], brr[k]
            if arr[l + 1] > arr[ir]:
                arr[l + 1], arr[ir] = arr[ir], arr[l + 1]
                brr[l + 1], brr[ir] = brr[ir], brr[l + 1]
            if arr[l] > arr[ir]:
                arr[l], arr[ir] = arr[ir], arr[l]
                brr[l], brr[ir] = brr[ir], brr[l]
            if arr[l + 1] > arr[l]:
                arr[l + 1], arr[l] = arr[l], arr[l + 1]
                brr[l + 1], brr[l] = brr[l], brr[l + 1]
            i, j = l + 1, ir
            a, b = arr[l], brr[l]
            while True:
                i += 1
                while arr[i] < a:
                    i += 1
                j -= 1
                while arr[j] > a:
                    j -= 1
                if j < i:
                    break
                arr[i], arr[j] = arr[j], arr[i]
                brr[i], brr[j] = brr[j], brr[i]
            arr[l] = arr[j]
            arr[j] = a
            brr[l] = brr[j]
            brr[j] = b
            jstack += 2
            if jstack > NSTACK:  # pragma: no cover - needs more than 2**25 features
                raise RuntimeError("NSTACK too small in sort2")
            if ir - i + 1 >= j - l:
                istack[jstack] = ir
                istack[jstack - 1] = i
                ir = j - 1
            else:
                istack[jstack] = j - 1
                istack[jstack - 1] = l
                l = i


def _clogc_of_runs(keys: np.ndarray, clogc: np.ndarray) -> np.ndarray:
    """``sum over distinct values v of count(v) * ln count(v)``, per row of ``keys`` (m, n)."""
    m, n = keys.shape
    out = np.empty(m, dtype=np.float64)
    block = max(1, _BLOCK_CELLS // n)
    for lo in range(0, m, block):
        s = np.sort(keys[lo : lo + block], axis=1)
        mb = s.shape[0]
        start = np.ones((mb, n), dtype=bool)
        start[:, 1:] = s[:, 1:] != s[:, :-1]
        first = np.flatnonzero(start.ravel())
        runs = np.diff(np.append(first, mb * n))
        out[lo : lo + mb] = np.bincount(first // n, weights=clogc[runs], minlength=mb)
    return out


class _Selector:
    """State of one mRMR run: codes in pool order, relevance, running redundancy."""

    def __init__(self, X: np.ndarray, y: np.ndarray, scheme: str) -> None:
        n, p = X.shape
        self.n = n
        self.scheme = scheme
        codes, states = _range_codes(np.ascontiguousarray(X.T))  # (p, n)
        y_codes, y_states = _range_codes(y[None, :])
        # Relevance I(class; feature), bit-identical to the reference (v1 = class, v2 = feature).
        relevance = _exact_mi(y_codes[0], int(y_states[0]), codes, states)
        keys = (-relevance).astype(np.float32)  # mival[] is a float array in the reference
        order = _nr_sort2_order(keys)
        pool = order[: min(POOL_SIZE, p)]
        # Everything below is in pool (rank) order.
        self.pool = pool
        self.codes = codes[pool]  # (m, n)
        self.states = states[pool]
        self.relevance = relevance[pool]
        self.b_max = int(self.states.max())
        # Fast-path tables: c * ln(c), and sum over states of count * ln(count) per feature.
        self.clogc = np.zeros(n + 1, dtype=np.float64)
        c = np.arange(1, n + 1, dtype=np.float64)
        self.clogc[1:] = c * np.log(c)
        m = pool.size
        if self.b_max <= 16 * n:
            marg = np.bincount(
                (np.arange(m, dtype=np.int64)[:, None] * self.b_max + self.codes).ravel(), minlength=m * self.b_max
            )
            self.h_cand = self.clogc[marg].reshape(m, self.b_max).sum(axis=1)
        else:
            self.h_cand = _clogc_of_runs(self.codes, self.clogc)
        self.nonempty = np.array([np.unique(r).size for r in self.codes]) if self.b_max > n else self.states
        # Error bound of one fast MI value (bits) per unit of (cells + states); see _fast_mi.
        self.bound_unit = 2.0 * _EPS * (4.0 * math.log(max(n, 2)) + 1.0) / _LN2
        self.red_sum = np.zeros(m, dtype=np.float64)
        self.red_err = np.zeros(m, dtype=np.float64)
        self.available = np.ones(m, dtype=bool)
        self.chosen: list[int] = []  # pool positions
        self.exact_cache: dict[tuple[int, int], float] = {}

    # ---- fast redundancy -------------------------------------------------------------
    def _fast_mi(self, pos: int) -> tuple[np.ndarray, np.ndarray]:
        """Mutual information (bits) of pool feature ``pos`` with every pool feature.

        Uses ``I = (ln n + (sum c ln c - sum a ln a - sum b ln b) / n) / ln 2`` on the joint
        counts. Returns the values and a bound on their distance from the reference's values:
        the rounding error of either computation is at most about ``(cells + states) * eps``
        times ``O(ln n)`` (every term is bounded by ``n ln n`` here and every log-ratio by
        ``ln n`` there); the bound takes twice the sum of both.
        """
        n, m, b_max = self.n, self.pool.size, self.b_max
        a = self.codes[pos]
        n_a = int(self.states[pos])
        cells = n_a * b_max
        if cells <= 16 * n:
            joint = np.empty(m, dtype=np.float64)
            block = max(1, _BLOCK_CELLS // max(cells, n))
            a_off = a * b_max
            for lo in range(0, m, block):
                hi = min(m, lo + block)
                mb = hi - lo
                keys = (np.arange(mb, dtype=np.int64)[:, None] * cells) + a_off[None, :] + self.codes[lo:hi]
                counts = np.bincount(keys.ravel(), minlength=mb * cells)
                joint[lo:hi] = self.clogc[counts].reshape(mb, cells).sum(axis=1)
        else:  # many states: count the pairs by sorting instead of a dense table
            joint = _clogc_of_runs(a[None, :] * b_max + self.codes, self.clogc)
        mi = (math.log(n) + (joint - self.h_cand[pos] - self.h_cand) / n) / _LN2
        nnz = np.minimum(n, self.nonempty[pos] * self.nonempty)
        bound = (nnz + n_a + self.states + 30) * self.bound_unit
        return mi, bound

    # ---- exact scores ---------------------------------------------------------------
    def _exact_scores(self, cand: np.ndarray) -> np.ndarray:
        """Scores of pool positions ``cand`` in the reference's exact floating-point order."""
        rel = self.relevance[cand]
        k = len(self.chosen)
        if self.scheme == "MIQ":
            need = cand[rel != 0.0]  # 0 / (positive) is exactly 0 whatever the redundancy
        else:
            need = cand
        red = {int(c): 0.0 for c in need}
        for s in self.chosen:
            missing = [int(c) for c in need if (s, int(c)) not in self.exact_cache]
            if missing:
                vals = _exact_mi(self.codes[s], int(self.states[s]), self.codes[missing], self.states[missing])
                for c, v in zip(missing, vals.tolist()):
                    self.exact_cache[(s, c)] = v
            for c in red:
                red[c] = self.exact_cache[(s, c)] + red[c]
        scores = np.zeros(cand.size, dtype=np.float64)
        for t, c in enumerate(cand.tolist()):
            if c not in red:
                continue
            r = red[c] / k
            scores[t] = rel[t] / (r + 0.0001) if self.scheme == "MIQ" else rel[t] - r
        return scores

    # ---- selection -------------------------------------------------------------------
    def _pick(self, pos: int) -> None:
        self.available[pos] = False
        self.chosen.append(pos)

    def select(self, k: int) -> list[int]:
        """Run the selection for ``k`` picks; returns original column indices."""
        self._pick(0)  # the top-ranked feature
        while len(self.chosen) < k:
            mi, bound = self._fast_mi(self.chosen[-1])
            self.red_sum += mi
            self.red_err += bound + 2.0 * _EPS * np.abs(self.red_sum)
            n_sel = len(self.chosen)
            red = self.red_sum / n_sel
            red_err = self.red_err / n_sel + 2.0 * _EPS * np.abs(red)
            rel = self.relevance
            if self.scheme == "MIQ":
                d = red + 0.0001
                d_lo = d - red_err
                with np.errstate(divide="ignore", invalid="ignore"):
                    score = rel / d
                    err = np.where(d_lo > 0, np.abs(rel) * red_err / (d * d_lo), np.inf)
                err = np.where(rel == 0.0, 0.0, err + 4.0 * _EPS * np.abs(score))
                score = np.where(rel == 0.0, 0.0, score)
            else:
                score = rel - red
                err = red_err + 4.0 * _EPS * (np.abs(rel) + np.abs(red))
            avail = np.flatnonzero(self.available)
            s_av, e_av = score[avail], err[avail]
            best = int(np.argmax(s_av))
            near = avail[s_av + e_av >= s_av[best] - e_av[best]]
            if near.size == 1:
                self._pick(int(near[0]))
                continue
            exact = self._exact_scores(near)  # near is in pool order: the first maximum wins
            self._pick(int(near[int(np.argmax(exact))]))
        return [int(self.pool[pos]) for pos in self.chosen]
