"""What the store records of each scorer, metric and model kind, and the report that reads it without torch."""

import dataclasses
import json
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from synthbench.catalogue import Abilities, Catalogue, MetricInfo, ScorerInfo, scorer_from_json, scorer_to_json
from synthbench.models import model_kind
from synthbench.runner.grid import Cell
from synthbench.runner.store import CellResult, ResultStore
from synthbench.scoring import SCORERS, Scorer, get_metric, get_scorer, scorer_names
from synthbench.scoring.truth.metrics import Metric


def _same(info: MetricInfo, metric: MetricInfo) -> bool:
    return all(getattr(info, f.name) == getattr(metric, f.name) for f in dataclasses.fields(MetricInfo))


@pytest.mark.parametrize("name", scorer_names())
def test_every_registered_scorer_reads_back_as_declared(name):
    scorer = get_scorer(name)
    back = scorer_from_json(name, *scorer_to_json(ScorerInfo(name, scorer.metrics, scorer.abilities)))
    assert back.abilities == scorer.abilities and list(back.metrics) == list(scorer.metrics)
    assert all(_same(back.metrics[m], scorer.metrics[m]) for m in scorer.metrics)


def test_a_metric_is_looked_up_as_the_registry_does_and_an_ambiguous_one_needs_its_scorer():
    one = MetricInfo("gap", "higher", "the gap", limits=(-1.0, 1.0))
    other = dataclasses.replace(one, direction="lower")
    catalogue = Catalogue({"a": ScorerInfo("a", {"gap": one}), "b": ScorerInfo("b", {"gap": other})})
    assert catalogue.metric("gap", "b").direction == "lower"
    with pytest.raises(KeyError, match="declared differently"):
        catalogue.metric("gap")
    with pytest.raises(KeyError, match="unknown metric 'nope'; valid names: gap"):
        catalogue.metric("nope")
    with pytest.raises(KeyError, match="unknown scorer 'c'"):
        catalogue.scorer("c")
    assert not Catalogue().uses_preset("mlp")  # a model kind the store does not record: no preset
    assert get_metric("best_k").truth_based and not get_metric("road_gap").truth_based
    with pytest.raises(TypeError):  # set from the metric's fn, never given
        Metric("x", "higher", "x", truth_based=True)


def test_a_later_versions_fields_are_left_out_when_read(tmp_path):
    metrics, abilities = scorer_to_json(
        ScorerInfo("s", {"m": MetricInfo("m", "higher", "m")}, Abilities(retrains=True))
    )
    later = json.dumps({**json.loads(abilities), "new_ability": 1})
    assert scorer_from_json("s", metrics, later).abilities == Abilities(retrains=True)


def _cells(scorer: str) -> list[Cell]:
    return [Cell("xor", 100, 3, 0, 2, f, m, scorer=scorer) for f in range(2) for m in ("saliency", "anova", "random")]


def _write(store: ResultStore, cells: list[Cell], metric: str) -> None:
    mlp = {"mlp": {"test_auroc": 0.9, "test_accuracy": 0.9, "competence": 0.9, "train_seconds": 1.0}}
    for i, c in enumerate(cells):
        store.write(
            CellResult(
                c,
                "ok",
                scores={metric: 0.2 + 0.1 * i},
                chance={metric: 0.1},
                seconds=1.0,
                model=mlp if c.method == "saliency" else None,
            )
        )


class _Gap(Scorer):
    """A plugin's verdict: a metric and abilities of its own."""

    name = "plugin_gap"
    metrics = {"plugin_gap": Metric("plugin_gap", "lower", "plugin's own gap", limits=(-2.0, 2.0), unit="nats")}
    abilities = Abilities(judges_model=True, curve_axis="plugin axis")


def test_the_store_records_its_scorers_and_model_kinds(tmp_path):
    with SCORERS.temporarily("plugin_gap", _Gap()), ResultStore(tmp_path / "r.sqlite") as store:
        _write(store, _cells("ground_truth"), "best_k")
        _write(store, _cells("plugin_gap"), "plugin_gap")
        catalogue = store.catalogue()
    assert set(catalogue.scorers) == {"ground_truth", "plugin_gap"}
    gap = catalogue.scorer("plugin_gap")
    assert gap.abilities == _Gap.abilities and _same(gap.metrics["plugin_gap"], _Gap.metrics["plugin_gap"])
    assert gap.plugin == __name__  # the module a --plugin would name
    assert catalogue.scorer("ground_truth").plugin is None and catalogue.scorer("ground_truth").abilities == Abilities()
    assert catalogue.models["mlp"].uses_preset and catalogue.models["mlp"].description == model_kind("mlp").description
    assert set(catalogue.models) == {"mlp"}  # the model kinds the cells record, no other


def test_a_version_9_store_gains_its_catalogue_from_what_this_process_registers(tmp_path):
    path = tmp_path / "v9.sqlite"
    with SCORERS.temporarily("plugin_gap", _Gap()), ResultStore(path) as store:
        _write(store, _cells("ground_truth"), "best_k")
        _write(store, _cells("plugin_gap"), "plugin_gap")
    con = sqlite3.connect(path)
    for table in ("scorers", "models", "per_example"):
        con.execute(f"DROP TABLE {table}")
    con.execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    with ResultStore(path, readonly=True) as store:  # upgraded in memory: the tables empty, the registry's answers
        assert store._con.execute("SELECT count(*) FROM scorers").fetchone()[0] == 0
        catalogue = store.catalogue()
    assert set(catalogue.scorers) == {"ground_truth"} and catalogue.uses_preset("mlp")  # the plugin is not here
    with ResultStore(path) as store:  # opened for writing: recorded, for what this process registers
        recorded = {r[0] for r in store._con.execute("SELECT scorer FROM scorers")}
        models = {r[0] for r in store._con.execute("SELECT model FROM models")}
    assert recorded == {"ground_truth"} and models == {"mlp"}
    from synthbench.report import ReportError, load_results

    with pytest.raises(ReportError, match="scorer\\(s\\) plugin_gap that neither it records nor this process knows"):
        load_results(path)


_FRESH_REPORT = textwrap.dedent("""
    import sys
    from synthbench.report.cli import main
    assert main(["--store", sys.argv[1], "--out", sys.argv[2]]) == 0
    loaded = sorted(m for m in sys.modules if m.split(".")[0] == "torch" or m in (
        "synthbench.scoring", "synthbench.methods", "synthbench.datasets", "synthbench.models", "sklearn"))
    print(repr(loaded))
""")


def test_a_plugin_scorers_cells_are_reported_without_the_plugin_torch_or_a_registry(tmp_path):
    path = tmp_path / "r.sqlite"
    with SCORERS.temporarily("plugin_gap", _Gap()), ResultStore(path) as store:
        _write(store, _cells("ground_truth"), "best_k")
        _write(store, _cells("plugin_gap"), "plugin_gap")
    out = subprocess.run(
        [sys.executable, "-c", _FRESH_REPORT, str(path), str(tmp_path / "report")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "[]"  # the report's command line, from reading the store to the last figure
    md = (tmp_path / "report" / "report.md").read_text()
    assert "`plugin_gap`: the plugin's own gap (lower is better)" in md  # its metric, as the store recorded it
    assert "## plugin_gap beside the ground truth" in md


def test_importing_the_report_loads_no_torch_registry_scipy_or_matplotlib():
    code = (
        "import sys, synthbench.report; print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'sklearn', 'scipy', 'matplotlib') or m.startswith(('synthbench.scoring', 'synthbench.methods', "
        "'synthbench.datasets', 'synthbench.models'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_run_describes_its_scorers_as_this_process_registers_them_even_computing_nothing(tmp_path):
    """A scorer's metrics change between versions (a metric gains ``variant_of``): a run that resumes a finished grid
    computes no cell, yet the store then describes the scorer as the resuming process does."""
    from synthbench.runner.execute import execute

    path = tmp_path / "r.sqlite"
    cells = _cells("plugin_gap")
    with SCORERS.temporarily("plugin_gap", _Gap()), ResultStore(path) as store:
        _write(store, cells, "plugin_gap")
    newer = _Gap()
    newer.metrics = {"plugin_gap": dataclasses.replace(_Gap.metrics["plugin_gap"], description="the newer gap")}
    with SCORERS.temporarily("plugin_gap", newer), ResultStore(path) as store:
        summary = execute(cells, store)
        assert summary.ok == 0 and summary.skipped == len(cells)  # nothing computed
        assert store.catalogue().scorer("plugin_gap").metrics["plugin_gap"].description == "the newer gap"
