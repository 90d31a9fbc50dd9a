"""A plugin written from the documentation's "Write your own" page alone, as a new user would: an image
dataset and a method. Copied by tests/test_plugin_report.py into a temporary folder and passed to
``python -m synthbench.run --plugin ./my_plugins.py``.

``bars``: a dark 10x10 image with one bright bar, horizontal (class 0) or vertical (class 1), among
``n_decoys`` bright single pixels; the mask is the bar. ``bar_contrast``: each pixel's brightness
above its image's median, a map with no model.
"""

import numpy as np

from synthbench.datasets import Dataset, register
from synthbench.methods import register_method
from synthbench.protocol import MethodOutput


@register(
    "bars",
    description="images: a bright bar whose orientation is the class (0 horizontal, 1 vertical) "
    "among n_decoys bright pixels; mask = the bar",
    family="my plugins",
    kind="image",
)
def bars(*, n_samples: int, n_decoys: int = 2, seed: int, size: int = 10, length: int = 5) -> Dataset:
    rng = np.random.default_rng(seed)
    y = np.arange(n_samples) % 2
    rng.shuffle(y)
    X = rng.uniform(0.0, 0.2, size=(n_samples, 1, size, size))
    masks = np.zeros(X.shape, dtype=bool)
    for i in range(n_samples):
        along, across = rng.integers(0, size - length + 1), rng.integers(0, size)
        if y[i] == 0:
            masks[i, 0, across, along : along + length] = True
        else:
            masks[i, 0, along : along + length, across] = True
        free = np.flatnonzero(~masks[i, 0].ravel())
        dots = rng.choice(free, size=n_decoys, replace=False)
        X[i, 0].flat[dots] = 1.0
    X[masks] = 1.0
    return Dataset(
        X.astype(np.float32),
        y.astype(np.int64),
        None,
        masks,
        "bars",
        {"n_decoys": n_decoys, "size": size, "length": length},
        seed,
    )


@register_method(
    "bar_contrast",
    description="images: brightness above the image's median (no model)",
    inputs=("image",),
    default=False,
)
def bar_contrast(data, models, rng):
    X = data.X_explain.astype(np.float64)
    maps = np.clip(X - np.median(X, axis=(1, 2, 3), keepdims=True), 0.0, None)
    return MethodOutput(maps.mean(axis=0), maps)
