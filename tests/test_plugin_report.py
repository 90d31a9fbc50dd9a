"""A plugin image dataset and method, as a new user writes them from the documentation: checked, run with
``--plugin ./file.py``, then reported *without* ``--plugin``: the store holds what the report needs."""

from __future__ import annotations

import re
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest
from conftest import registrations_undone

from synthbench import datasets, methods

PLUGIN = Path(__file__).resolve().parent / "my_bars_plugin.py"
GRID = [
    "--datasets",
    "bars",
    "--methods",
    "bar_contrast,random",
    "--decoys",
    "0,2",
    "--n-samples",
    "40",
    "--folds",
    "2",
    "--jobs",
    "1",
    "--quiet",
]


def report(*args: str) -> int:
    from synthbench.report.cli import main

    return main(list(args))


@pytest.fixture(scope="module")
def plugin_store(tmp_path_factory):
    """The user's folder: the plugin file, and the store of one run with it. The plugin is registered only while
    the fixture checks and runs it, as in the command that ran it; the tests below run without it."""
    from synthbench.plugins import import_plugin
    from synthbench.run import main as run
    from synthbench.testing import check_dataset, check_method

    folder = tmp_path_factory.mktemp("user")
    shutil.copy(PLUGIN, folder / "my_plugins.py")  # not on the Python path: --plugin names it by its path
    store, out = folder / "s.sqlite", folder / "with_plugin"
    try:
        with registrations_undone():
            import_plugin(str(folder / "my_plugins.py"))
            checked = check_dataset("bars"), check_method("bar_contrast")
            assert run(["--plugin", str(folder / "my_plugins.py"), *GRID, "--store", str(store)]) == 0
            assert report("--plugin", str(folder / "my_plugins.py"), "--store", str(store), "--out", str(out)) == 0
    finally:
        sys.modules.pop("my_plugins", None)
    assert "masks (n, *input_shape), bool" in checked[0] and "image: a valid output" in checked[1]
    assert "bars" not in datasets.names() and "bar_contrast" not in methods.method_names()
    return folder, store, out


def sections(markdown: str) -> dict[str, str]:
    """The report's ``## `` sections by heading."""
    parts = re.split(r"^## ", markdown, flags=re.M)
    return {p.splitlines()[0]: p for p in parts[1:]}


def test_without_the_plugin_the_report_renders_the_image_part_as_with_it(plugin_store, tmp_path, capsys):
    folder, store, with_plugin = plugin_store
    capsys.readouterr()
    assert report("--store", str(store), "--out", str(tmp_path / "report")) == 0
    assert capsys.readouterr().err == ""
    md = (tmp_path / "report" / "report.md").read_text()
    assert "8 cells finished, 0 failed" in md and "best_k" not in md  # images, not an empty table leaderboard
    rows = {
        m: re.search(rf"^\| \[{m}\]\(#method-[^)]+\) +\|(.*)\|$", md, re.M).group(1).split("|")
        for m in ("bar_contrast", "random")
    }
    assert {m: r[-5].strip() for m, r in rows.items()} == {"bar_contrast": "4", "random": "4"}  # cells counted
    assert float(rows["bar_contrast"][0].split()[0]) > 0.8 > 0.2 > float(rows["random"][0].split()[0])
    # Every section but the example maps is what the report with the plugin says, and so is the curves figure.
    alone, full = sections(md), sections((with_plugin / "report.md").read_text())
    assert alone.keys() == full.keys() and "Localisation leaderboard" in alone and "Example maps, bars" in alone
    assert {k: v for k, v in alone.items() if not k.startswith("Example maps")} == {
        k: v for k, v in full.items() if not k.startswith("Example maps")
    }
    assert (tmp_path / "report" / "distractor_curves.png").read_bytes() == (
        with_plugin / "distractor_curves.png"
    ).read_bytes()  # the method's family comes from the store
    # The one figure that needs the data: the maps alone, with the plugin to pass to draw the images.
    assert "without the images and their masks" in alone["Example maps, bars"]
    assert f"pass `--plugin {folder / 'my_plugins.py'}`" in alone["Example maps, bars"]
    assert "without the images" not in full["Example maps, bars"]
    assert (tmp_path / "report" / "maps_bars.png").exists()


def test_a_store_from_before_datasets_were_recorded_needs_the_plugin_in_one_line(plugin_store, tmp_path, capsys):
    folder, store, _ = plugin_store
    old = tmp_path / "old.sqlite"
    shutil.copy(store, old)
    con = sqlite3.connect(old)  # what synthbench wrote before schema 7: nothing says bars holds images
    for table in ("datasets", "methods", "scorers", "models", "per_example"):  # schemas 7, 10 and 11
        con.execute(f"DROP TABLE {table}")
    for column in ("input_shape", "global_truth", "masks", "judged", "judged_model"):  # schemas 7 and 8
        con.execute(f"ALTER TABLE cells DROP COLUMN {column}")
    con.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    before = old.read_bytes()
    capsys.readouterr()
    assert report("--store", str(old), "--out", str(tmp_path / "report")) == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and err.startswith("synthbench.report: error: store ")
        and ("does not record what dataset(s) bars are" in err and "--plugin MODULE|PATH.py" in err)
    )
    assert not (tmp_path / "report").exists() and old.read_bytes() == before
