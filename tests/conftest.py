"""Shared fixtures: small folds built by hand or from the generators.

The suite runs in one pytest-xdist worker per usable core (``-n auto`` in pyproject.toml; see
:func:`pytest_xdist_auto_num_workers`). Each worker is pinned to its own share of the cores before
torch is imported, so torch, OpenMP and the runner's serial executor (:func:`~synthbench.machine.usable_cores`)
size their threads to that share instead of all running one thread per core of the machine.
"""

import os
from contextlib import ExitStack, contextmanager


def _pin_this_worker() -> None:
    """Restrict a pytest-xdist worker ``gwI`` of ``N`` to every ``N``-th usable core from the ``I``-th."""
    worker, count = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if worker is None or count is None or not hasattr(os, "sched_setaffinity"):
        return
    cores = sorted(os.sched_getaffinity(0))
    index, count = int(worker.removeprefix("gw")), int(count)
    try:
        os.sched_setaffinity(0, cores[index % len(cores) :: max(1, min(count, len(cores)))])
    except OSError:  # a sandbox that forbids it: the workers share the cores, as unpinned processes do
        pass


_pin_this_worker()  # before torch and numpy start their thread pools

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from synthbench.datasets import Dataset  # noqa: E402
from synthbench.protocol import FoldData, dataset_folds  # noqa: E402


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker per core this process may use (its affinity), not per core of the machine."""
    from synthbench.machine import usable_cores

    return usable_cores()


@pytest.fixture
def global_random_state_restored():
    """Save numpy's and torch's global random state and restore it after the test (reference libraries such
    as Quantus seed them)."""
    numpy_state = np.random.get_state()
    with torch.random.fork_rng(devices=[]):
        yield
    np.random.set_state(numpy_state)


def fold_of(ds: Dataset, fold: int = 0, n_folds: int = 3) -> FoldData:
    """The ``fold``-th fold of ``ds`` under the benchmark protocol (tables: columns permuted)."""
    f = dataset_folds(ds, n_folds=n_folds, seed=ds.seed)[fold]
    return FoldData.from_dataset(ds, f)


def tiny_dataset(p: int = 1, n: int = 90, seed: int = 0) -> Dataset:
    """A threshold rule on column 0 plus ``p - 1`` noise columns (values in [-1, 1])."""
    g = np.random.default_rng(seed)
    X = g.uniform(-1, 1, size=(n, p)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    relevant = np.zeros(p, dtype=bool)
    relevant[0] = True
    return Dataset(X, y, relevant, None, "tiny", {"p": p}, seed)


@pytest.fixture
def tiny_fold():
    return fold_of(tiny_dataset(p=4))


def registries():
    """Every registry of synthbench: datasets, methods, model kinds, presets, attribution functions, scorers."""
    from synthbench import attribution, datasets, methods, models, scoring
    from synthbench.models import presets

    return (
        datasets.DATASETS,
        methods.METHODS,
        models.MODEL_KINDS,
        presets.PRESETS,
        attribution.ATTRIBUTION_METHODS,
        scoring.SCORERS,
    )


@contextmanager
def registrations_undone():
    """Every registration made in the ``with`` block, in any registry, undone at its end (a plugin imported by a
    test)."""
    with ExitStack() as stack:
        for registry in registries():
            stack.enter_context(registry.restoring())
        yield


def captum_perm_func(perms):
    """captum's ``perm_func`` that permutes column ``j`` of a ``(n, p)`` batch by ``perms[j]`` (``perms`` (p, n)),
    so captum's FeaturePermutation uses the permutations given to ours."""
    p = perms.shape[0]

    def perm_func(inp, mask):
        j = int(torch.nonzero(mask.reshape(-1, p)[0])[0])
        out = inp.clone()
        out[:, j] = inp[perms[j], j]
        return out

    return perm_func


#: Tolerance of a float64 cross-check against captum, relative to the reference map's largest magnitude.
#: Both sides compute in float64 (agreement to ~1e-15 whatever the CPU's kernels; max-pooling near-ties no
#: longer fall apart), except that captum's integrated-gradients step sizes are a float32 tensor
#: (``torch.tensor`` of Python floats): each step weight is off by at most 2**-24 relatively, ~1e-8 of the
#: map's scale on the folds tested. 1e-6 leaves room for that and nothing else.
FLOAT64_RTOL = 1e-6


def in_float64(model, data: FoldData):
    """A float64 copy of a trained network (its ``module`` deep-copied and cast; the rest shared) and the fold
    with its explained rows in float64: a method run on them (``run_method(..., model=copy)``) computes in float64."""
    import copy
    import dataclasses

    twin = copy.copy(model)
    twin.module = copy.deepcopy(model.module).double()
    return twin, dataclasses.replace(data, X_explain=np.asarray(data.X_explain, dtype=np.float64))


def _as_array(ref) -> np.ndarray:
    return ref.detach().numpy() if isinstance(ref, torch.Tensor) else np.asarray(ref)


def _float64_excess(ours: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """``|ours - ref|`` beyond ``FLOAT64_RTOL * max|ref|``, element by element (positive where it fails)."""
    return np.abs(ours - ref) - FLOAT64_RTOL * np.abs(ref).max()


def assert_float64_close(ours: np.ndarray, ref, name: str) -> None:
    """``|ours - ref| <= FLOAT64_RTOL * max|ref|`` element by element, both float64, the reference not all zero."""
    ref = _as_array(ref)
    assert ours.dtype == ref.dtype == np.float64, (name, ours.dtype, ref.dtype)
    assert np.abs(ref).max() > 0, name
    excess = _float64_excess(ours, ref)
    assert (excess <= 0).all(), (
        f"{name}: {(excess > 0).sum()} of {excess.size} elements differ beyond "
        f"{FLOAT64_RTOL:g} of the scale, worst by {excess.max():.3g}"
    )


def differs_beyond_float64_tolerance(ours: np.ndarray, ref) -> bool:
    """Whether ``ours`` fails :func:`assert_float64_close` against ``ref`` (a deliberately wrong reference)."""
    return bool((_float64_excess(ours, _as_array(ref)) > 0).any())
