"""The verdicts study page: one command writes it from a suite's store, the same store the same page."""

from __future__ import annotations

from synthbench.report.study.page import main as study
from synthbench.run import main as run
from synthbench.suites import load_suite

SUITE = """
name = "tiny_verdicts"
version = 1
description = "a tiny verdicts study"
n_samples = 120
folds = 2
seeds = [0, 1]
models = ["sparse_mlp"]
methods = ["saliency", "integrated_gradients", "anova", "mrmr", "random"]
scorers = ["ground_truth", "road"]
scorer_options = {fractions = [0.5]}

[[grid]]
datasets = ["xor"]
n_decoys = [4]

[[grid]]
datasets = ["xor"]
n_decoys = [4]
seeds = [0]
scorers = ["meta_consistency"]
scorer_options = {verdict = "road", verdict_options = {fractions = [0.5]}, perturbations = 1}
"""


def test_the_study_page_is_written_from_the_suites_store_alone_and_the_same_each_time(tmp_path, capsys):
    suite = tmp_path / "tiny.toml"
    suite.write_text(SUITE)
    store = tmp_path / "s.sqlite"
    assert run(["--suite", str(suite), "--store", str(store), "--jobs", "1", "--quiet"]) == 0
    page = tmp_path / "docs" / "study.md"
    args = ["--store", str(store), "--suite", "tiny_verdicts", "--out", str(page)]
    assert study(args) == 0
    text = page.read_text()
    assert f"| suite | `tiny_verdicts` (hash `{load_suite(suite).hash}`) |" in text
    assert "| cells | 50: 50 finished" in text and "| wall time |" in text and "| machine | " in text
    assert "road `road_gap`" in text and "mean Spearman ρ [95 % CI]" in text and "reliability α [95 % CI]" in text
    assert "- road on tables: Controls random do as well as" in text
    found = text.index("## What it found")
    answer, table = text.index("**The answer.**", found), text.index("| verdict ", found)
    assert answer < table < text.index("**How it is measured.**")
    assert "**The truth's own reliability** per setting" in text and "| split-half reliability " in text
    assert "| mean ρ corrected ᶜ " in text and "| verdict split-half " in text
    header = next(line for line in text.splitlines() if line.startswith("| verdict ")).split("|")
    column = next(i for i, name in enumerate(header) if "meta-consistency" in name)
    road = [line.split("|")[column].strip() for line in text.splitlines() if line.startswith("| road `road_gap`")]
    assert any(mc not in ("", "–") for mc in road)  # its meta-consistency, from the block judging it
    assert (page.parent / "study_validity.png").exists() and "![" in text and "(study_validity.png)" in text
    first = {p.name: p.read_bytes() for p in page.parent.iterdir()}
    assert study(args) == 0
    assert {p.name: p.read_bytes() for p in page.parent.iterdir()} == first  # the same store, the same page
    capsys.readouterr()
    assert study([*args[:-1], str(tmp_path / "study.txt")]) == 2
    assert "--out must name a Markdown file" in capsys.readouterr().err
    assert study(["--store", str(tmp_path / "none.sqlite"), "--suite", "x", "--out", str(page)]) == 2
    assert study(["--store", str(store), "--suite", "other", "--out", str(page)]) == 2
    assert "holds no cells of suite 'other'" in capsys.readouterr().err
