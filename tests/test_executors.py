"""Executors: local processes and a real local Ray cluster give the serial results; dead workers are retried."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from synthbench.methods import registry
from synthbench.runner.execute import execute
from synthbench.runner.executors import ExecutorError, ProcessExecutor, RayExecutor, SerialExecutor
from synthbench.runner.grid import GridSpec
from synthbench.runner.store import ResultStore

TESTS = Path(__file__).parent
PLUGINS = ("crashing_methods",)
GRID = GridSpec(("xor", "ring"), ("random", "mi", "saliency"), (0, 3), n_samples=120, n_folds=2, seed=3)


@pytest.fixture(scope="module", autouse=True)
def crashing_plugin():
    """Register crash_once / crash_always in this process for this module only.

    Imported at collection time they would join every other test's method list (the shared battery).
    """
    import importlib

    module = importlib.import_module("crashing_methods")
    yield module
    for name in ("crash_once", "crash_always"):
        registry.METHODS.remove(name)
    sys.modules.pop("crashing_methods", None)


@pytest.fixture(scope="module")
def crash_root(tmp_path_factory):
    """Marker folder of the crashing methods, in the environment before any worker (or Ray) starts."""
    d = tmp_path_factory.mktemp("crash")
    before = os.environ.get("SYNTHBENCH_CRASH_DIR")
    os.environ["SYNTHBENCH_CRASH_DIR"] = str(d)
    yield d
    if before is None:
        del os.environ["SYNTHBENCH_CRASH_DIR"]
    else:
        os.environ["SYNTHBENCH_CRASH_DIR"] = before


@pytest.fixture
def crash_dir(crash_root):
    """The marker folder, emptied for this test."""
    for f in crash_root.iterdir():
        f.unlink()
    return crash_root


def _run(cells, executor, path):
    with ResultStore(path) as store:
        summary = execute(cells, store, executor=executor)
        rows = store.scores()
    return summary, rows.sort_values(["cell_id", "metric"]).reset_index(drop=True)


def _same_scores(a: pd.DataFrame, b: pd.DataFrame) -> None:
    cols = ["cell_id", "metric", "value", "chance", "status"]
    pd.testing.assert_frame_equal(a[cols], b[cols])


@pytest.fixture(scope="module")
def serial_rows(tmp_path_factory):
    _, rows = _run(GRID.cells(), SerialExecutor(), tmp_path_factory.mktemp("serial") / "s.sqlite")
    return rows


def test_process_executor_retries_a_killed_worker_and_matches_serial(tmp_path, crash_dir, serial_rows):
    cells = GridSpec(
        GRID.datasets, GRID.methods + ("crash_once",), GRID.decoys, GRID.n_samples, GRID.n_folds, GRID.seed
    ).cells()
    summary, rows = _run(cells, ProcessExecutor(2, max_retries=1, plugins=PLUGINS), tmp_path / "p.sqlite")
    assert (crash_dir / "crashed").exists()  # a worker really died
    assert summary.failed == 0 and summary.ok == len(cells)
    assert rows["cell_id"].nunique() == len(cells)
    _same_scores(rows[rows.cell_id.isin(serial_rows.cell_id)].reset_index(drop=True), serial_rows)


def test_process_executor_gives_up_after_max_retries(tmp_path, crash_dir):
    grid = GridSpec(("xor",), ("random", "crash_always"), (0,), n_samples=60, n_folds=2, seed=0)
    summary, rows = _run(grid.cells(), ProcessExecutor(2, max_retries=1, plugins=PLUGINS), tmp_path / "p.sqlite")
    assert (crash_dir / "attempts").read_text() == "xx" * 2  # 2 folds x (1 try + 1 retry)
    failed = rows[rows.status == "failed"].drop_duplicates("cell_id")
    assert set(failed.cell_id) == {c.cell_id for c in grid.cells() if c.method == "crash_always"}
    assert failed.message.str.contains("worker died").all()
    assert summary.ok == 2 and summary.failed == 2  # the random cells of the same tasks still ran


@pytest.fixture(scope="module")
def ray_cluster(crash_root):
    """A real local Ray cluster of 2 CPUs whose workers can import the test plugin."""
    import ray

    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), before]))
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
        yield ray
        ray.shutdown()
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before


def test_ray_local_cluster_matches_serial_and_retries_a_killed_worker(tmp_path, crash_dir, serial_rows, ray_cluster):
    cells = GridSpec(
        GRID.datasets, GRID.methods + ("crash_once",), GRID.decoys, GRID.n_samples, GRID.n_folds, GRID.seed
    ).cells()
    summary, rows = _run(cells, RayExecutor(max_retries=2, plugins=PLUGINS), tmp_path / "r.sqlite")
    assert (crash_dir / "crashed").exists()
    assert summary.failed == 0 and summary.ok == len(cells)
    _same_scores(rows[rows.cell_id.isin(serial_rows.cell_id)].reset_index(drop=True), serial_rows)


def test_ray_records_cells_of_a_task_that_always_dies_as_failed(tmp_path, crash_dir, ray_cluster):
    grid = GridSpec(("xor",), ("crash_always",), (0,), n_samples=60, n_folds=2, seed=0)
    summary, rows = _run(grid.cells(), RayExecutor(max_retries=1, plugins=PLUGINS), tmp_path / "r.sqlite")
    assert (crash_dir / "attempts").read_text() == "xx" * 2
    assert summary.failed == 2 and summary.ok == 0
    assert rows.message.str.contains("Ray task failed").all()


def test_ray_address_pointing_at_nothing_fails_fast_and_writes_nothing(tmp_path):
    store = tmp_path / "never.sqlite"
    proc = subprocess.run(  # the timeout guards against a run that waits on the address instead of failing
        [
            sys.executable,
            "-m",
            "synthbench.run",
            "--datasets",
            "xor",
            "--decoys",
            "0",
            "--n-samples",
            "60",
            "--folds",
            "2",
            "--methods",
            "random",
            "--executor",
            "ray",
            "--address",
            "127.0.0.1:1",
            "--store",
            str(store),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "no Ray cluster answers at 127.0.0.1:1" in proc.stderr
    assert not store.exists()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(address="nonsense"), "not host:port"),
        (dict(gpus_per_cell=2.0), "within [0, 1]"),
        (dict(max_retries=-1), "non-negative"),
    ],
)
def test_ray_executor_rejects_bad_settings(kwargs, message):
    with pytest.raises(ExecutorError, match=message.replace("[", r"\[").replace("]", r"\]")):
        RayExecutor(**kwargs).check()


def test_ray_gives_neural_tasks_a_share_of_a_gpu_only_where_there_is_one():
    tasks = {
        t.cells[0].method: t
        for t in GridSpec.tasks(GRID.cells())
        if t.head.fold == 0 and t.head.dataset == "xor" and t.head.n_decoys == 0
    }
    assert set(tasks) == {"random", "saliency"}
    ex = RayExecutor()
    assert ex.task_options(tasks["saliency"], cluster_gpus=1, device="auto")["num_gpus"] == 0.25
    assert ex.task_options(tasks["random"], cluster_gpus=1, device="auto")["num_gpus"] == 0
    assert ex.task_options(tasks["saliency"], cluster_gpus=0, device="auto")["num_gpus"] == 0
    assert ex.task_options(tasks["saliency"], cluster_gpus=8, device="cpu")["num_gpus"] == 0
    assert RayExecutor(gpus_per_cell=0.5).task_options(tasks["saliency"], 1, "cuda")["num_gpus"] == 0.5
    assert ex.task_options(tasks["random"], 1, "auto")["num_cpus"] == 1


def test_the_serial_executor_and_the_jobs_default_size_to_the_cores_this_process_may_use(monkeypatch):
    """A process restricted to 3 cores (a container's cpuset, a scheduler's share) runs 3 workers by default and
    trains in-process on 3 threads, whatever the machine's core count says."""
    from synthbench import machine
    from synthbench.models import TrainSettings
    from synthbench.run import build_parser
    from synthbench.runner import executors

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 5, 7}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert machine.usable_cores() == 3
    assert build_parser().parse_args([]).jobs == 3
    seen = []
    monkeypatch.setattr(executors, "run_task", lambda task, settings: seen.append(settings.n_jobs) or iter(()))
    cells = GridSpec(datasets=("xor",), methods=("anova",), decoys=(0,), n_samples=60, n_folds=2, seed=0).cells()
    SerialExecutor().run(GridSpec.tasks(cells), TrainSettings(), record=lambda result: None)
    assert seen == [3, 3]
