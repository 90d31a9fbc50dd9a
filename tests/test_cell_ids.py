"""Cell ids are users' keys into their stores: a changed id orphans every stored result.

tests/golden/cell_ids.json was written at commit 362e227 (before the issue-21 restructuring) from
the grids below; any change that moves an id fails here. Cells added to those grids since (a
control judged on another model, issue 22) are checked apart: they must not take a pinned id.
"""

from __future__ import annotations

import json
from pathlib import Path

from synthbench.runner.grid import GridSpec

GOLDEN = Path(__file__).parent / "golden" / "cell_ids.json"

GRIDS = [
    GridSpec(
        datasets=("xor",),
        methods=("saliency", "rf", "random", "smoothgrad"),
        decoys=(10,),
        n_samples=200,
        n_folds=2,
        models=("passemiers2023", "sparse_mlp", "dense_mlp", "passemiers2023_corrected"),
        scorers=("ground_truth", "roar"),
        scorer_options={"repeats": 2},
    ),
    GridSpec(
        datasets=("shapes", "digits"),
        methods=("saliency", "sobel", "random"),
        decoys=(4,),
        n_samples=100,
        n_folds=2,
        models=("cnn",),
        scorers=("ground_truth", "road", "kar"),
    ),
]


def test_cell_ids_are_those_stores_were_written_with():
    cells = [c for spec in GRIDS for c in spec.cells()]
    ids = {
        f"{c.dataset}/{c.n_decoys}/{c.fold}/{c.method}@{c.model}/{c.scorer}": c.cell_id
        for c in cells
        if c.judged is None
    }
    assert ids == json.loads(GOLDEN.read_text())
    # the only cells added since: the random control judged on the forest rf explains, under roar (issue 22)
    added = [c for c in cells if c.judged is not None]
    assert sorted((c.dataset, c.fold, c.method, c.judged, c.scorer, c.model) for c in added) == [
        ("xor", f, "random", "forest", "roar", None) for f in (0, 1)
    ]
    assert not {c.cell_id for c in added} & set(ids.values())


def test_a_cell_whose_method_needs_the_booster_names_the_boosters_training_in_its_id():
    # the booster's histogram bins changed from LightGBM's 255 and its screening rounds took a budget (issue 45): its
    # cells take new ids, others keep theirs
    spec = GridSpec(datasets=("xor",), methods=("gbm_treeshap", "mrmr"), decoys=(10,), n_samples=200, n_folds=2)
    configs = {c.method: c.config() for c in spec.cells()}
    assert configs["gbm_treeshap"]["models"] == {"gbm": {"max_bin": 63, "screen_budget": 30000}}
    assert "models" not in configs["mrmr"]
