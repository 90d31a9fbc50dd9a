"""Where the default run's time goes, beside issue 32's goal (the whole run in 5 minutes on 2 cores).

Runs the README's main command, ``python -m synthbench.run --decoys 100,1000``, into a fresh temporary
store (or reads a store it already wrote: ``--store``) and prints the run's wall time beside the goal,
then its compute split into

* model training per model kind (each fold's model counted once; its fits and seconds per fit),
* the learnability ceilings (once per fold: a fold's cells are grouped into tasks by the models they need,
  and the first task computes the ceiling into the run's model cache, where the others read it),
* every method's own time (each method counted once per fold, whatever the scorers that read it),
* the scorers' time,
* and what is left of ``wall x workers``: idle workers, data generation, the store, scheduling, imports.

Usage::

    python benchmarks/default_run.py [--store results/synthbench.sqlite] [--top 8]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pandas as pd

from synthbench.runner.store import ResultStore

GOAL_SECONDS = 300.0
COMMAND = ["-m", "synthbench.run", "--decoys", "100,1000"]


def breakdown(cells: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Compute seconds of finished cells: ``{"training": {kind: s}, "fits": {kind: n}, "ceiling": {"all": s},
    "methods": {method: s}, "scorers": {scorer: s}}``, every model and method output counted once per fold, the
    ceiling once per task (the models a cell records name its task within the fold: a task that read the ceiling
    records the seconds it waited and read; a cell's ``seconds`` hold the training of the models it needs, taken
    out of the method's)."""
    fold = ["dataset", "n_decoys", "n_samples", "seed", "fold"]
    training: dict[tuple, tuple[str, float]] = {}
    ceilings: dict[tuple, float] = {}
    methods: dict[tuple, tuple[str, float]] = {}
    out: dict[str, dict[str, float]] = {name: defaultdict(float) for name in ("training", "fits", "methods", "scorers")}
    for row in cells.itertuples():
        key = tuple(getattr(row, c) for c in fold)
        models = json.loads(row.model) if isinstance(row.model, str) else {}  # NULL (NaN): no model
        for i, (kind, info) in enumerate(models.items()):
            name = f"mlp@{row.model_preset}" if kind == "mlp" else kind
            ceiling = info.get("ceiling_seconds", 0.0)
            # the first model a task trained computed the ceiling inside its train_seconds: counted apart
            training[(*key, name)] = (name, info["train_seconds"] - (ceiling if i == 0 else 0.0))
            ceilings[(*key, *sorted(models))] = ceiling
        own = row.seconds - sum(info["train_seconds"] for info in models.values())
        methods[(*key, row.method, row.model_preset)] = (row.method, own)
        out["scorers"][row.scorer] += row.scorer_seconds or 0.0
    for name, seconds in training.values():
        out["training"][name] += seconds
        out["fits"][name] += 1
    for method, seconds in methods.values():
        out["methods"][method] += seconds
    out["ceiling"] = {"all": sum(ceilings.values())}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, help="read this store's last run instead of running the command")
    parser.add_argument("--top", type=int, default=8, help="methods listed one by one (the rest summed)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store
        if store is None:
            store = Path(tmp) / "default.sqlite"
            start = time.perf_counter()
            subprocess.run([sys.executable, *COMMAND, "--store", str(store), "--quiet"], check=True)
            print(f"ran `python {' '.join(COMMAND)}` in {time.perf_counter() - start:.0f} s (process wall)")
        with ResultStore(store, readonly=True) as db:
            cells = db.cells()
            runs = db.runs()
    run = runs.iloc[-1]
    workers = int(json.loads(run["executor"]).get("jobs", 1))
    machine = json.loads(run["machine"])
    wall = float(run["wall_seconds"])
    ok = cells[(cells["status"] == "ok") & (cells["run_id"] == run["run_id"])]
    parts = breakdown(ok)
    print(
        f"run {run['run_id']}: `{run['command']}`, {len(ok)} cells, {workers} workers, "
        f"{machine.get('cores')} cores ({machine.get('cpu')})"
    )
    print(
        f"wall {wall:.0f} s against the goal of {GOAL_SECONDS:.0f} s: {wall / GOAL_SECONDS:.1f}x over"
        if wall > GOAL_SECONDS
        else f"wall {wall:.0f} s, within the goal of {GOAL_SECONDS:.0f} s"
    )
    rows = [
        (f"training {kind}", s, f"{int(parts['fits'][kind])} fits, {s / parts['fits'][kind]:.1f} s each")
        for kind, s in sorted(parts["training"].items(), key=lambda kv: -kv[1])
    ]
    rows.append(("learnability ceilings", parts["ceiling"]["all"], "once per fold, read by its other tasks"))
    ranked = sorted(parts["methods"].items(), key=lambda kv: -kv[1])
    rows += [(f"method {name}", s, "") for name, s in ranked[: args.top]]
    rest = ranked[args.top :]
    rows.append((f"{len(rest)} other methods", sum(s for _, s in rest), ""))
    rows += [(f"scorer {name}", s, "") for name, s in parts["scorers"].items()]
    compute = sum(s for _, s, _ in rows)
    rows.append(("idle workers and harness", wall * workers - compute, "wall x workers - the rest"))
    width = max(len(name) for name, _, _ in rows)
    for name, seconds, note in rows:
        print(f"  {name:<{width}}  {seconds:8.0f} s  {100 * seconds / (wall * workers):5.1f} %  {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
