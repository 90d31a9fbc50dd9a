"""Does the lassonet release change LassoNet's path as the 2023 benchmark called it? Prints the importances of one
ring fold (m features, 833 training rows, fixed split and torch seeds) and saves them, for comparing two releases.

The authors' results for LassoNet date from August 2023, when the package's release was 0.0.14; synthbench installs
a newer one (its batched path, ``synthbench.methods.lassonet_path``, is that release's to the bit). Usage::

    pip download lassonet==0.0.14 --no-deps -d /tmp/ln14 && pip install --no-deps --target /tmp/ln14lib /tmp/ln14/*.whl
    python benchmarks/reproduction_probes/lassonet_versions.py 16 /tmp/new.npy
    PYTHONPATH=/tmp/ln14lib python benchmarks/reproduction_probes/lassonet_versions.py 16 /tmp/old.npy
    python -c "import numpy as np; print(np.array_equal(np.load('/tmp/new.npy'), np.load('/tmp/old.npy')))"

2026-12-07, m = 16: 0.0.14 and 0.0.21 both took 207 path steps (170 and 181 s) and gave the same importances to
the bit; the two ring features left last, at lambda 189.9.
"""

from __future__ import annotations

import contextlib
import io
import sys
import time

import lassonet
import numpy as np
import torch


def main() -> None:
    m, out = int(sys.argv[1]), sys.argv[2]
    rng = np.random.RandomState(7)
    u = rng.rand(1000, m)
    y = (np.abs(np.sqrt((u[:, 0] - 0.5) ** 2 + (u[:, 1] - 0.5) ** 2) - 0.35) <= 0.1151).astype(int)  # ring
    X = 2 * u - 1
    torch.set_num_threads(1)
    model = lassonet.LassoNetClassifier(
        hidden_dims=(32, 32),
        n_iters=(30, 30),
        batch_size=64,
        dropout=0,
        patience=10,
        lambda_start=3.2768,
        tol=0.9999,
        verbose=False,
        random_state=3,
        torch_seed=5,
        device="cpu",
    )
    start = time.time()
    with contextlib.redirect_stdout(io.StringIO()):  # 0.0.14 prints every epoch
        path = model.path(X[:833], y[:833])
    importances = model.feature_importances_.numpy()
    np.save(out, importances)
    print(f"lassonet at {lassonet.__file__}: {len(path)} steps in {time.time() - start:.0f} s")
    print("importances of the two ring features:", importances[:2], "the largest other:", importances[2:].max())


if __name__ == "__main__":
    main()
