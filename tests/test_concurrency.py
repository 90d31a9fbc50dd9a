"""Several runs on one store: safe creation, claims that keep two runs off the same cell, lapsed claims."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from synthbench.runner.grid import Cell
from synthbench.runner.store import CellResult, ResultStore

TESTS = Path(__file__).parent


def cell(fold: int) -> Cell:
    return Cell("xor", 100, 3, 0, 4, fold, "random")


def start(store: ResultStore) -> int:
    return store.start_run(
        command="t", executor=None, machine=None, package_version="0", cells_total=4, cells_pending=4
    )


def test_a_live_runs_claims_are_left_to_it_until_it_writes_or_ends(tmp_path):
    with ResultStore(tmp_path / "s.sqlite") as store:
        a, b = start(store), start(store)
        claimed, finished, busy = store.claim([cell(0), cell(1)], a)
        assert [c.fold for c in claimed] == [0, 1] and not finished and not busy
        claimed, finished, busy = store.claim([cell(0), cell(1), cell(2)], b)
        assert [c.fold for c in claimed] == [2] and [c.fold for c in busy] == [0, 1]
        store.write(CellResult(cell(0), "ok", scores={"best_k": 1.0}), a)  # writing a cell ends its claim
        claimed, finished, busy = store.claim([cell(0), cell(1)], b)
        assert not claimed and [c.fold for c in finished] == [0] and [c.fold for c in busy] == [1]
        store.finish_run(a, status="finished", wall_seconds=1.0, ok=1, failed=0, skipped=0)
        claimed, _, busy = store.claim([cell(1)], b)
        assert [c.fold for c in claimed] == [1] and not busy
        # force claims finished cells too, but never another live run's
        c3 = start(store)
        claimed, finished, busy = store.claim([cell(0), cell(1)], c3, force=True)
        assert [c.fold for c in claimed] == [0] and not finished and [c.fold for c in busy] == [1]


def test_claims_of_a_dead_process_or_a_silent_host_lapse(tmp_path):
    with ResultStore(tmp_path / "s.sqlite") as store:
        dead, silent, fresh, me = start(store), start(store), start(store), start(store)
        gone = subprocess.Popen([sys.executable, "-c", "pass"])
        gone.wait()
        con = sqlite3.connect(store.path)
        con.execute("UPDATE runs SET pid = ? WHERE run_id = ?", (gone.pid, dead))
        con.execute(
            "UPDATE runs SET host = 'elsewhere', heartbeat_at = ? WHERE run_id = ?", (time.time() - 700, silent)
        )
        con.execute("UPDATE runs SET host = 'elsewhere', heartbeat_at = ? WHERE run_id = ?", (time.time() - 5, fresh))
        con.commit()
        con.close()
        for run, fold in ((dead, 0), (silent, 1), (fresh, 2)):
            assert store.claim([cell(fold)], run)[0]
        claimed, _, busy = store.claim([cell(0), cell(1), cell(2)], me)
        assert [c.fold for c in claimed] == [0, 1] and [c.fold for c in busy] == [2]
        # a shorter patience lets the other host's claim lapse too; a heartbeat renews it
        store.heartbeat(fresh)
        assert store.claim([cell(2)], me, stale_after=600)[2]
        assert store.claim([cell(2)], me, stale_after=0.0)[0]


def _run(store: Path, *extra: str) -> subprocess.Popen:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
        "SYNTHBENCH_SLEEP": "0.4",
        "SYNTHBENCH_WAIT_FOR_RUNS": f"{store}:2",
    }
    args = [
        "--datasets",
        "xor,ring",
        "--decoys",
        "0,3",
        "--n-samples",
        "80",
        "--folds",
        "2",
        "--methods",
        "sleepy",
        "--plugin",
        "sleeping_methods",
        "--quiet",
        "--store",
        str(store),
        *extra,
    ]
    return subprocess.Popen(
        [sys.executable, "-m", "synthbench.run", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _counts(stdout: str) -> tuple[int, int, int]:
    m = re.search(r"(\d+) cells run, (\d+) already in .*?(?:, (\d+) left to another run)?", stdout)
    assert m, stdout
    return int(m[1]), int(m[2]), int(m[3] or 0)


def test_two_runs_started_together_on_a_new_store_compute_each_cell_once(tmp_path):
    """Each cell waits until both runs are registered (``SYNTHBENCH_WAIT_FOR_RUNS``), so the runs overlap
    whatever the load: both compute cells, and none twice."""
    store = tmp_path / "new" / "shared.sqlite"
    procs = [_run(store, "--jobs", "1"), _run(store, "--jobs", "2")]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    counts = [_counts(out) for out, _ in outs]
    assert sum(c[0] for c in counts) == 8  # 2 datasets x 2 decoy counts x 2 folds, each computed once
    assert all(c[0] >= 1 for c in counts), counts  # they overlapped: each run computed some of them
    con = sqlite3.connect(store)
    assert con.execute("SELECT count(*), count(DISTINCT run_id) FROM cells WHERE status = 'ok'").fetchone() == (8, 2)
    assert con.execute("SELECT count(*) FROM claims").fetchone()[0] == 0  # both runs ended: no claim is left
    assert [r[0] for r in con.execute("SELECT status FROM runs")] == ["finished", "finished"]
    con.close()


def _children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid`` (Linux: read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process tree from /proc")
def test_the_workers_of_a_killed_run_end_with_it(tmp_path):
    """A run killed outright (SIGKILL: no chance to stop its workers) leaves no worker computing a fold whose
    results nobody can receive: each worker sees its parent gone and exits."""
    import signal

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    args = ["--datasets", "xor", "--decoys", "0", "--n-samples", "80", "--folds", "2", "--methods", "sleepy"]
    args += ["--plugin", "sleeping_methods", "--quiet", "--jobs", "2", "--store", str(tmp_path / "s.sqlite")]
    run = subprocess.Popen(
        [sys.executable, "-m", "synthbench.run", *args],
        env={**env, "SYNTHBENCH_SLEEP": "120"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    workers: list[int] = []
    while len(workers) < 2 and time.monotonic() < deadline:  # the two workers and, besides, the resource tracker
        workers = [p for p in _children(run.pid) if "spawn_main" in Path(f"/proc/{p}/cmdline").read_text()]
        time.sleep(0.2)
    assert len(workers) >= 2, "the run started no workers"
    time.sleep(3)  # the workers are now in their task (sleeping 120 s)
    run.send_signal(signal.SIGKILL)
    run.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(_state(p) not in ("gone", "Z") for p in workers):
        time.sleep(0.2)
    alive = [p for p in workers if _state(p) not in ("gone", "Z")]
    assert not alive, (
        f"workers {alive} outlived their killed run: {[Path(f'/proc/{p}/stat').read_text() for p in alive]}"
    )


def _state(pid: int) -> str:
    """A process's state letter (``Z``: a zombie, ended and not yet reaped), ``gone`` where it no longer exists."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"
