"""Frozen suites: the shipped 2023 protocol, user suite files, the hash stored with every result."""

from __future__ import annotations

import sqlite3

import pytest

from synthbench import datasets
from synthbench import run as cli
from synthbench.methods import get_method
from synthbench.suites import SuiteError, load_suite, suite_names

PAPER_METHODS = {
    "saliency",
    "integrated_gradients_nomul",
    "deeplift_nomul",
    "input_x_gradient",
    "smoothgrad_saliency",
    "guided_backprop_captum",
    "deconvolution_captum",
    "feature_ablation",
    "feature_permutation",
    "shapley_sampling",
    "lassonet_2023",
    "concrete_autoencoder_2023",
    "fsnet_2023",
    "cancelout_softmax_2023",
    "cancelout_sigmoid_2023",
    "deeppink_2023",
    "mrmr",
    "mi",
    "relief_1nn",
    "rf",
    "treeshap_all_rows",
}
POWERS = [8, 16, 32, 64, 128, 256, 512, 1024, 2048]


def test_passemiers2023_is_the_papers_grid():
    assert "passemiers2023" in suite_names()
    suite = load_suite("passemiers2023")
    cells = suite.cells()
    k = {"ring": 2, "xor": 2, "ring_xor": 4, "ring_xor_sum": 6}
    features = {name: sorted({c.n_decoys + k[name] for c in cells if c.dataset == name}) for name in k}
    assert features == {
        "ring": [2, 4, *POWERS],
        "xor": [2, 4, *POWERS],
        "ring_xor": [4, *POWERS],
        "ring_xor_sum": [6, *POWERS],
    }
    dag = [c for c in cells if c.dataset == "dag"]
    assert {c.n_decoys for c in dag} == {0}
    # The paper fed its attribution methods 2x - 1 and standardised dag's columns for every other method.
    scaling = {c.method: dict(c.dataset_params).get("scaling", "centred") for c in dag}
    assert scaling == {m: "centred" if get_method(m).uses_preset else "standardised" for m in PAPER_METHODS}
    assert datasets.make("dag", n_samples=1000, n_decoys=0, seed=0).n_features == 2000
    assert {c.method for c in cells} == PAPER_METHODS
    assert {(c.n_samples, c.n_folds, c.explain) for c in cells} == {(1000, 6, "test")}
    n_configs = 11 + 11 + 10 + 10 + 1
    assert len(cells) == n_configs * 6 * len(PAPER_METHODS) == len({c.cell_id for c in cells})
    assert {c.suite for c in cells} == {("passemiers2023", suite.hash)}
    neural = {c.method for c in cells if c.model is not None}
    assert {c.model for c in cells if c.model is not None} == {"passemiers2023"}  # the paper's MLP as its code ran
    assert neural == {m for m in PAPER_METHODS if get_method(m).uses_preset} and "saliency" in neural


def test_the_corrected_suite_is_the_same_grid_on_the_corrected_mlp():
    faithful, corrected = load_suite("passemiers2023").cells(), load_suite("passemiers2023_corrected").cells()
    # The faithful suite runs captum's guided backprop and deconvolution (the gradient on its LeakyReLU net), the
    # paper's 1-NN Relief, its TreeSHAP over all rows, its LassoNet call, its CancelOuts and its DeepPINK.
    same = {"relief_1nn": "relief", "treeshap_all_rows": "treeshap"}

    def strip(c):
        return c.dataset, c.n_decoys, c.fold, same.get(c.method, c.method.removesuffix("_captum").removesuffix("_2023"))

    assert sorted(map(strip, faithful)) == sorted(map(strip, corrected))
    assert {c.model for c in corrected if c.model} == {"passemiers2023_corrected"}
    assert not {c.cell_id for c in faithful} & {c.cell_id for c in corrected}


TINY = """
name = "tiny"
version = 1
description = "{description}"
n_samples = 60
folds = 2
seed = 4
methods = ["random", "anova"]

[[grid]]
datasets = ["xor"]
n_features = [2, 5]

[[grid]]
datasets = ["ring"]
n_decoys = [1]
"""


def test_a_grid_block_may_explain_rows_of_its_own(tmp_path):
    path = tmp_path / "explain.toml"
    path.write_text(
        TINY.format(description="x").replace("seed = 4", 'seed = 4\nexplain = "test:9"') + 'explain = "train"\n'
    )
    cells = load_suite(path).cells()
    assert {(c.dataset, c.explain) for c in cells} == {("xor", "test:9"), ("ring", "train")}


def test_a_grid_block_may_name_its_own_methods(tmp_path):
    path = tmp_path / "blocks.toml"
    path.write_text(TINY + 'methods = ["anova"]\n')  # the ring block's own list
    cells = load_suite(path).cells()
    assert {c.method for c in cells if c.dataset == "xor"} == {"random", "anova"}
    assert {c.method for c in cells if c.dataset == "ring"} == {"anova"}
    path.write_text(TINY + 'methods = ["no_such_method"]\n')
    with pytest.raises(SuiteError, match="grid block 2: unknown methods 'no_such_method'"):
        load_suite(path)
    path.write_text(TINY + "methods = []\n")
    with pytest.raises(SuiteError, match="grid block 2: 'methods' must be a non-empty list"):
        load_suite(path)


def test_a_suite_runs_every_block_at_each_of_its_seeds_with_the_blocks_own_models_scorers_and_options(tmp_path):
    path = tmp_path / "seeds.toml"
    text = TINY.format(description="seeds").replace("seed = 4", "seeds = [4, 7, 9]")
    path.write_text(
        text + 'models = ["sparse_mlp"]\nscorers = ["ground_truth", "road"]\n[grid.scorer_options]\nfractions = [0.5]\n'
    )
    suite = load_suite(path)
    cells = suite.cells()
    xor, ring = [c for c in cells if c.dataset == "xor"], [c for c in cells if c.dataset == "ring"]
    assert {c.seed for c in xor} == {c.seed for c in ring} == {4, 7, 9}
    assert len(xor) == 3 * 2 * 2 * 2  # seeds x decoy counts x folds x methods, the ground truth alone
    assert {c.scorer for c in xor} == {"ground_truth"} and {c.scorer for c in ring} == {"ground_truth", "road"}
    ring_grid = next(g for g in suite.grids if g.datasets == ("ring",))
    assert ring_grid.models == ("sparse_mlp",) and ring_grid.scorer_options == {"fractions": [0.5]}
    assert {c.model for c in ring if c.method == "random" and c.scorer == "road"} == {"sparse_mlp"}


def test_a_block_may_run_at_some_of_the_suites_seeds_only(tmp_path):
    path = tmp_path / "seeds.toml"
    text = TINY.format(description="seeds").replace("seed = 4", "seeds = [4, 7, 9]")
    path.write_text(text + "seeds = [7]\n")  # the ring block at seed 7 alone
    cells = load_suite(path).cells()
    assert {c.seed for c in cells if c.dataset == "xor"} == {4, 7, 9}
    assert {c.seed for c in cells if c.dataset == "ring"} == {7}
    path.write_text(text + "seeds = [7, 8]\n")
    with pytest.raises(SuiteError, match=r"grid block 2: the block's seeds \[7, 8\] must be among the suite's"):
        load_suite(path)
    path.write_text(text + "seeds = []\n")
    with pytest.raises(SuiteError, match="grid block 2: seeds must be"):
        load_suite(path)


def test_blocks_that_overlap_give_each_cell_once_in_file_order(tmp_path):
    path = tmp_path / "overlap.toml"
    text = TINY.format(description="overlap").replace('datasets = ["ring"]', 'datasets = ["xor", "ring"]')
    path.write_text(text.replace("n_decoys = [1]", "n_features = [5]"))  # xor at 5 features in both blocks
    cells = load_suite(path).cells()
    ids = [c.cell_id for c in cells]
    assert len(ids) == len(set(ids)) == 2 * 2 * 2 + 2 * 2  # xor: 2 sizes x 2 folds x 2 methods; ring: 2 x 2
    assert [(c.dataset, c.n_decoys) for c in cells][:4] == [("xor", 0)] * 4  # the first block's order kept


def test_a_block_may_draw_its_own_sample_size(tmp_path):
    path = tmp_path / "sizes.toml"
    text = TINY.format(description="sizes")
    path.write_text(text + "n_samples = 30\n")  # the ring block on 30 rows, the xor block on the suite's 60
    cells = load_suite(path).cells()
    assert {c.n_samples for c in cells if c.dataset == "xor"} == {60}
    assert {c.n_samples for c in cells if c.dataset == "ring"} == {30}
    for bad in ("1", "30.5", '"30"'):
        path.write_text(text + f"n_samples = {bad}\n")
        with pytest.raises(SuiteError, match="grid block 2: 'n_samples' must be an integer, at least the 2 folds"):
            load_suite(path)


def test_a_user_suite_runs_and_its_hash_is_stored_and_enters_the_cell_ids(tmp_path, capsys):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY.format(description="first"))
    store = tmp_path / "r.sqlite"
    assert cli.main(["--suite", str(path), "--store", str(store), "--jobs", "1", "--quiet"]) == 0
    first = load_suite(path)
    rows = sqlite3.connect(store).execute("SELECT DISTINCT dataset, n_decoys, suite, suite_hash FROM cells").fetchall()
    assert sorted(rows) == [
        ("ring", 1, "tiny", first.hash),
        ("xor", 0, "tiny", first.hash),
        ("xor", 3, "tiny", first.hash),
    ]
    assert "12 cells run, 0 already" in capsys.readouterr().out

    assert cli.main(["--suite", str(path), "--store", str(store), "--jobs", "1", "--quiet"]) == 0
    assert "0 cells run, 12 already" in capsys.readouterr().out

    path.write_text(TINY.format(description="edited"))  # any edit: a new hash, new cells, nothing mixed
    second = load_suite(path)
    assert second.hash != first.hash
    assert not {c.cell_id for c in first.cells()} & {c.cell_id for c in second.cells()}
    assert cli.main(["--suite", str(path), "--store", str(store), "--jobs", "1", "--quiet"]) == 0
    assert "12 cells run, 0 already" in capsys.readouterr().out


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda t: t.replace('name = "tiny"\n', ""), "'name' must be a str"),
        (lambda t: t.replace('"anova"', '"nope"'), "unknown methods 'nope'"),
        (lambda t: t.replace('["xor"]', '["nope"]'), "unknown datasets 'nope'"),
        (lambda t: t.replace("[2, 5]", "[1, 5]"), "n_features [1] below the 2 relevant features of 'xor'"),
        (lambda t: t.replace("n_decoys = [1]", "n_decoys = [1]\nn_features = [3]"), "exactly one of"),
        (lambda t: t.replace("n_decoys = [1]", "n_decoys = [-1]"), "non-negative integers"),
        (lambda t: t.replace("folds = 2", "folds = 1"), "folds >= 2"),
        (lambda t: t + "\n[[[", "not valid TOML"),
        (
            lambda t: t.replace("seed = 4", 'seed = 4\nmodels = ["nope"]'),
            "'models' must be a non-empty list of presets",
        ),
        (lambda t: t.replace("seed = 4", "seed = 4\nseeds = [1, 2]"), "exactly one of 'seed' and 'seeds'"),
        (lambda t: t.replace("seed = 4", "seeds = []"), "'seeds' a non-empty list"),
        (lambda t: t.replace("seed = 4", "seeds = [1, 1]"), "'seeds' repeats a seed"),
        (lambda t: t.replace("seed = 4", "seeds = [1, -2]"), "seeds must be non-negative integers"),
        (lambda t: t + 'scorers = ["nope"]\n', "grid block 2: 'scorers' must be a non-empty list of scorers"),
        (lambda t: t + "scorer_options = 3\n", "grid block 2: 'scorer_options' must be a table"),
        (lambda t: t + "[grid.scorer_options]\nrepeats = 2\n", "no scorer of ground_truth takes the option"),
        (lambda t: t.replace("seed = 4", 'seed = 4\nexplain = "test:0"'), "or either with ':N'"),
        (lambda t: t.replace("seed = 4", 'seed = 4\nexplain = "all"'), "explain must be 'test' or 'train'"),
        (lambda t: t.replace("seed = 4", "seed = 4\nscorer_option = {}"), "unknown key.s. 'scorer_option'; valid:"),
        (lambda t: t + "n_decoy = [3]\n", "grid block 2: unknown key.s. 'n_decoy'"),
        (lambda t: t + 'explain = "train:0"\n', "grid block 2: explain must be"),
    ],
)
def test_malformed_suites_are_refused_with_the_reason(tmp_path, edit, message):
    path = tmp_path / "bad.toml"
    path.write_text(edit(TINY.format(description="x")))
    with pytest.raises(SuiteError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_suite(path)


def test_suite_cli_errors_are_one_line_exit_2(tmp_path, capsys):
    store = tmp_path / "r.sqlite"
    for args, message in [
        (["--suite", str(tmp_path / "missing.toml")], "cannot read suite file"),
        (["--suite", "passemiers2023", "--decoys", "5"], "--suite fixes the grid; drop --decoys"),
    ]:
        assert cli.main([*args, "--store", str(store)]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1
    assert not store.exists()
