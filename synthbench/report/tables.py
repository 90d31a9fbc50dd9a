"""Report tables: means with 95 % confidence intervals, per-decoy curves and breakpoints.

Confidence intervals are Student-t intervals of the mean over cells (folds and seeds of the same
configuration are the replicates): ``mean ± t(0.975, n - 1) · sd / sqrt(n)``, clipped to the
metric's declared limits (best_k cannot exceed 1); undefined (NaN) for a single cell. Only cells with status ``ok``
enter a mean; failed, skipped (over a
method's feature limit) and missing cells are counted beside it, never averaged as zeros.
"""

from __future__ import annotations

import json
from collections.abc import Collection

import numpy as np
import pandas as pd

from synthbench.catalogue import RUNG_PARAM, MetricInfo
from synthbench.report.results import Results
from synthbench.runner.competence import below_competence
from synthbench.runner.competence import model_fits as runner_model_fits
from synthbench.runner.judged import model_key

__all__ = [
    "mean_ci",
    "summary_table",
    "scorer_curve_table",
    "data_word",
    "beside_truth",
    "judged_values",
    "judgeable",
    "agreement",
    "setting_label",
    "decoy_table",
    "sample_table",
    "model_fits",
    "model_table",
    "overview_table",
    "breakpoints",
    "pareto_front",
    "example_maps",
    "BREAKPOINT_LEVEL",
]

#: best_k a method must keep at every decoy count up to its breakpoint.
BREAKPOINT_LEVEL = 0.9


def mean_ci(
    values: pd.Series | np.ndarray, level: float = 0.95, limits: tuple[float, float] = (-np.inf, np.inf)
) -> tuple[float, float, float, int]:
    """Mean, lower and upper bound of its Student-t confidence interval (clipped to ``limits``), and the count.

    NaN values are dropped first; with fewer than two values the bounds are NaN, and with none the mean is NaN too.
    """
    from scipy import stats

    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    n = v.size
    if n == 0:
        return np.nan, np.nan, np.nan, 0
    mean = float(v.mean())
    if n < 2:
        return mean, np.nan, np.nan, n
    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * v.std(ddof=1) / np.sqrt(n))
    return mean, max(mean - half, limits[0]), min(mean + half, limits[1]), n


def _metric_block(rows: pd.DataFrame, metric: str, results: Results) -> pd.DataFrame:
    """Mean, CI and chance of ``metric`` per method of ``rows`` (score rows of ``results``)."""
    sel = rows[rows["metric"] == metric]
    columns = [metric, f"{metric}_lo", f"{metric}_hi", f"{metric}_chance", "cells"]
    m = results.metric(metric)
    control = m.control  # chance measured as a control method's mean in the same rows, on the same model
    sel = sel.assign(model=model_key(sel, results.catalogue))
    controls = sel[sel["base_method"] == control]
    out = {}
    for method, g in sel.groupby("method", sort=False):
        mean, lo, hi, n = mean_ci(g["value"], limits=m.limits)
        if control is None:
            chance = g["chance"].mean()
        else:  # NaN when no control was measured on the method's model
            chance = controls.loc[controls["model"].isin(g["model"].unique()), "value"].mean()
        out[method] = [mean, lo, hi, chance, n]
    return pd.DataFrame.from_dict(out, orient="index", columns=columns)


def summary_table(
    results: Results, *, metrics: tuple[str, ...] = ("best_k", "best_2k"), setting: str | None = None
) -> pd.DataFrame:
    """One row per method: each metric's mean, 95 % CI and chance, cost and cell counts.

    Parameters
    ----------
    results : loaded store
    metrics : metric names; the first one orders the rows (best first, by its direction)
    setting : restrict to one setting (dataset); None = every cell of the store

    Returns
    -------
    DataFrame indexed by method with, for each metric ``m``: ``m``, ``m_lo``, ``m_hi``,
    ``m_chance``; then ``cells`` (ok cells averaged), ``seconds`` (the method's own mean wall seconds
    per ok cell, without training the shared models it explains), ``model_seconds`` (the mean
    training seconds of those models per cell, 0 for a method that explains none), ``incompetent`` (ok cells
    whose model's competence is below the results' threshold), ``failed``, ``skipped`` and ``missing`` cell counts.
    """
    scores, cells, missing = results.scores, results.cells, results.missing()
    if setting is not None:
        scores = scores[scores["setting"] == setting]
        cells = cells[cells["setting"] == setting]
        missing = missing[missing["setting"] == setting]
    methods = results.methods  # every method of the store, so one absent from this setting shows as missing
    blocks = [_metric_block(scores, m, results).drop(columns="cells", errors="ignore") for m in metrics[1:]]
    table = _metric_block(scores, metrics[0], results).reindex(methods)
    table["cells"] = table["cells"].fillna(0).astype(int)
    for b in blocks:
        table = table.join(b)
    ok = cells[cells["status"] == "ok"]
    table["seconds"] = ok.groupby("method")["method_seconds"].mean()
    table["model_seconds"] = ok.groupby("method")["train_seconds"].mean()
    table["incompetent"] = ok["incompetent"].groupby(ok["method"]).sum()
    for status in ("failed", "skipped"):
        table[status] = (cells["status"] == status).groupby(cells["method"]).sum()
    table["missing"] = missing.groupby("method").size()
    counts = ["incompetent", "failed", "skipped", "missing"]
    table[counts] = table[counts].fillna(0).astype(int)
    ascending = results.metric(metrics[0]).direction == "lower"
    return table.sort_values(metrics[0], ascending=ascending, na_position="last")


def decoy_table(results: Results, metric: str = "best_k") -> pd.DataFrame:
    """``metric`` per method, setting and decoy count: mean, 95 % CI, chance and cell count.

    Returns
    -------
    DataFrame with columns ``method, setting, n_decoys, mean, lo, hi, chance, cells``, sorted
    by method, setting (store order) and decoy count.
    """
    sel = results.scores[results.scores["metric"] == metric]
    table = _curve_points(sel, ["method", "setting", "n_decoys"], results.metric(metric).limits)
    return _in_store_order(table, results, "method")


def sample_table(results: Results, metric: str = "best_k") -> pd.DataFrame:
    """``metric`` per method, dataset, decoy count and sample size, for datasets stored at several sample sizes.

    Returns
    -------
    DataFrame with columns ``method, dataset, n_decoys, n_samples, panel`` (``"ring, 100 decoys"``),
    ``mean, lo, hi, chance, cells``, sorted by method, dataset, decoy count and sample size.
    Empty when no dataset has more than one sample size.
    """
    sel = results.scores[results.scores["metric"] == metric]
    several = sel.groupby("dataset")["n_samples"].transform("nunique") > 1
    table = _curve_points(sel[several], ["method", "dataset", "n_decoys", "n_samples"], results.metric(metric).limits)
    table.insert(4, "panel", table["dataset"] + ", " + table["n_decoys"].astype(str) + " decoys")
    return table


def _curve_points(sel: pd.DataFrame, keys: list[str], limits: tuple[float, float]) -> pd.DataFrame:
    """Mean, 95 % CI (clipped to the metric's ``limits``), chance and cell count of ``sel``'s values per group of
    ``keys``, sorted by ``keys``.

    Columns: ``keys`` (integer keys as Python ints), ``mean, lo, hi, chance, cells``.
    """
    rows = []
    for key, g in sel.groupby(keys):
        mean, lo, hi, n = mean_ci(g["value"], limits=limits)
        rows.append((*key, mean, lo, hi, g["chance"].mean(), n))
    table = pd.DataFrame(rows, columns=[*keys, "mean", "lo", "hi", "chance", "cells"])
    for k in ("n_decoys", "n_samples"):
        if k in keys:
            table[k] = table[k].astype(int)
    return table


def model_fits(results: Results) -> pd.DataFrame:
    """Every shared model the store's cells record, once per training (:func:`synthbench.runner.competence.model_fits`).

    A fold's model (the MLP of a preset, the forest, the booster, the CNN) is trained once per (setting, decoy
    count, seed, fold) in a run and shared by every cell of that fold that needs it; each such cell
    records it, so fits are counted once per run whatever number of cells explain them.

    Returns
    -------
    DataFrame with the columns of :data:`~synthbench.runner.competence.FIT_COLUMNS` and ``setting`` after
    ``model``; in store order.
    """
    fits = runner_model_fits(results.cells, results.catalogue)
    settings = results.cells.drop_duplicates(["dataset", "dataset_params", "n_samples"]).set_index(
        ["dataset", "dataset_params", "n_samples"]
    )["setting"]
    setting = [settings.get((d, p, n)) for d, p, n in zip(fits["dataset"], fits["dataset_params"], fits["n_samples"])]
    return fits.assign(setting=setting)[["model", "setting", *fits.columns[1:]]]


def model_table(results: Results) -> pd.DataFrame:
    """Held-out quality of the shared models the methods explain, per model, setting and decoy count.

    A model configured by a preset is named with it (``mlp@sparse_mlp``), so presets are never
    pooled.

    A fold's model (the MLP, the forest) is shared by every method that needs it, so it is
    counted once per (setting, decoy count, seed, fold), whatever number of cells explain it.
    Only cells with status ``ok`` record their model.

    Returns
    -------
    DataFrame with columns ``model, setting, n_decoys, dataset, n_samples, auroc, auroc_lo, auroc_hi`` (mean held-out
    AUROC and its 95 % Student-t interval over folds and seeds), ``accuracy`` (mean held-out
    accuracy), ``train_seconds`` (mean seconds of one training), ``models`` (folds × seeds),
    ``competence``, ``ceiling`` and ``bayes`` (the generator's Bayes accuracy of the held-out rows, shown beside
    the ceiling; means over the fits that record them), ``incompetent`` (of the fits, those
    below the results' competence threshold; a fit recorded before ceilings, by the flag its run wrote:
    held-out AUROC below 0.6) and
    ``methods`` (the methods that explain it, by name); sorted by model, setting (store order) and
    decoy count. Empty when no cell records a model.
    """
    columns = [
        "model",
        "setting",
        "n_decoys",
        "dataset",
        "n_samples",
        "auroc",
        "auroc_lo",
        "auroc_hi",
        "accuracy",
        "competence",
        "ceiling",
        "bayes",
        "train_seconds",
        "models",
        "incompetent",
        "methods",
    ]
    fits = model_fits(results)
    keys = ["model", "setting", "n_decoys", "dataset", "n_samples"]
    out = []
    for key, g in fits.groupby(keys):
        once = g.drop_duplicates(["seed", "fold"])  # a fold trained again by a second run is one model
        mean, lo, hi, _ = mean_ci(once["auroc"], limits=(0.0, 1.0))
        below = below_competence(once, results.competence_threshold)
        users = sorted({m for ms in g["methods"] for m in ms})
        out.append(
            (
                *key,
                mean,
                lo,
                hi,
                once["accuracy"].mean(),
                once["competence"].mean(),
                once["ceiling"].mean(),
                once["bayes_accuracy"].mean(),
                g["train_seconds"].mean(),
                len(once),
                int(below.sum()),
                users,
            )
        )
    return _in_store_order(pd.DataFrame(out, columns=columns), results, "model")


def _in_store_order(table: pd.DataFrame, results: Results, first: str) -> pd.DataFrame:
    """``table`` sorted by ``first``, then setting in the store's order, then decoy count."""
    order = {s: i for i, s in enumerate(results.settings)}
    return table.sort_values(
        [first, "setting", "n_decoys"], key=lambda c: c.map(order) if c.name == "setting" else c, ignore_index=True
    )


def breakpoints(curves: pd.DataFrame, level: float = BREAKPOINT_LEVEL) -> pd.DataFrame:
    """The largest decoy count up to which a method's mean stays ``>= level``, per method and setting.

    ``curves`` is :func:`decoy_table`'s output (for best_k). Walking up the measured decoy
    counts, the breakpoint is the last count before the first mean below ``level``.

    Returns
    -------
    DataFrame with columns ``method, setting, breakpoint`` (float; NaN when the mean is already
    below ``level`` at the smallest measured count), ``held_throughout`` (True when no measured
    count fell below: the breakpoint is then a lower bound), ``smallest`` and ``largest`` (the
    measured decoy range).
    """
    rows = []
    for (method, setting), g in curves.groupby(["method", "setting"], sort=False):
        g = g.sort_values("n_decoys")
        below = (g["mean"] < level).to_numpy()
        decoys = g["n_decoys"].to_numpy()
        first_below = int(np.argmax(below)) if below.any() else len(below)
        bp = float(decoys[first_below - 1]) if first_below > 0 else np.nan
        rows.append((method, setting, bp, not below.any(), int(decoys[0]), int(decoys[-1])))
    return pd.DataFrame(rows, columns=["method", "setting", "breakpoint", "held_throughout", "smallest", "largest"])


def pareto_front(summary: pd.DataFrame, metric: MetricInfo) -> pd.DataFrame:
    """Rows of :func:`summary_table` that no other method beats on both cost and quality, fastest first.

    A method is on the front when every faster method has a worse mean ``metric`` (by its
    direction; :meth:`Results.metric`); methods without seconds or a mean are ignored.
    """
    higher, name = metric.direction == "higher", metric.name
    data = summary.dropna(subset=[name, "seconds"])
    ordered = data.sort_values(["seconds", name], ascending=[True, not higher])
    keep, best = [], -np.inf
    for method, value in ordered[name].items():
        score = value if higher else -value
        if score > best:
            keep.append(method)
            best = score
    return ordered.loc[keep]


def example_maps(results: Results) -> dict[str, tuple[np.ndarray | None, np.ndarray | None, dict[str, np.ndarray]]]:
    """Per image setting: the first explained images of one fold, their pixel masks and each method's stored maps.

    The fold is the first (largest distractor count, smallest seed and fold) with stored maps; the images are
    generated again from the cells' configuration (the data are deterministic). Returns
    ``{setting: (images (m, C, H, W), masks (m, H, W) or None, {method: maps (m, H, W)})}``; images and
    masks are None for a dataset this process cannot make (a plugin's, not imported here: see
    :attr:`Results.datasets`), whose stored maps are returned alone.
    """
    from synthbench.protocol import cell_fold
    from synthbench.runner.store import ResultStore
    from synthbench.scoring.truth.localisation import pixel_masks

    ok = results.cells[(results.cells["status"] == "ok") & (results.cells["kind"] == "image")]
    if ok.empty:
        return {}
    with ResultStore(results.path, readonly=True) as store:
        stored = store.examples(ok["cell_id"])
    out: dict[str, tuple[np.ndarray | None, np.ndarray | None, dict[str, np.ndarray]]] = {}
    for setting, g in ok[ok["cell_id"].isin(list(stored))].groupby("setting", sort=False):
        first = g.sort_values(["n_decoys", "seed", "fold"], ascending=[False, True, True]).iloc[0]
        same = g[
            (g["n_decoys"].fillna(-1) == (-1 if pd.isna(first.n_decoys) else first.n_decoys))
            & (g["seed"] == first.seed)
            & (g["fold"] == first.fold)
        ]
        maps = {row.method: stored[row.cell_id] for row in same.itertuples()}
        if not _can_make(results, first.dataset):
            out[setting] = (None, None, maps)
            continue
        data, _ = cell_fold(
            first.dataset,
            n_samples=int(first.n_samples),
            seed=int(first.seed),
            n_folds=int(first.n_folds),
            fold=int(first.fold),
            n_decoys=None if pd.isna(first.n_decoys) else int(first.n_decoys),
            dataset_params=json.loads(first.dataset_params),
            explain=first.explain,
            data_dir=results.data_dir,
        )
        m = min(len(v) for v in maps.values())
        masks = None if data.relevant_local is None else pixel_masks(data.relevant_local[:m])
        out[setting] = (data.X_explain[:m], masks, {k: v[:m] for k, v in maps.items()})
    return out


def _can_make(results: Results, dataset: str) -> bool:
    """Whether this process can generate ``dataset`` again as the store's cells had it: it registers it, as the
    store describes it (input kind, decoys), and, for a data set read from files, has the folder of its files
    (``results.data_dir``)."""
    from synthbench import datasets

    if dataset not in datasets.names():
        return False
    here, info = datasets.spec(dataset), results.datasets
    same = dataset not in info.index or (
        here.kind == info.at[dataset, "kind"] and here.decoys == bool(info.at[dataset, "decoys"])
    )
    return same and (results.data_dir is not None or not here.reads_files)


def data_word(kind: str) -> str:
    """How the report names an input kind's data: ``images`` for ``image``, ``tables`` otherwise."""
    return "images" if kind == "image" else "tables"


def setting_label(setting: str, decoys: int) -> str:
    """``setting/decoys``, or the setting alone for a dataset without decoys (``decoys`` -1)."""
    return setting if decoys < 0 else f"{setting}/{decoys}"


def scorer_curve_table(results: Results) -> pd.DataFrame:
    """Mean of each stored curve per method, setting, decoy count, curve and x, over folds, seeds and replicates.

    Returns
    -------
    DataFrame with columns ``method, setting, n_decoys, curve, x, mean, lo, hi, cells`` (``n_decoys``
    -1 for a dataset without decoys; 95 % Student-t interval over the cells' per-cell means).
    """
    c = results.curves
    if c.empty:
        return pd.DataFrame(columns=["method", "setting", "n_decoys", "curve", "x", "mean", "lo", "hi", "cells"])
    c = c.assign(n_decoys=c["n_decoys"].fillna(-1).astype(int))
    per_cell = c.groupby(["method", "setting", "n_decoys", "curve", "x", "cell_id"], sort=False)["value"].mean()
    rows = [(*key, *mean_ci(g)) for key, g in per_cell.groupby(level=[0, 1, 2, 3, 4], sort=False)]
    return pd.DataFrame(rows, columns=["method", "setting", "n_decoys", "curve", "x", "mean", "lo", "hi", "cells"])


def paired_cells(verdict: Results, truth: Results, metric: str, truth_metric: str) -> pd.DataFrame:
    """A scorer's verdict on each method beside the ground truth's, cell by cell.

    Cells are paired by configuration (setting, decoy count, seed, fold, method); a method that
    explains no model (``random``) pairs its one truth cell with its verdict on each model it
    was judged on (``random@sparse_mlp``). Only pairs where both are finished count. Returns the
    columns ``setting, n_decoys, seed, fold, method, control, reads_model, model, incompetent, rung, truth, verdict``
    (``n_decoys`` -1 for a dataset without decoys; ``control`` True for a control method's rows; ``reads_model``
    True where the verdict's cell explains a model, as its recorded ``model`` says; ``model`` the model the
    verdict's cell explains or was judged on, its preset or else its kind, ``""`` for neither; ``incompetent``
    whether that model fell below the competence threshold). Under a verdict that judges how maps depend
    on the model's parameters (a scorer declaring ``judges_parameters``: MPRT, sMPRT, eMPRT, RandomLogit), the
    methods that read no model are left out (their maps are the same on every model by construction); the
    controls stay.
    """
    keys = ["setting", "n_decoys", "seed", "fold", "pair"]
    model_free = set(truth.scores.loc[truth.scores["model_preset"].isna(), "base_method"])
    verdict_side = ["method", "control", "reads_model", "model", "incompetent", "rung"]
    paired = (
        judged_values(truth, truth_metric, model_free)
        .drop(columns=[*verdict_side, "cell_id"])
        .merge(
            judged_values(verdict, metric, model_free).drop(columns="cell_id"), on=keys, suffixes=("_truth", "_verdict")
        )
    )
    paired = paired.rename(columns={"value_truth": "truth", "value_verdict": "verdict"})[
        ["setting", "n_decoys", "seed", "fold", *verdict_side, "truth", "verdict"]
    ]
    return judgeable(paired, verdict)


def judged_values(results: Results, metric: str, model_free: Collection[str] = ()) -> pd.DataFrame:
    """Each finished value of ``metric`` with what groups it: ``setting, n_decoys`` (-1 without decoys), ``seed, fold,
    pair`` (the entry, or for a method in ``model_free`` its registered name, so its one truth cell pairs with its
    verdict on each model), ``cell_id, method, control, reads_model`` (the cell explains a model, as its recorded
    ``model`` says), ``model`` (the model the cell explains or was judged on: its preset, else its kind; ``""`` for
    neither), ``incompetent`` (that model fell below the competence threshold), ``rung`` (a ladder rung's random
    share, 1 for the ``random`` control, the ladder's top rung; NaN for every other method) and ``value``."""
    sel = results.scores[results.scores["metric"] == metric]
    recorded = sel["cell_id"].map(results.cells.set_index("cell_id")["model"])
    params = sel["cell_id"].map(results.cells.set_index("cell_id")["method_params"])
    share = params.map(lambda p: json.loads(p).get(RUNG_PARAM, np.nan) if isinstance(p, str) and p else np.nan)
    kind = recorded.map(lambda m: next(iter(json.loads(m)), "") if isinstance(m, str) else "")
    return sel.assign(
        n_decoys=sel["n_decoys"].fillna(-1).astype(int),
        pair=sel["method"].where(~sel["base_method"].isin(model_free), sel["base_method"]),
        control=sel["control"].fillna(False).astype(bool),
        reads_model=recorded.notna(),
        model=sel["model_preset"].fillna(sel["judged_model"]).fillna(kind).fillna(""),
        incompetent=sel["incompetent"].fillna(False).astype(bool),
        rung=share.astype(float).where(sel["base_method"] != "random", 1.0),
    )[
        [
            "setting",
            "n_decoys",
            "seed",
            "fold",
            "pair",
            "cell_id",
            "method",
            "control",
            "reads_model",
            "model",
            "incompetent",
            "rung",
            "value",
        ]
    ]


def judgeable(rows: pd.DataFrame, verdict: Results) -> pd.DataFrame:
    """``rows`` (with ``reads_model`` and ``control``) less the methods that read no model, under a verdict that
    judges how maps depend on the model's parameters (a scorer declaring ``judges_parameters``); the controls stay."""
    scorers = set(verdict.cells["scorer"])
    if any(verdict.catalogue.scorer(s).abilities.judges_parameters for s in scorers):
        rows = rows[rows["reads_model"] | rows["control"]]
    return rows.reset_index(drop=True)


def beside_truth(verdict: Results, truth: Results, metric: str, truth_metric: str) -> pd.DataFrame:
    """:func:`paired_cells` averaged per setting, decoy count and method: the columns ``setting, n_decoys,
    method, truth, verdict, cells`` (means over the paired cells)."""
    paired = paired_cells(verdict, truth, metric, truth_metric)
    out = paired.groupby(["setting", "n_decoys", "method"], sort=False).agg(
        truth=("truth", "mean"), verdict=("verdict", "mean"), cells=("truth", "size")
    )
    return out.reset_index()


def agreement(table: pd.DataFrame, verdict_direction: str, truth_direction: str) -> pd.DataFrame:
    """Rank correlation between the orderings of methods by the truth and by the verdict, per setting and decoy count.

    ``table`` is :func:`beside_truth`'s output. The verdict's values are negated first when its
    direction differs from the truth's, so a positive coefficient always means *the verdict ranks
    methods as the truth does*. Returns ``setting, n_decoys, methods, spearman, spearman_p,
    kendall, kendall_p`` (scipy.stats; NaN with fewer than three methods or a constant column).
    """
    from scipy import stats

    sign = 1.0 if verdict_direction == truth_direction else -1.0
    rows = []
    for (setting, decoys), g in table.groupby(["setting", "n_decoys"], sort=False):
        n = len(g)
        if n < 3 or g["truth"].nunique() < 2 or g["verdict"].nunique() < 2:
            rows.append((setting, decoys, n, np.nan, np.nan, np.nan, np.nan))
            continue
        rho, rho_p = stats.spearmanr(g["truth"], sign * g["verdict"])
        tau, tau_p = stats.kendalltau(g["truth"], sign * g["verdict"])
        rows.append((setting, decoys, n, float(rho), float(rho_p), float(tau), float(tau_p)))
    return pd.DataFrame(
        rows, columns=["setting", "n_decoys", "methods", "spearman", "spearman_p", "kendall", "kendall_p"]
    )


def overview_table(results: Results, metric: str, scorer: str | None = None) -> pd.DataFrame:
    """``metric`` per method and column of the overview (setting and decoy count), with what the overview marks.

    Parameters
    ----------
    results : one part of a store (one scorer)
    metric : the part's headline metric
    scorer : the scorer that declares ``metric`` (needed where several declare it differently)

    Returns
    -------
    DataFrame with columns ``method, setting, n_decoys`` (-1 for a dataset without decoys), ``mean, lo, hi``
    (95 % Student-t interval over the cells), ``chance`` (the metric's chance in that column: its analytic
    value, or the mean of its ``control`` method there; NaN when neither is known), ``cells`` and
    ``incompetent`` (of those cells, how many explain a model below the competence threshold), in store order.
    """
    m = results.metric(metric, scorer)
    sel = results.scores[results.scores["metric"] == metric]
    sel = sel.assign(n_decoys=sel["n_decoys"].fillna(-1).astype(int))
    rows = []
    for (method, setting, decoys), g in sel.groupby(["method", "setting", "n_decoys"], sort=False):
        mean, lo, hi, n = mean_ci(g["value"], limits=m.limits)
        rows.append((method, setting, decoys, mean, lo, hi, g["chance"].mean(), n, int(g["incompetent"].sum())))
    table = pd.DataFrame(
        rows, columns=["method", "setting", "n_decoys", "mean", "lo", "hi", "chance", "cells", "incompetent"]
    )
    if m.control is not None:
        controls = sel[sel["base_method"] == m.control].groupby(["setting", "n_decoys"])["value"].mean()
        table["chance"] = [controls.get((s, d), np.nan) for s, d in zip(table["setting"], table["n_decoys"])]
    return _in_store_order(table, results, "method")
