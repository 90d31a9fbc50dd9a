"""Fixed-seed regression: a small grid's scores are pinned in tests/golden/small_grid.csv.

Any change that moves a score fails here until the golden file is deliberately regenerated::

    python tests/test_golden.py --update
"""

import sys
from pathlib import Path

import pandas as pd

from synthbench.runner.execute import execute
from synthbench.runner.grid import GridSpec
from synthbench.runner.store import ResultStore

GOLDEN = Path(__file__).parent / "golden" / "small_grid.csv"
GRID = GridSpec(
    datasets=("xor", "ring_xor_sum", "switch", "hypercube"),
    methods=(
        "random",
        "rf",
        "treeshap",
        "mi",
        "anova",
        "mrmr",
        "saliency",
        "integrated_gradients",
        "deeplift",
        "guided_backprop",
        "lrp_epsilon",
        "smoothgrad",
        "shapley_sampling",
    ),
    decoys=(0, 8),
    n_samples=120,
    n_folds=2,
    seed=2023,
)
KEY = ["dataset", "n_decoys", "fold", "method", "metric"]


def compute(store_path: Path) -> pd.DataFrame:
    cells = GRID.cells()
    with ResultStore(store_path) as store:
        summary = execute(cells, store)
        assert summary.failed == 0
        rows = store.scores(c.cell_id for c in cells)
    return rows[[*KEY, "value"]].sort_values(KEY).reset_index(drop=True)


def test_small_grid_matches_golden_file(tmp_path):
    got = compute(tmp_path / "golden.sqlite")
    want = pd.read_csv(GOLDEN).sort_values(KEY).reset_index(drop=True)
    pd.testing.assert_frame_equal(got[KEY], want[KEY], check_dtype=False)
    pd.testing.assert_series_equal(got["value"], want["value"], check_exact=False, rtol=0, atol=1e-9)


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/test_golden.py --update")
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        frame = compute(Path(tmp) / "golden.sqlite")
    frame.to_csv(GOLDEN, index=False, float_format="%.12g")
    print(f"wrote {len(frame)} rows to {GOLDEN}")
