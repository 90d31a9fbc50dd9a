"""Command line: ``python -m synthbench.run --decoys 100,1000``.

Runs a grid of (dataset × decoy count × fold × method × scorer) cells on tables or images, stores
every cell in an SQLite results database (skipping those already finished), and prints a
leaderboard.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Only what the parser and the checks of numbers, counts and paths need: bad input is answered before torch and the
# registries are imported (the rest is imported where it is used).
from synthbench import __version__
from synthbench.cli import (
    DEFAULT_STORE,
    OneLineParser,
    UsageError,
    add_common_options,
    add_competence_options,
    add_data_dir_option,
    competence_threshold,
    data_dir,
    load_plugins,
    parse_names,
    print_error,
    setup_logging,
)
from synthbench.defaults import BATCH_MEMORY_MIB, DEFAULT_GPUS_PER_CELL, RUN_PRESETS
from synthbench.kinds import INPUT_KINDS, get_kind
from synthbench.machine import usable_cores

if TYPE_CHECKING:
    from synthbench.runner.executors import Executor
    from synthbench.runner.grid import Cell

DEFAULT_DATASETS = ("ring", "xor", "ring_xor", "ring_xor_sum")
#: Flags that define a grid; a suite defines its own, so they cannot be combined with --suite.
GRID_FLAGS: dict[str, tuple[str | int, dict[str, Any]]] = {
    "--datasets": (",".join(DEFAULT_DATASETS), dict(help="comma-separated dataset names")),
    "--methods": (
        "default",
        dict(help="comma-separated method names, 'default' (alone or with names: default,rf,lassonet) or 'all'"),
    ),
    "--decoys": (
        ", ".join(f"{k.default_decoys} on {k.plural}" for k in INPUT_KINDS.values()),
        dict(help="comma-separated decoy counts (distractor glyphs on images), for every dataset that takes decoys"),
    ),
    "--n-samples": ("1000", dict(help="comma-separated sample sizes")),
    "--folds": (6, dict(type=int, help="cross-validation folds, unshuffled")),
    "--seed": (0, dict(type=int, help="seed of every random stream, a non-negative integer")),
    "--explain": (
        "test",
        dict(help="rows attribution methods explain: test or train, or either with :N for its first N rows (test:100)"),
    ),
    "--model": (
        ",".join(RUN_PRESETS),
        dict(
            help="comma-separated presets the neural methods explain: MLP presets on "
            "tables, CNN presets on images (see --list; images default to cnn)"
        ),
    ),
    "--scorer": ("ground_truth", dict(help="comma-separated scorers, each a separate result (see --list)")),
}


def _integers(text: str, flag: str, positive: bool = False) -> tuple[int, ...]:
    """Comma-separated non-negative (or positive) integers from ``flag``, duplicates dropped; :class:`UsageError`
    otherwise."""
    kind, least = ("positive", 1) if positive else ("non-negative", 0)
    values = []
    for s in text.split(","):
        try:
            v = int(s.strip())
        except ValueError:
            raise UsageError(f"{flag} takes comma-separated {kind} integers, got {s.strip()!r}") from None
        if v < least:
            raise UsageError(f"{flag} must be {kind}, got {v}")
        values.append(v)
    return tuple(dict.fromkeys(values))


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m synthbench.run", description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument(
        "--suite",
        metavar="NAME|PATH.toml",
        help="run a frozen suite (a shipped name, see --list, or your own TOML file) instead of a grid "
        "built from the flags below",
    )
    for flag, (default, options) in GRID_FLAGS.items():
        p.add_argument(flag, **{**options, "help": f"{options['help']} (default: {default})"})
    p.add_argument("--store", type=Path, default=DEFAULT_STORE, help="SQLite results database (default: %(default)s)")
    p.add_argument(
        "--export",
        type=Path,
        help="also write this grid's tidy rows to a CSV file (gzip when it ends in .gz), an interrupted run's too, "
        "and its cells' curves and per-example values beside it (NAME.arrays.npz)",
    )
    p.add_argument(
        "--resume-from",
        type=Path,
        metavar="EXPORT",
        help="run in parts: first carry the finished cells of an earlier part's export of this grid into the store, "
        "then compute only the rest",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=usable_cores(),
        help="local worker processes (1 runs in this process), or the CPUs of a local Ray cluster "
        "(default: the cores this process may use, %(default)s)",
    )
    p.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="where cells run: local processes, or Ray tasks (default: %(default)s)",
    )
    p.add_argument(
        "--address",
        help="with --executor ray: address of an existing Ray cluster (host:port, ray://host:port "
        "or auto); without it a local cluster is started for the run",
    )
    p.add_argument(
        "--gpus-per-cell",
        type=float,
        help=f"with --executor ray: share of a GPU each neural task asks for where the cluster has GPUs "
        f"(default: {DEFAULT_GPUS_PER_CELL})",
    )
    p.add_argument(
        "--max-retries",
        type=int,
        default=2,
        help="times a task whose worker died is run again before its cells are recorded as failed "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="where torch models train: CUDA when available under auto (default: %(default)s)",
    )
    p.add_argument(
        "--batch-memory",
        type=int,
        default=BATCH_MEMORY_MIB,
        metavar="MIB",
        help="memory the data of networks trained as one batch may take, in MiB; a larger batch is split, "
        "which changes no model (default: %(default)s)",
    )
    p.add_argument(
        "--cache-dir", type=Path, help="on-disk cache of trained models (default: a 'cache' folder beside the store)"
    )
    p.add_argument(
        "--scorer-option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="change a scorer's setting, for every chosen scorer that takes it (repeatable), e.g. "
        "repeats=3 or fractions=0.1,0.5,0.9 (see --list for each scorer's options)",
    )
    p.add_argument(
        "--metric", help="metric of the printed leaderboard (default: best_k on tables, rank_accuracy on images)"
    )
    add_data_dir_option(p, "carried with every cell to the workers")
    add_competence_options(p)
    p.add_argument("--force", action="store_true", help="recompute cells already in the store")
    p.add_argument("--list", action="store_true", help="list datasets and methods, then exit")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_common_options(p, "import a plugin first, here and in every worker (it may register datasets or methods)")
    p.add_argument("--version", action="version", version=f"synthbench {__version__}")
    return p


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, list[Cell]]:
    """Parse and validate ``argv`` into options and the cells to run; :class:`UsageError` on bad input.

    Numbers, counts, paths and the shape of every option are checked first, before anything heavy is imported;
    plugins, names and the grid after.
    """
    args = build_parser().parse_args(argv)
    setup_logging(args.debug)
    _check_run_options(args)
    grid_options = {flag: flag[2:].replace("-", "_") for flag in GRID_FLAGS}
    if args.suite is not None and not args.list:
        given = [flag for flag, name in grid_options.items() if getattr(args, name) is not None]
        if given:
            raise UsageError(f"--suite fixes the grid; drop {', '.join(given)}")
    model_given, decoys_given = args.model is not None, args.decoys is not None
    for flag, name in grid_options.items():
        if getattr(args, name) is None and flag != "--decoys":
            setattr(args, name, GRID_FLAGS[flag][0])
    if args.resume_from is not None and not args.resume_from.is_file():
        raise UsageError(f"--resume-from {args.resume_from}: no such file (an earlier part's --export)")
    if args.seed < 0:
        raise UsageError(f"--seed must be a non-negative integer, got {args.seed}")
    if args.folds < 2:
        raise UsageError(f"--folds must be at least 2, got {args.folds}")
    sizes = _integers(args.n_samples, "--n-samples", positive=True)
    if min(sizes) < args.folds:
        raise UsageError(f"--n-samples ({min(sizes)}) must be at least --folds ({args.folds})")
    # Without --decoys, each input kind's datasets get that kind's default counts.
    decoys = (
        _integers(args.decoys, "--decoys")
        if decoys_given
        else {k.name: _integers(k.default_decoys, "--decoys") for k in INPUT_KINDS.values()}
    )
    scorer_options = _scorer_options(args.scorer_option)

    args.plugin = list(load_plugins(args.plugin))  # paths made absolute, for the workers
    if args.list:
        return args, []
    from synthbench import datasets
    from synthbench.methods import default_methods, get_method, method_names
    from synthbench.models.presets import preset_names
    from synthbench.protocol import explained_part
    from synthbench.runner.grid import GridSpec
    from synthbench.scoring import scorer_names
    from synthbench.suites import SuiteError, load_suite

    if args.suite is not None:
        try:
            cells = load_suite(args.suite).cells()
        except (SuiteError, ValueError, OSError) as exc:
            raise UsageError(str(exc)) from None
        _check_metric(args, cells)
        return args, _fitting(cells)
    try:
        explained_part(args.explain)
    except ValueError as exc:
        raise UsageError(f"--explain: {exc}") from None
    ds = parse_names(args.datasets, datasets.names(), "datasets")
    scorers = parse_names(args.scorer, scorer_names(), "scorers")
    given = [t.strip() for t in args.methods.split(",")]
    named = not {"default", "all"} & set(given)  # with default or all, what a dataset cannot run is skipped
    if "all" in given:
        methods = tuple(method_names())
    else:
        expanded = (m for t in given for m in (default_methods() if t == "default" else [t]))
        methods = parse_names(",".join(expanded), method_names(), "methods")
    models = parse_names(args.model, preset_names(), "models")
    if model_given and not any(get_method(m).uses_preset for m in methods):
        raise UsageError(
            f"--model {args.model}: none of the methods explains an MLP (the neural methods, e.g. "
            "saliency, do); drop --model or add such a method"
        )
    grid = GridSpec(
        ds,
        methods,
        decoys,
        sizes,
        args.folds,
        args.seed,
        args.explain,
        models=models,
        scorers=scorers,
        skip_inapplicable=not named,
        scorer_options=scorer_options,
        data_dir=args.data_dir,
    )
    try:
        cells = grid.cells()
        for cell in cells:
            cell.cell_id  # noqa: B018 - hashes image files now: missing files are bad input, not a failed run
    except (ValueError, OSError) as exc:  # a method on data it does not take; image files missing or malformed
        raise UsageError(str(exc)) from None
    if not cells:
        raise UsageError("no method of the list accepts these datasets' inputs; name methods with --methods")
    explained = {c.model for c in cells}
    unused = [m for m in models if m not in explained] if model_given else []
    if unused:
        from synthbench.models.presets import get_preset

        raise UsageError(
            f"--model {','.join(unused)}: no cell of the grid explains it (it configures "
            f"{' and '.join(sorted({get_preset(m).kind for m in unused}))}, which none of these datasets' methods "
            "explains); see --list"
        )
    _check_metric(args, cells)
    return args, _fitting(cells)


def _option_value(text: str) -> Any:
    """A ``--scorer-option`` value: JSON (``3``, ``0.5``, ``true``, ``"pixel"``), a comma-separated
    list of them (a tuple), or else the text itself."""

    def one(item: str) -> Any:
        try:
            value = json.loads(item)
        except json.JSONDecodeError:
            return item
        return tuple(value) if isinstance(value, list) else value

    return tuple(one(i.strip()) for i in text.split(",")) if "," in text else one(text.strip())


def _scorer_options(items: list[str]) -> dict[str, Any]:
    """``--scorer-option NAME=VALUE`` items as a mapping; UsageError for one without ``=``."""
    options = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            raise UsageError(f"--scorer-option takes NAME=VALUE, got {item!r}")
        options[name.strip()] = _option_value(value)
    return options


def _check_metric(args: argparse.Namespace, cells: list[Cell]) -> None:
    """Resolve the leaderboard's ``--metric`` and check a scorer declares it.

    The default is the first scorer's headline on the first dataset's input kind:
    the kind's :attr:`~synthbench.kinds.InputKind.headline_metric` for the ground truth, the first metric it declares
    for that kind otherwise.
    """
    from synthbench.scoring import get_scorer

    if args.metric is None:
        kind, first = cells[0].kind, get_scorer(cells[0].scorer).metrics
        headline = get_kind(kind).headline_metric
        args.metric = (
            headline
            if headline in first
            else next((name for name, m in first.items() if kind in m.kinds), next(iter(first)))
        )
    declared = sorted({m for s in dict.fromkeys(c.scorer for c in cells) for m in get_scorer(s).metrics})
    if args.metric not in declared:
        raise UsageError(f"unknown metric {args.metric!r}; valid: {', '.join(declared)}")


def _fitting(cells: list[Cell]) -> list[Cell]:
    """``cells``, once every dataset they generate is known to fit in memory (:class:`UsageError` otherwise)."""
    from synthbench import datasets

    for d, params, n, decoys, seed in dict.fromkeys(
        (c.dataset, c.dataset_params, c.n_samples, c.n_decoys, c.seed) for c in cells
    ):
        try:
            datasets.check_fits(d, n_samples=n, n_decoys=decoys, seed=seed, **dict(params))
        except (ValueError, TypeError) as exc:  # too large, or parameters the generator refuses
            raise UsageError(f"{d}: {exc}") from None
    return cells


def _check_run_options(args: argparse.Namespace) -> None:
    args.data_dir = data_dir(args)  # absolute: the cells carry it to every worker
    args.competence = competence_threshold(args)
    if args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {args.jobs}")
    if args.max_retries < 0:
        raise UsageError(f"--max-retries must be non-negative, got {args.max_retries}")
    if args.batch_memory <= 0:
        raise UsageError(f"--batch-memory must be a positive number of MiB, got {args.batch_memory}")
    if args.executor != "ray" and (args.address is not None or args.gpus_per_cell is not None):
        raise UsageError("--address and --gpus-per-cell need --executor ray")
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise UsageError("--device cuda: no CUDA device is available (use --device auto or cpu)")


def make_executor(args: argparse.Namespace) -> Executor:
    """The engine the options ask for, checked (:class:`ExecutorError` when it cannot run)."""
    from synthbench.runner.executors import ProcessExecutor, RayExecutor, SerialExecutor

    plugins = tuple(args.plugin)
    if args.executor == "ray":
        executor: Executor = RayExecutor(
            address=args.address,
            gpus_per_cell=args.gpus_per_cell,
            max_retries=args.max_retries,
            num_cpus=args.jobs,
            plugins=plugins,
        )
    elif args.jobs == 1:
        executor = SerialExecutor()
    else:
        executor = ProcessExecutor(args.jobs, max_retries=args.max_retries, plugins=plugins)
    executor.check()
    return executor


def _listing() -> str:
    from synthbench import datasets
    from synthbench.methods import get_method, method_names
    from synthbench.models.presets import PRESETS
    from synthbench.scoring import get_scorer, scorer_names, scorer_options
    from synthbench.scoring.fragility.scorer import attack_access
    from synthbench.suites import load_suite, suite_names

    lines = ["input kinds (a map; default decoys; the model judged for a method that explains none; headline metric):"]
    lines += [
        f"  {k.name:<24} {k.map}; {k.decoy}s {k.default_decoys}; {k.default_model}; {k.headline_metric}"
        for k in INPUT_KINDS.values()
    ]
    lines.append("datasets:")
    lines += [f"  {n:<24} {d}" for n, d in datasets.describe().items()]
    lines.append("default grid (each flag left out):")
    lines += [f"  {flag:<24} {default}" for flag, (default, _) in GRID_FLAGS.items()]
    lines.append("suites (--suite NAME):")
    for n in suite_names():
        lines.append(f"  {n:<24} {load_suite(n).description}")
    lines.append("model presets (--model; neural methods explain each, * = run by default):")
    for n, preset in PRESETS.items():
        default = n in RUN_PRESETS or preset.kind == "cnn"
        lines.append(f"  {n:<24}{'*' if default else ' '} [{preset.kind}] {preset.description}")
    lines.append("scorers (--scorer):")
    for n in scorer_names():
        lines.append(f"  {n:<24} {', '.join(get_scorer(n).metrics)}")
        if scorer_options(n):
            lines.append(f"  {'':<24} options: {', '.join(scorer_options(n))}")
    lines.append("methods (* = run by default):")
    width = max(map(len, method_names())) + 1
    for n in method_names():
        spec = get_method(n)
        limit = f" [at most {spec.max_features} features]" if spec.max_features else ""
        kinds = "" if spec.inputs == ("tabular",) else f" [{' / '.join(spec.inputs)}]"
        access = {attack_access(spec, kind) for kind in spec.inputs}
        fragility = f" [fragility: {' / '.join(sorted(access))}]"
        lines.append(f"  {n:<{width}}{'*' if spec.default else ' '} {spec.description}{kinds}{limit}{fragility}")
    return "\n".join(lines)


def _command(argv: list[str] | None) -> str:
    import shlex

    return " ".join(["python -m synthbench.run", shlex.join(sys.argv[1:] if argv is None else argv)]).strip()


def main(argv: list[str] | None = None) -> int:
    setup_logging()
    try:
        args, cells = parse(argv)
    except UsageError as exc:
        return print_error("synthbench.run", exc)
    if args.list:
        print(_listing())
        return 0
    from synthbench.models import TrainSettings
    from synthbench.protocol import MethodOutputError
    from synthbench.runner.execute import execute
    from synthbench.runner.executors import ExecutorError
    from synthbench.runner.export import ExportError, carry_export, export_of, read_export, write_export
    from synthbench.runner.judged import entry_labels
    from synthbench.runner.leaderboard import format_competence, format_leaderboard, leaderboard
    from synthbench.runner.store import ResultStore, StoreError

    try:
        executor = make_executor(args)
        store = ResultStore(args.store)
        if args.resume_from is not None:
            carried, foreign = carry_export(store, read_export(args.resume_from), cells, args.resume_from.name)
            beyond = f" ({foreign} of its cells are not of this grid: left out)" if foreign else ""
            print(f"carried {carried} finished cells of {args.resume_from} into {args.store}{beyond}")
    except (ExecutorError, StoreError, ExportError) as exc:
        return print_error("synthbench.run", exc)

    from tqdm import tqdm

    bar: Any = None  # the progress bar, made when the run knows how many cells it computes

    def start(n: int) -> None:
        nonlocal bar
        bar = tqdm(total=n, unit="cell", desc="synthbench", file=sys.stderr, disable=args.quiet, dynamic_ncols=True)

    def advance(result) -> None:
        cell = result.cell
        where = cell.dataset if cell.n_decoys is None else f"{cell.dataset}/{cell.n_decoys}"
        bar.set_postfix_str(f"{where} {cell.label}", refresh=False)
        bar.update(1)

    try:
        with store:
            settings = TrainSettings(
                device=args.device,
                cache_dir=str(args.cache_dir or args.store.parent / "cache"),
                batch_memory=args.batch_memory << 20,
            )
            summary = execute(
                cells,
                store,
                executor=executor,
                force=args.force,
                settings=settings,
                on_start=start,
                on_cell=advance,
                command=_command(argv),
            )
            if bar is not None:
                bar.close()
            ids = [c.cell_id for c in cells]
            export = export_of(store, ids) if args.export is not None else None
            rows = store.scores(ids) if export is None else export.rows
            fitted = store.cells(ids)
            catalogue = store.catalogue()
    except KeyboardInterrupt:
        newline = "\n" if bar is not None and not bar.disable else ""  # below the progress bar
        if args.export is not None:
            with ResultStore(args.store, readonly=True) as stored:
                write_export(export_of(stored, [c.cell_id for c in cells]), args.export)
        exported = f", its cells so far exported to {args.export}" if args.export is not None else ""
        print(
            f"{newline}synthbench.run: interrupted; finished cells are stored{exported}, rerun the command to resume",
            file=sys.stderr,
        )
        return 130
    except (ExecutorError, StoreError, MethodOutputError) as exc:
        if bar is not None:
            bar.close()
        print(
            f"synthbench.run: error: {exc}; the run stopped, cells finished before are kept in {args.store}",
            file=sys.stderr,
        )
        return 2
    board = leaderboard(rows, args.metric, catalogue=catalogue, competence=args.competence, all_models=args.all_models)
    print(format_leaderboard(board, args.metric))
    print(format_competence(fitted, catalogue, args.competence))
    over = (
        f", {summary.over_limit} skipped with their reason (a method's feature limit, a method the scorer cannot judge)"
        if summary.over_limit
        else ""
    )
    busy = f", {summary.busy} left to another run computing them (rerun to collect them)" if summary.busy else ""
    print(
        f"\n{summary.ok} cells run, {summary.skipped} already in {args.store}, {summary.failed} failed{over}{busy} "
        f"in {summary.wall_seconds:.1f}s"
    )
    print(f"report: python -m synthbench.report --store {args.store} --out {args.store.parent / 'report'}")
    if export is not None:
        arrays = write_export(export, args.export)
        beside = f" and their curves and per-example values to {arrays}" if arrays else ""
        print(f"wrote {len(rows)} rows to {args.export}{beside}")
    failed = rows[rows["status"] == "failed"].drop_duplicates("cell_id")
    if not failed.empty:
        print(f"\n{len(failed)} cells failed:", file=sys.stderr)
        shown = failed.head(20)
        for (_, r), label in zip(shown.iterrows(), entry_labels(shown)):
            print(f"  {r['dataset']}/{r['n_decoys']} fold {r['fold']} {label}: {r['message']}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
