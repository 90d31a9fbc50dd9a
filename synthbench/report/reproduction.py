"""The 2023 benchmark reproduced: the faithful suite beside the authors' published table, the corrected one beside it.

``python -m synthbench.report.reproduction`` writes ``docs/reproduction/index.md`` from the files beside it, and
from nothing else, so the same files write the same page, byte for byte:

- ``passemiers2023.csv.gz`` and ``passemiers2023_corrected.csv.gz``: the two suites' tidy rows as
  ``python -m synthbench.run --suite NAME --export FILE`` writes them;
- ``passemiers2023_draws.csv.gz`` (where it exists): the faithful protocol at seeds 1 and 2 (the suite
  ``passemiers2023_draws``), other draws of the data, the permutations and the models;
- ``published_2023.csv``: the authors' published table (``tables/table-1000.tex`` at commit 06afd2e of
  AntoinePassemiers/Feature-Selection-Benchmark), one row per method and dataset, best p and best 2p in percent as
  printed, with the names of the method in both suites;
- ``published_2023_per_m.csv``: the result files the table averages (``results/<method>-<dataset>-1000.txt``),
  best-k and best-2k per total feature count m, as fractions;
- ``published_2023_earlier_per_m.csv``: the same for an earlier run of the authors' code committed beside them
  (``old-results/``, m = k to 512, its data drawn again; no TreeSHAP, mutual information or DeepPINK): how far the
  authors' own two runs lie apart (both per-m files are written by ``benchmarks/published_2023.py`` from a clone);
- ``notes.toml``: what each correction changes, and the cause found for each gap that the noise does not explain.

A table entry is the paper's: the mean over the set's feature counts m of the mean over the 6 folds, in percent
(``best_k`` is the paper's "best p"). Its noise is the standard error of that entry from the spread of the folds,
``sqrt(sum_m var_m / folds_m) / M``: the authors' numbers are one seed's 6 folds as ours are, so two honest runs
differ by ``sqrt(2)`` times it; an entry's gap is called noise when it lies within twice that (the band shown). The
folds of one run share one draw of the data, so that band understates how far two runs lie apart; where the draws'
export holds the entry at MIN_DRAWS seeds or more (seed 0, the faithful run's, and the others), a gap is also called
noise when the published value lies within the 95 % prediction interval of one more draw (Student's t from the
draws' mean and spread: a single draw, as the authors' run is, falls in it 95 % of the time). For a method whose
code both of the authors' runs share (the notes' ``[earlier]`` list), a gap is also noise where, over the feature
counts all three runs have, ours lies no farther from their published values than their earlier run does.
The rank agreement of a dataset is Spearman's rho between the two columns over the methods both have.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

__all__ = [
    "Inputs",
    "read_inputs",
    "table_entries",
    "beside_published",
    "rank_agreement",
    "reproduction_page",
    "main",
]

FOLDER = Path("docs/reproduction")
FAITHFUL, CORRECTED, DRAWS = "passemiers2023", "passemiers2023_corrected", "passemiers2023_draws"
#: The folds of every configuration of the two suites (and of the paper).
FOLDS = 6
DATASETS = ("ring", "xor", "ring_xor", "ring_xor_sum", "dag")
METRICS = {"best_k": "best p", "best_2k": "best 2p"}
#: A gap above this many points must carry a cause on the page.
GAP_POINTS = 5.0
#: Draws of the data (seeds) an entry needs before its gap can be called noise across draws.
MIN_DRAWS = 3
#: An entry's gap is noise within this many standard deviations of the difference of two runs.
NOISE_SDS = 2.0
_UNEXPLAINED = "**unexplained**"
#: How a note on a gap that was looked into without finding its cause opens.
_NOT_FOUND = "not noise, cause not found"


@dataclass(frozen=True)
class Inputs:
    """The page's inputs: the suites' tidy rows, the published table and its per-m files, and the notes."""

    faithful: pd.DataFrame
    corrected: pd.DataFrame
    draws: pd.DataFrame  # the draws suite's rows; empty where its export is absent
    published: pd.DataFrame
    per_m: pd.DataFrame
    earlier: pd.DataFrame
    notes: dict[str, Any]


def _read_rows(path: Path, suite: str) -> pd.DataFrame:
    rows = pd.read_csv(path)
    missing = {"suite", "method", "dataset", "n_features", "fold", "metric", "value", "status"} - set(rows.columns)
    if missing:
        raise ValueError(f"{path} is not an export of synthbench.run (no column {', '.join(sorted(missing))})")
    rows = rows[rows["suite"] == suite]
    if rows.empty:
        raise ValueError(f"{path} holds no row of the suite {suite!r}")
    return rows


def read_inputs(folder: Path = FOLDER) -> Inputs:
    """The page's inputs from ``folder`` (see the module's docstring for the files)."""
    return Inputs(
        faithful=_read_rows(folder / f"{FAITHFUL}.csv.gz", FAITHFUL),
        corrected=_read_rows(folder / f"{CORRECTED}.csv.gz", CORRECTED),
        draws=_read_rows(draws, DRAWS) if (draws := folder / f"{DRAWS}.csv.gz").exists() else pd.DataFrame(),
        published=pd.read_csv(folder / "published_2023.csv"),
        per_m=pd.read_csv(folder / "published_2023_per_m.csv"),
        earlier=pd.read_csv(folder / "published_2023_earlier_per_m.csv"),
        notes=tomllib.loads((folder / "notes.toml").read_text(encoding="utf-8")),
    )


def table_entries(rows: pd.DataFrame) -> pd.DataFrame:
    """The paper's table entries of one suite's tidy rows.

    Returns one row per (method, dataset, metric) with ``value`` (percent: the mean over m of the mean over the
    folds), ``noise`` (points: the standard error of ``value`` from the folds' spread), ``configs`` (feature counts
    m averaged), ``folds`` (the fewest folds of one of them), ``cells`` (cells with status ok), ``others`` (cells
    skipped or failed, left out of the mean) and ``competence`` (mean competence of the explained model; NaN for
    methods that explain none).
    """
    rows = rows[rows["metric"].isin(list(METRICS))]
    done = rows[rows["status"] == "ok"]
    keys = ["method", "dataset", "metric"]
    per_m = done.groupby([*keys, "n_features"])["value"].agg(["mean", "var", "count"]).reset_index()
    per_m["se2"] = per_m["var"] / per_m["count"]  # NaN where one fold: no spread to read, no noise shown
    entries = per_m.groupby(keys).agg(
        value=("mean", "mean"),
        se2=("se2", lambda s: s.sum(skipna=False)),
        configs=("n_features", "size"),
        folds=("count", "min"),
        cells=("count", "sum"),
    )
    entries["noise"] = 100 * np.sqrt(entries.pop("se2")) / entries["configs"]
    entries["value"] *= 100
    entries["others"] = rows[rows["status"] != "ok"].groupby(keys).size().reindex(entries.index, fill_value=0)
    entries["competence"] = done.groupby(keys)["competence"].mean()
    return entries.reset_index()


_PER_M = ["method", "dataset", "metric", "n_features"]


def _ours_per_m(rows: pd.DataFrame) -> pd.Series:
    """Our value per (method, dataset, metric, m), the mean over the folds, where every fold of m is stored."""
    ok = rows[(rows["status"] == "ok") & rows["metric"].isin(list(METRICS))]
    folds = ok.groupby(_PER_M)["value"].agg(["mean", "count"])
    return folds.loc[folds["count"] >= FOLDS, "mean"].rename("ours")


def _long(per_m: pd.DataFrame, name: str) -> pd.Series:
    """A per-m file's values as a series named ``name`` on (method, dataset, metric, m)."""
    long = per_m.melt(
        id_vars=["method", "dataset", "n_features"], value_vars=list(METRICS), var_name="metric", value_name=name
    )
    return long.set_index(_PER_M)[name]


def _per_m_gaps(rows: pd.DataFrame, per_m: pd.DataFrame) -> pd.DataFrame:
    """Per (method, dataset, metric): the feature count m where ours and the published value differ most, both
    values at that m (fractions: ``ours_m``, ``theirs_m``)."""
    both = pd.concat([_ours_per_m(rows).rename("ours_m"), _long(per_m, "theirs_m")], axis=1, join="inner")
    both = both.dropna().reset_index()
    both["abs"] = (both["ours_m"] - both["theirs_m"]).abs()
    top = both.sort_values(["abs", "n_features"], ascending=[False, True], kind="stable")
    return top.drop_duplicates(["method", "dataset", "metric"]).drop(columns="abs")


def _whole(entries: pd.DataFrame, configs: pd.Series) -> pd.Series:
    """Which :func:`table_entries` hold every fold of each of the ``configs[dataset]`` feature counts."""
    return (entries["configs"] == entries["dataset"].map(configs)) & (entries["folds"] >= FOLDS)


def _draw_ranges(faithful: pd.DataFrame, draws: pd.DataFrame, configs: pd.Series) -> pd.DataFrame:
    """Per (method, dataset, metric): ``draws`` (how many seeds hold the whole entry: every fold of each of the
    ``configs[dataset]`` feature counts), ``draw_lo`` and ``draw_hi`` (the least and greatest of those seeds'
    entries, percent), ``draw_mean`` and ``draw_sd`` (their mean and standard deviation); the faithful run's rows are
    seed 0's."""
    frames = []
    for seed, rows in pd.concat([faithful, draws], ignore_index=True).groupby("seed"):
        entries = table_entries(rows)
        frames.append(entries.loc[_whole(entries, configs), ["method", "dataset", "metric", "value"]].assign(seed=seed))
    return (
        pd.concat(frames)
        .groupby(["method", "dataset", "metric"])["value"]
        .agg(draws="count", draw_lo="min", draw_hi="max", draw_mean="mean", draw_sd="std")
    )


def _earlier_gaps(rows: pd.DataFrame, per_m: pd.DataFrame, earlier: pd.DataFrame) -> pd.DataFrame:
    """Per (method, dataset, metric): over the feature counts m the authors' earlier run, their published one and
    ours all have (every fold of ours), ``earlier_gap`` (earlier - published) and ``ours_early_gap`` (ours -
    published), in points, and ``early_m`` (the largest such m)."""
    both = pd.concat(
        [_ours_per_m(rows), _long(per_m, "theirs"), _long(earlier, "earlier")], axis=1, join="inner"
    ).dropna()
    both = both.reset_index()
    both["earlier_gap"] = 100 * (both["earlier"] - both["theirs"])
    both["ours_early_gap"] = 100 * (both["ours"] - both["theirs"])
    return both.groupby(_PER_M[:3]).agg(
        earlier_gap=("earlier_gap", "mean"), ours_early_gap=("ours_early_gap", "mean"), early_m=("n_features", "max")
    )


def _prediction_interval(mean: float, sd: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Where one more draw of an entry falls with probability ``level``, from ``n`` draws of it with this ``mean`` and
    sample standard deviation ``sd`` (Student's t with n - 1 degrees of freedom: mean ± t · sd · sqrt(1 + 1/n))."""
    half = float(stats.t.ppf((1 + level) / 2, n - 1)) * sd * math.sqrt(1 + 1 / n)
    return mean - half, mean + half


def _cause(row: pd.Series, notes: dict[str, Any]) -> str:
    """The cause the notes give for a gap of ``row`` (method, dataset, metric); else the noise where the published
    value lies within the prediction interval of one more of our draws, or the gap within the band, or (for a method
    whose code the notes' ``[earlier]`` list says both of the authors' runs share) our gap over the early feature
    counts no larger than their earlier run's; else the unexplained mark, "so far" while the draws suite runs the
    method at fewer than ``MIN_DRAWS`` seeds."""
    dataset_note = notes.get("datasets", {}).get(row["dataset"], {}).get("cause")
    if dataset_note:
        return str(dataset_note)
    for note in notes.get("gaps", []):
        if (
            row["method"] in note.get("methods", [row["method"]])
            and row["dataset"] in note.get("datasets", [row["dataset"]])
            and row["metric"] in note.get("metrics", [row["metric"]])
        ):
            return str(note["cause"])
    if row["draws"] >= MIN_DRAWS:
        lo, hi = _prediction_interval(row["draw_mean"], row["draw_sd"], int(row["draws"]))
        if lo <= row["theirs"] <= hi:
            return (
                f"noise across data draws: the published value lies within the 95 % prediction interval of one more "
                f"draw from our {int(row['draws'])} ({lo:.1f} to {hi:.1f}; the draws {row['draw_lo']:.1f} to "
                f"{row['draw_hi']:.1f})"
            )
    if abs(row["gap"]) <= row["band"]:
        return f"noise: within ±{row['band']:.1f} points, twice the spread two runs of one seed's 6 folds would show"
    if row["method"] in notes.get("earlier", {}).get("methods", []) and (
        abs(row["ours_early_gap"]) <= abs(row["earlier_gap"])
    ):
        return (
            f"noise between the authors' own runs: their earlier run (the same code, the data drawn again) lies "
            f"{row['earlier_gap']:+.1f} points from their published values over m ≤ {int(row['early_m'])}, ours "
            f"{row['ours_early_gap']:+.1f}"
        )
    if row["in_draws"] and row["draws"] < MIN_DRAWS:
        return f"{_UNEXPLAINED} so far ({int(row['draws'])} of the {MIN_DRAWS} draws run)"
    return _UNEXPLAINED


def beside_published(inputs: Inputs) -> pd.DataFrame:
    """The faithful suite's table entries beside the published ones.

    One row per (method, dataset, metric) of the published table: ``paper_name``, ``ours`` and ``theirs`` (percent;
    ``theirs`` NaN where the paper has no entry), ``gap`` (ours - theirs, points), ``band`` (points: ``NOISE_SDS``
    times the standard deviation of the difference of two runs, ``sqrt(2)`` times our entry's noise), ``ours_m``,
    ``theirs_m`` and ``m`` (the feature count where the two differ most), ``earlier_gap``, ``ours_early_gap`` and
    ``early_m`` (:func:`_earlier_gaps`: the authors' earlier run and ours beside the published values over the
    feature counts all three have), ``draws``, ``draw_lo`` and ``draw_hi`` (:func:`_draw_ranges`: the entry at
    every seed that holds it whole), ``in_draws`` (the draws' export holds the method), ``competence``,
    ``complete`` (every fold of every feature count the paper averaged is stored; ``ours`` is NaN otherwise: a
    partial run compares only what it finished) and ``cause`` (for gaps above ``GAP_POINTS``; empty otherwise).
    """
    published = inputs.published.melt(
        id_vars=["paper_name", "method", "corrected_method", "dataset"],
        value_vars=list(METRICS),
        var_name="metric",
        value_name="theirs",
    )
    ours = table_entries(inputs.faithful).rename(columns={"value": "ours"})
    both = published.merge(ours, on=["method", "dataset", "metric"], how="left", validate="one_to_one")
    # an entry is compared only once every fold of every feature count the paper averaged is in
    expected = inputs.per_m.groupby("dataset")["n_features"].nunique()
    both["complete"] = _whole(both, expected)
    both = both.merge(
        _draw_ranges(inputs.faithful, inputs.draws, expected), on=["method", "dataset", "metric"], how="left"
    )
    both["draws"] = both["draws"].fillna(0)
    both["in_draws"] = both["method"].isin(inputs.draws["method"]) if not inputs.draws.empty else False
    both.loc[~both["complete"], "ours"] = np.nan
    both["gap"] = both["ours"] - both["theirs"]
    both["band"] = NOISE_SDS * math.sqrt(2) * both["noise"]
    both = both.merge(
        _per_m_gaps(inputs.faithful, inputs.per_m).rename(columns={"n_features": "m"}),
        on=["method", "dataset", "metric"],
        how="left",
    )
    both = both.merge(
        _earlier_gaps(inputs.faithful, inputs.per_m, inputs.earlier), on=["method", "dataset", "metric"], how="left"
    )
    large = both["gap"].abs() > GAP_POINTS
    both["cause"] = ""
    both.loc[large, "cause"] = [_cause(r, inputs.notes) for _, r in both[large].iterrows()]
    return both


def rank_agreement(both: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, metric): Spearman's rho between ours and theirs over the methods with both, and how many."""
    out = []
    for (dataset, metric), group in both.dropna(subset=["ours", "theirs"]).groupby(["dataset", "metric"], sort=False):
        rho = stats.spearmanr(group["ours"], group["theirs"]).statistic if len(group) > 2 else float("nan")
        out.append({"dataset": dataset, "metric": metric, "rho": float(rho), "methods": len(group)})
    return pd.DataFrame(out, columns=["dataset", "metric", "rho", "methods"])


def _points(value: float, signed: bool = False, digits: int = 1) -> str:
    """``value`` with ``digits`` decimals (and its sign where ``signed``), or a dash where it is missing."""
    if pd.isna(value):
        return "–"
    return f"{value:{'+' if signed else ''}.{digits}f}"


def _table(header: list[str], rows: list[list[str]], align: str) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(":--" if a == "l" else "--:" for a in align) + "|",
        *("| " + " | ".join(r) + " |" for r in rows),
        "",
    ]


def _competence(entries: pd.DataFrame, dataset: str) -> float:
    """The mean competence of the entries of ``dataset`` that carry one (NaN where none does)."""
    return float(entries.loc[entries["dataset"] == dataset, "competence"].mean())


def _competence_line(entries: pd.DataFrame, dataset: str, label: str) -> str:
    competence = _competence(entries, dataset)
    return "" if math.isnan(competence) else f"{label} mean competence {_points(competence, digits=2)}"


def _opening(both: pd.DataFrame, ranks: pd.DataFrame, cells: int) -> list[str]:
    synthetic = both[(both["dataset"] != "dag") & both["gap"].notna()]
    gaps = synthetic["gap"].abs()
    if gaps.empty:
        return [f"No entry of the published table is complete yet in the faithful run ({cells} cells).", ""]
    worst = synthetic.loc[gaps.idxmax()]
    within = int((gaps <= GAP_POINTS).sum())
    large = synthetic[gaps > GAP_POINTS]["cause"]
    noise, not_found = large.str.startswith("noise"), large.str.startswith(_NOT_FOUND)
    unexplained = large.str.startswith(_UNEXPLAINED)
    kinds = [
        (
            noise,
            "lie within the noise (of one run's folds, across draws of the data, or between the authors' own runs)",
        ),
        (~(noise | not_found | unexplained), "carry the cause found below"),
        (not_found, "were looked into without finding the cause (the notes below say what was ruled out)"),
        (unexplained, "are unexplained"),
    ]
    said = "; ".join(f"{int(mask.sum())} {text}" for mask, text in kinds if mask.any())
    others = f"; of the {len(large)} others, {said}" if said else ""
    syn_ranks = ranks[ranks["dataset"] != "dag"]["rho"]
    waiting = int((~both["complete"] & both["theirs"].notna()).sum())
    partial = [f"{waiting} entries are left out until the run has every fold of every feature count.", ""]
    return [
        f"Over the {len(synthetic)} entries the four synthetic sets give the published table (its methods × best p "
        f"and best 2p), synthbench's faithful run of the authors' protocol ({cells} cells) lies a mean "
        f"{gaps.mean():.1f} points from the published value (median {gaps.median():.1f}, largest "
        f"{gaps.max():.1f}: {worst['paper_name']} on {worst['dataset']}, {METRICS[worst['metric']]}). {within} entries "
        f"are within {GAP_POINTS:.0f} points{others}. "
        "The methods' order agrees: Spearman's rho "
        f"between our column and theirs is {syn_ranks.min():.2f} to {syn_ranks.max():.2f} over the four sets.",
        "",
        *(partial if waiting else []),
    ]


def _provenance(inputs: Inputs) -> list[str]:
    rows = []
    suites = ((FAITHFUL, inputs.faithful), (CORRECTED, inputs.corrected), (DRAWS, inputs.draws))
    for name, frame in ((n, f) for n, f in suites if not f.empty):
        cells = frame.drop_duplicates("cell_id")
        status = cells["status"].value_counts()
        hashes = ", ".join(f"`{h}`" for h in sorted(cells["suite_hash"].dropna().unique()))
        rows.append(
            [
                f"`{name}`",
                hashes,
                str(len(cells)),
                str(int(status.get("ok", 0))),
                str(int(status.get("skipped", 0) + status.get("failed", 0))),
                f"{cells['seconds'].sum() / 3600:.1f}",
            ]
        )
    return _table(["suite", "hash", "cells", "ok", "skipped or failed", "cell hours"], rows, "llrrrr")


def _dataset_section(
    dataset: str, both: pd.DataFrame, ranks: pd.DataFrame, entries: pd.DataFrame, notes: dict[str, Any]
) -> list[str]:
    sel = both[both["dataset"] == dataset]
    wide = sel.pivot_table(
        index=["paper_name"],
        columns="metric",
        values=["ours", "theirs", "gap", "band", "draws", "draw_lo", "draw_hi"],
        dropna=False,
        sort=False,
    )
    rows = []
    for name in sel["paper_name"].drop_duplicates():
        cells = []
        for metric in METRICS:
            cells += [_points(wide.loc[name, (c, metric)], signed=c == "gap") for c in ("ours", "theirs", "gap")]
        cells.append(_points(wide.loc[name, ("band", "best_k")]))
        lo, hi = wide.loc[name, ("draw_lo", "best_k")], wide.loc[name, ("draw_hi", "best_k")]
        cells.append(f"{_points(lo)} to {_points(hi)}" if wide.loc[name, ("draws", "best_k")] > 1 else "–")
        rows.append([name, *cells])
    rank = ranks[ranks["dataset"] == dataset].set_index("metric")
    rho = (
        "; ".join(
            f"{METRICS[m]} {rank.loc[m, 'rho']:+.2f} over {rank.loc[m, 'methods']} methods"
            for m in METRICS
            if m in rank.index
        )
        or "none yet (fewer than three complete entries)"
    )
    competence = _competence_line(entries, dataset, "the explained network's")
    caveat = notes.get("datasets", {}).get(dataset, {}).get("cause")
    lines = [
        f"### {dataset}",
        "",
        *([f"Not compared: {caveat}.", ""] if caveat else []),
        f"Rank agreement (Spearman's rho): {rho}." + (f" {competence.capitalize()}." if competence else ""),
        "",
    ]
    header = [
        "method", "best p: ours", "theirs", "gap", "best 2p: ours", "theirs", "gap", "noise band (best p)",
        "our draws (best p)",
    ]  # fmt: skip
    return lines + _table(header, rows, "lrrrrrrrr")


def _gaps_section(both: pd.DataFrame) -> list[str]:
    large = both[both["cause"] != ""].sort_values(["dataset", "paper_name", "metric"], kind="stable")
    if large.empty:
        return [f"No entry lies more than {GAP_POINTS:.0f} points from the published value.", ""]
    rows = [
        [
            r["paper_name"],
            r["dataset"],
            METRICS[r["metric"]],
            _points(r["ours"]),
            _points(r["theirs"]),
            _points(r["gap"], signed=True),
            _points(r["band"]),
            f"m = {int(r['m'])}: {r['ours_m']:.2f} vs {r['theirs_m']:.2f}" if pd.notna(r["m"]) else "–",
            _earlier_text(r),
            r["cause"],
        ]
        for _, r in large.iterrows()
    ]
    header = [
        "method", "dataset", "metric", "ours", "theirs", "gap", "noise band", "largest at",
        "their earlier run (ours) to m", "cause",
    ]  # fmt: skip
    intro = (
        "The authors committed an earlier run of their code beside the published one (`old-results/`: the same "
        "sets drawn again, m up to 512). \"Their earlier run\" is its mean gap to their published values over the "
        "feature counts it, theirs and ours all have, ours over the same m in brackets: where their own two runs "
        "lie as far apart as we lie from them, the published value is no more exact than that. For a method that "
        "reads the data alone (mRMR, Relief, the forest) it measures the draw of the data; the network's "
        "attribution methods score higher in the earlier run on every set, so the training changed between the "
        "runs as well."
    )
    return [intro, "", *_table(header, rows, "lllrrrrlll")]


def _earlier_text(row: pd.Series) -> str:
    """The authors' earlier run's gap to their published values (ours beside it) and the m both reach."""
    if pd.isna(row["earlier_gap"]):
        return "–"
    ours = _points(row["ours_early_gap"], signed=True)
    return f"{_points(row['earlier_gap'], signed=True)} ({ours}) to {int(row['early_m'])}"


def _corrections_section(inputs: Inputs, entries: pd.DataFrame) -> list[str]:
    corrected_entries = table_entries(inputs.corrected)
    faithful = entries.set_index(["method", "dataset", "metric"])["value"]
    corrected = corrected_entries.set_index(["method", "dataset", "metric"])["value"]
    names = inputs.published.drop_duplicates("method").set_index("method")
    rows = []
    for method, row in names.iterrows():
        cells = [row["paper_name"]]
        for dataset in DATASETS:
            before = faithful.get((method, dataset, "best_k"), float("nan"))
            after = corrected.get((row["corrected_method"], dataset, "best_k"), float("nan"))
            cells.append(f"{_points(before)} → {_points(after)}")
        rows.append(cells)
    rows.append(
        ["*the explained network's competence*"]
        + [
            f"{_points(_competence(entries, d), digits=2)} → {_points(_competence(corrected_entries, d), digits=2)}"
            for d in DATASETS
        ]
    )
    notes = inputs.notes.get("corrections", {})
    why = [
        f"- **{names.loc[m, 'paper_name']}** (`{m}` → `{names.loc[m, 'corrected_method']}`): {notes[m]}"
        for m in names.index
        if m in notes
    ]
    return [
        "Best p (percent), the faithful suite → the corrected one (`passemiers2023_corrected`: synthbench's methods "
        "and the paper's network with a clean validation split and a true restore of its best epoch); the last row is "
        "the mean competence of the network the attribution methods explain (0: chance, 1: the learnability "
        "ceiling) in each suite:",
        "",
        *_table(["method", *DATASETS], rows, "l" + "r" * len(DATASETS)),
        "What each correction changes:",
        "",
        *why,
        "",
    ]


def reproduction_page(inputs: Inputs) -> str:
    """The page's Markdown."""
    both = beside_published(inputs)
    ranks = rank_agreement(both)
    cells = inputs.faithful["cell_id"].nunique()
    lines = [
        "# The 2023 benchmark, reproduced",
        "",
        "Passemiers, Folco, Raimondi and Moreau (2023) compared 20 feature-attribution and feature-selection methods "
        "on four nonlinear synthetic sets at total feature counts m = k to 2048 and on a causal DAG "
        "([arXiv 2304.02383](https://arxiv.org/abs/2304.02383)). synthbench's suite `passemiers2023` runs that "
        "protocol as the authors' code ran it, bugs included; `passemiers2023_corrected` runs the same grid with the "
        "bugs fixed. This page sets the first beside the authors' published table and the second beside the first.",
        "",
        *_opening(both, ranks, cells),
        *_provenance(inputs),
        "The page is written by `python -m synthbench.report.reproduction` from the files beside it: each suite's "
        "export (`python -m synthbench.run --suite NAME --export FILE`), the published table and the result files it "
        "averages (commit 06afd2e of AntoinePassemiers/Feature-Selection-Benchmark), and the notes on causes. "
        "A table entry is the paper's: the mean over m of the mean over the 6 folds, in percent. The noise band is "
        f"{NOISE_SDS:.0f} standard deviations of the difference between two runs of one seed's 6 folds (from the "
        "folds' spread); the authors' numbers are one such run. The folds of a run share one draw of the data, so "
        f"that band understates how far two runs lie apart: \"our draws\" is the range of the entry over the seeds "
        f"`{DRAWS}` runs beside seed 0 (every method but LassoNet and FSNet); with {MIN_DRAWS} draws or more, a gap "
        "whose published value lies within the 95 % prediction interval of one more draw (Student's t from the "
        "draws' mean and spread, as wide as so few draws allow) is noise across draws. Mutual information is in both "
        "suites but not in the published table.",
        "",
        "## Ours beside the published table",
        "",
    ]
    entries = table_entries(inputs.faithful)
    for dataset in DATASETS:
        lines += _dataset_section(dataset, both, ranks, entries, inputs.notes)
    lines += [f"## Entries more than {GAP_POINTS:.0f} points from the published value", "", *_gaps_section(both)]
    lines += ["## What the corrections change", "", *_corrections_section(inputs, entries)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from synthbench.cli import OneLineParser, print_error, setup_logging

    setup_logging()
    p = OneLineParser(prog="python -m synthbench.report.reproduction", description=__doc__.splitlines()[0])
    p.add_argument("--folder", type=Path, default=FOLDER, help=f"where the inputs lie (default: {FOLDER})")
    p.add_argument("--out", type=Path, help="the page to write (default: index.md in the folder)")
    args = p.parse_args(argv)
    out = args.out or args.folder / "index.md"
    try:
        text = reproduction_page(read_inputs(args.folder))
        out.write_text(text + "\n", encoding="utf-8")
    except (OSError, ValueError, tomllib.TOMLDecodeError) as exc:
        return print_error("synthbench.report.reproduction", exc)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":  # pragma: no cover - the command line
    raise SystemExit(main())
