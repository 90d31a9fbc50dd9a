"""The results database's schema: the SQL of every table, and the steps that upgrade an older store.

Schema (version 11)::

    meta(key PRIMARY KEY, value)                 application = synthbench, schema_version = 11
    runs(run_id PRIMARY KEY, started_at, finished_at, wall_seconds, status, command, executor,
         machine, package_version, cells_total, cells_pending, cells_ok, cells_failed, cells_skipped,
         host, pid, heartbeat_at)
    cells(cell_id PRIMARY KEY, dataset, dataset_params, n_samples, n_decoys, n_features, k,
          method, method_params, fold, n_folds, seed, explain, scorer, status, message, flags,
          seconds, peak_memory_bytes, model, permutation, versions, package_version, finished_at,
          suite, suite_hash, run_id, model_preset, scorer_seconds, scorer_params, input_shape,
          global_truth, masks, judged, judged_model)

``n_decoys`` is null for datasets without decoys; ``seconds`` is the method's time (and the
training of the models it needs), ``scorer_seconds`` the scorer's; ``scorer_params`` (JSON, null when
the scorer has none on that input kind) what else defines its values, such as the channel
aggregation of image maps. ``input_shape`` (JSON list: ``[p]`` for tables, ``[C, H, W]`` for
images), ``global_truth`` and ``masks`` (0 or 1: whether the data have global ground truth, and
per-instance masks) describe the cell's data; null where no data were made (a failed generator)
and for cells written before schema 7. ``judged`` is the cell's judged axis (the model kind a
control is judged on beside the input kind's default, ``forest``; part of the cell id; null
otherwise) and ``judged_model`` the model kind the cell's scorer measured (ROAD, ROAR, KAR:
``mlp``, ``cnn``, ``forest``; null for a scorer that judges no model and for cells written before
schema 8): reports pair each method with the control measured on the same model.
    datasets(dataset PRIMARY KEY, kind, decoys, family, description, plugin)
    methods(method PRIMARY KEY, family, description, inputs, plugin, control, reference)
                                                 what each dataset and method of the store is, as
                                                 registered when its cells were written: input kind
                                                 (``tabular``, ``image``), whether it takes decoys,
                                                 report family, and ``plugin``, what to pass to
                                                 ``--plugin`` to register it again (null: built in);
                                                 ``control`` (0 or 1) whether a method is a control
                                                 (null for rows written before schema 8);
                                                 ``reference`` the publication or software it follows
                                                 (``MethodSpec.reference``; '' when its plugin gives
                                                 none, null for rows written before schema 9)
    scorers(scorer PRIMARY KEY, metrics, abilities, plugin)
    models(model PRIMARY KEY, uses_preset, description, plugin)
                                                 what each scorer and model kind of the store is
                                                 (:mod:`synthbench.catalogue`): a scorer's metrics
                                                 (JSON: name -> direction, description, limits, unit,
                                                 kinds, control) and abilities (JSON), whether a preset
                                                 configures a model kind, and ``plugin`` as above
    scores(cell_id, metric, value, chance, PRIMARY KEY(cell_id, metric))
    claims(cell_id PRIMARY KEY, run_id, claimed_at)
    examples(cell_id PRIMARY KEY, shape, maps)   the first images' relevance maps of an image cell
    curves(cell_id, curve, x, replicate, value, PRIMARY KEY(cell_id, curve, x, replicate))
                                                 the curves a scorer measured (ROAD's MoRF and LeRF, ...)
    per_example(cell_id, metric, n, data, PRIMARY KEY(cell_id, metric))
                                                 a metric's value on each of the n explained examples
                                                 (float32 little-endian), for metrics that are a mean
                                                 over examples

Older stores are upgraded in place when opened for writing (version 1 has no suite columns,
version 2 no runs, version 3 no model presets: their cells explain the default
MLP preset of their time and carry none; version 4 no claims; version 5 no curves; version 6 no
datasets and methods tables and no data columns on cells: a store opened for writing records there
the datasets and methods this process has registered, so a report never needs the plugin that
registered them; version 7 no judged columns on cells and no control flag on methods: a store
opened for writing flags the methods this process has registered; version 8 no reference of
methods: a store opened for writing records the references of the methods this process has
registered; version 9 no scorers and models tables: a store opened for writing records the
scorers and model kinds of its cells that this process has registered; version 10 no per-example
values); opened read-only, they are
upgraded in a private in-memory copy, where what the file
does not record stays null. No upgrade changes a cell's id or its results, so a resumed run
recomputes nothing.
"""

from __future__ import annotations

__all__ = ["SCHEMA_VERSION", "APPLICATION", "SCHEMA", "UPGRADES"]

SCHEMA_VERSION = 11
APPLICATION = "synthbench"

_CELLS_V2 = """
CREATE TABLE {name} (
    cell_id TEXT PRIMARY KEY,
    dataset TEXT NOT NULL, dataset_params TEXT NOT NULL,
    n_samples INTEGER NOT NULL, n_decoys INTEGER NOT NULL, n_features INTEGER, k INTEGER,
    method TEXT NOT NULL, method_params TEXT NOT NULL,
    fold INTEGER NOT NULL, n_folds INTEGER NOT NULL, seed INTEGER NOT NULL,
    explain TEXT NOT NULL, scorer TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'skipped')), message TEXT,
    flags TEXT NOT NULL DEFAULT '',
    seconds REAL, peak_memory_bytes INTEGER,
    model TEXT, permutation TEXT, versions TEXT, package_version TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    suite TEXT, suite_hash TEXT{extra}
)"""
_CELLS_V4_COLUMNS = (
    "cell_id, dataset, dataset_params, n_samples, n_decoys, n_features, k, method, method_params, fold, "
    "n_folds, seed, explain, scorer, status, message, flags, seconds, peak_memory_bytes, model, "
    "permutation, versions, package_version, finished_at, suite, suite_hash, run_id, model_preset"
)
_CELLS_V5 = """
CREATE TABLE {name} (
    cell_id TEXT PRIMARY KEY,
    dataset TEXT NOT NULL, dataset_params TEXT NOT NULL,
    n_samples INTEGER NOT NULL, n_decoys INTEGER, n_features INTEGER, k INTEGER,
    method TEXT NOT NULL, method_params TEXT NOT NULL,
    fold INTEGER NOT NULL, n_folds INTEGER NOT NULL, seed INTEGER NOT NULL,
    explain TEXT NOT NULL, scorer TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'skipped')), message TEXT,
    flags TEXT NOT NULL DEFAULT '',
    seconds REAL, peak_memory_bytes INTEGER,
    model TEXT, permutation TEXT, versions TEXT, package_version TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    suite TEXT, suite_hash TEXT,
    run_id INTEGER REFERENCES runs(run_id),
    model_preset TEXT,
    scorer_seconds REAL,
    scorer_params TEXT{extra}
)"""
#: Schema 7: what each cell's data were (see the module docstring).
_CELLS_V7_COLUMNS = ("input_shape TEXT", "global_truth INTEGER", "masks INTEGER")
#: Schema 8: the model a cell was judged on (see the module docstring).
_CELLS_V8_COLUMNS = ("judged TEXT", "judged_model TEXT")
_CELLS = _CELLS_V5.format(name="cells", extra="".join(f",\n    {c}" for c in (*_CELLS_V7_COLUMNS, *_CELLS_V8_COLUMNS)))
_RUNS = """
CREATE TABLE runs (
    run_id INTEGER PRIMARY KEY,
    started_at TEXT NOT NULL, finished_at TEXT, wall_seconds REAL,
    status TEXT NOT NULL CHECK (status IN ('running', 'finished', 'interrupted', 'failed')),
    command TEXT, executor TEXT, machine TEXT, package_version TEXT NOT NULL,
    cells_total INTEGER, cells_pending INTEGER, cells_ok INTEGER, cells_failed INTEGER, cells_skipped INTEGER{extra}
)"""
_RUN_LIVENESS = ("host TEXT", "pid INTEGER", "heartbeat_at REAL")
_CLAIMS = """
CREATE TABLE claims (
    cell_id TEXT PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(run_id),
    claimed_at REAL NOT NULL
)"""
_V1_COLUMNS = (
    "cell_id, dataset, dataset_params, n_samples, n_decoys, n_features, k, method, method_params, fold, "
    "n_folds, seed, explain, scorer, status, message, flags, seconds, peak_memory_bytes, model, "
    "permutation, versions, package_version, finished_at"
)
_EXAMPLES = """
CREATE TABLE examples (
    cell_id TEXT PRIMARY KEY REFERENCES cells(cell_id) ON DELETE CASCADE,
    shape TEXT NOT NULL, maps BLOB NOT NULL
)"""
_CURVES = """
CREATE TABLE curves (
    cell_id TEXT NOT NULL REFERENCES cells(cell_id) ON DELETE CASCADE,
    curve TEXT NOT NULL, x REAL NOT NULL, replicate INTEGER NOT NULL, value REAL,
    PRIMARY KEY (cell_id, curve, x, replicate)
)"""
_PER_EXAMPLE = """
CREATE TABLE per_example (
    cell_id TEXT NOT NULL REFERENCES cells(cell_id) ON DELETE CASCADE,
    metric TEXT NOT NULL, n INTEGER NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (cell_id, metric)
)"""
_DATASETS = """
CREATE TABLE datasets (
    dataset TEXT PRIMARY KEY,
    kind TEXT NOT NULL, decoys INTEGER NOT NULL, family TEXT, description TEXT, plugin TEXT
)"""
_METHODS = """
CREATE TABLE methods (
    method TEXT PRIMARY KEY,
    family TEXT, description TEXT, inputs TEXT, plugin TEXT{extra}
)"""
_METHODS_V8_COLUMNS = ("control INTEGER",)
#: Schema 9: the publication or software each method follows (``MethodSpec.reference``).
_METHODS_V9_COLUMNS = ("reference TEXT",)
_SCORERS = """
CREATE TABLE scorers (
    scorer TEXT PRIMARY KEY,
    metrics TEXT NOT NULL, abilities TEXT NOT NULL, plugin TEXT
)"""
_MODELS = """
CREATE TABLE models (
    model TEXT PRIMARY KEY,
    uses_preset INTEGER NOT NULL, description TEXT, plugin TEXT
)"""
SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    _RUNS.format(extra="".join(f", {c}" for c in _RUN_LIVENESS)),
    _CELLS,
    """CREATE TABLE scores (
    cell_id TEXT NOT NULL REFERENCES cells(cell_id) ON DELETE CASCADE,
    metric TEXT NOT NULL, value REAL, chance REAL,
    PRIMARY KEY (cell_id, metric)
)""",
    "CREATE INDEX cells_grid ON cells(dataset, n_decoys, method)",
    _CLAIMS,
    _EXAMPLES,
    _CURVES,
    _PER_EXAMPLE,
    _DATASETS,
    _METHODS.format(extra="".join(f", {c}" for c in (*_METHODS_V8_COLUMNS, *_METHODS_V9_COLUMNS))),
    _SCORERS,
    _MODELS,
)

#: schema version -> statements that bring it to the next version (run with foreign keys off,
#: in one transaction). 1 -> 2: suite columns, and the status 'skipped'; SQLite cannot change a
#: CHECK constraint in place, so the cells table is rebuilt as SQLite's documentation prescribes.
#: 2 -> 3: the runs table, and each cell's run. 3 -> 4: the MLP preset a cell explains. 4 -> 5:
#: claims, the host, process and heartbeat of each run, the scorer's seconds and parameters,
#: example maps, and a nullable ``n_decoys`` (datasets without decoys; the cells table is rebuilt
#: again). 5 -> 6: the curves scorers measure. 6 -> 7: the datasets and methods tables and the data
#: columns of cells (tables and columns added, nothing rebuilt: every cell keeps its id and row).
#: 7 -> 8: the judged columns of cells and the control flag of methods (columns added). 8 -> 9: the
#: reference of methods (a column added). 9 -> 10: the scorers and models tables. 10 -> 11: per-example values.
UPGRADES = {
    "1": (
        _CELLS_V2.format(name="cells_v2", extra=""),
        f"INSERT INTO cells_v2 ({_V1_COLUMNS}) SELECT {_V1_COLUMNS} FROM cells",
        "DROP TABLE cells",
        "ALTER TABLE cells_v2 RENAME TO cells",
        "CREATE INDEX cells_grid ON cells(dataset, n_decoys, method)",
    ),
    "2": (
        _RUNS.format(extra=""),
        "ALTER TABLE cells ADD COLUMN run_id INTEGER REFERENCES runs(run_id)",
    ),
    "3": ("ALTER TABLE cells ADD COLUMN model_preset TEXT",),
    "4": (
        _CELLS_V5.format(name="cells_v5", extra=""),
        f"INSERT INTO cells_v5 ({_CELLS_V4_COLUMNS}) SELECT {_CELLS_V4_COLUMNS} FROM cells",
        "DROP TABLE cells",
        "ALTER TABLE cells_v5 RENAME TO cells",
        "CREATE INDEX cells_grid ON cells(dataset, n_decoys, method)",
        *(f"ALTER TABLE runs ADD COLUMN {c}" for c in _RUN_LIVENESS),
        _CLAIMS,
        _EXAMPLES,
    ),
    "5": (_CURVES,),
    "6": (*(f"ALTER TABLE cells ADD COLUMN {c}" for c in _CELLS_V7_COLUMNS), _DATASETS, _METHODS.format(extra="")),
    "7": (
        *(f"ALTER TABLE cells ADD COLUMN {c}" for c in _CELLS_V8_COLUMNS),
        *(f"ALTER TABLE methods ADD COLUMN {c}" for c in _METHODS_V8_COLUMNS),
    ),
    "8": tuple(f"ALTER TABLE methods ADD COLUMN {c}" for c in _METHODS_V9_COLUMNS),
    "9": (_SCORERS, _MODELS),
    "10": (_PER_EXAMPLE,),
}
