"""Report figures (matplotlib, no display needed): decoy curves, breakpoints, cost against quality, CD diagram.

Every figure takes the same :func:`method_styles` mapping, so a method keeps one colour and
marker in every figure. Figures are built without pyplot (no global backend state): save them
with ``fig.savefig``, or let a notebook display them. Methods are grouped by family
(:func:`entry_family`: classical methods, neural selectors, and the attribution methods of each
MLP preset); colours come from Paul Tol's colour-blind-safe "muted" scheme, in order within a
family, and each family has markers of its own, so no two methods share both colour and marker.
The decoy curves draw one row of panels per family, the other families in grey behind.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from synthbench.catalogue import MetricInfo
from synthbench.report.statistics import RankTest
from synthbench.report.study.reliability import RELIABILITY_MEASURES
from synthbench.report.tables import BREAKPOINT_LEVEL, data_word, pareto_front, setting_label

__all__ = [
    "Style",
    "entry_family",
    "method_styles",
    "decoy_curves",
    "sample_curves",
    "model_sample_curves",
    "breakpoint_figure",
    "cost_quality",
    "cd_diagram",
    "scorer_curves",
    "truth_scatter",
    "overview_heatmap",
    "validity_heatmap",
    "reliability_validity",
    "TOL_MUTED",
]

#: Paul Tol's "muted" qualitative scheme (colour-blind safe), without its pale grey.
TOL_MUTED = ("#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677", "#882255", "#AA4499")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
_LINES = ("-", "--", ":", "-.")


def _axis_label(metric: MetricInfo, prefix: str = "") -> str:
    return f"{prefix}{metric.name}" + (f" ({metric.unit})" if metric.unit else "")


@dataclass(frozen=True)
class Style:
    """How one method is drawn; ``family`` is its row's :func:`entry_family`."""

    color: str
    marker: str
    linestyle: str
    family: str = ""


def entry_family(entry: str, families: Mapping[str, str]) -> str:
    """The family of a report row: its method's :attr:`~synthbench.methods.MethodSpec.family` as ``families``
    (method -> family, as a store records them: :attr:`Results.families`) gives it, ``"other"`` where it gives
    none, with the MLP preset for attribution rows (``"attribution · sparse_mlp"``)."""
    method, _, preset = entry.partition("@")
    family = families.get(method, "other")
    return f"{family} · {preset}" if preset else family


_FAMILY_ORDER = ("classical", "neural selector", "attribution", "other")


def _family_key(family: str) -> tuple[int, str]:
    base = family.split(" · ")[0]
    return (_FAMILY_ORDER.index(base) if base in _FAMILY_ORDER else len(_FAMILY_ORDER), family)


def method_styles(methods: list[str], families: Mapping[str, str]) -> dict[str, Style]:
    """A fixed style per row, grouped by family (:func:`entry_family`, ``families`` as a store records
    them), then by name within a family.

    Within a family the ``i``-th method takes colour ``i mod 9`` and the family's ``i // 9``-th
    marker; each family has its own markers (and line style), so (colour, marker) pairs are unique.
    """
    grouped: dict[str, list[str]] = {}
    for m in sorted(methods):
        grouped.setdefault(entry_family(m, families), []).append(m)
    n, styles = len(TOL_MUTED), {}
    used = 0  # markers taken by earlier families
    for f, family in enumerate(sorted(grouped, key=_family_key)):
        members = grouped[family]
        for i, m in enumerate(members):
            styles[m] = Style(
                TOL_MUTED[i % n], _MARKERS[(used + i // n) % len(_MARKERS)], _LINES[f % len(_LINES)], family
            )
        used += -(-len(members) // n)
    return styles


def _families(styles: dict[str, Style]) -> dict[str, list[str]]:
    """Rows by family, in style order."""
    out: dict[str, list[str]] = {}
    for m, style in styles.items():
        out.setdefault(style.family, []).append(m)
    return out


def _legend_right(fig: Figure, handles: list, labels: list) -> None:
    fig.legend(
        handles,
        labels,
        loc="center left",
        bbox_to_anchor=(1.0, 0.5),
        frameon=False,
        fontsize=8,
        ncol=1 if len(labels) <= 28 else 2,
    )


def _curve_grid(
    curves: pd.DataFrame,
    styles: dict[str, Style],
    *,
    x: str,
    panels: list[str],
    panel: str,
    metric: MetricInfo,
    xlabel: str,
    title: str,
) -> Figure:
    """``metric`` against ``x``: one row of panels per family, one column per value of ``panel``.

    In each panel the family's methods are drawn in their styles with 95 % CI bands, every other
    method as a thin grey line behind them, and chance dashed. Each row has its own legend.
    """
    families = _families({m: s for m, s in styles.items() if m in set(curves["method"])})
    ncols = min(4, len(panels))
    blocks = int(np.ceil(len(panels) / ncols))
    nrows = blocks * len(families)
    fig = Figure(figsize=(3.6 * ncols + 3.4, 2.9 * nrows + 0.6))
    axes = fig.subplots(nrows, ncols, squeeze=False, sharey=True)
    lo, hi = metric.limits
    for f, (family, members) in enumerate(families.items()):
        handles: dict[str, object] = {}
        band_alpha = min(0.15, 0.9 / max(1, len(members)))
        for j, value in enumerate(panels):
            ax = axes[f * blocks + j // ncols, j % ncols]
            part = curves[curves[panel] == value]
            for method, g in part.groupby("method", sort=False):
                if method not in members:
                    ax.plot(g[x], g["mean"], color="#BBBBBB", linewidth=0.7, zorder=1)
            for method in members:
                g = part[part["method"] == method]
                if g.empty:
                    continue
                s = styles[method]
                (line,) = ax.plot(
                    g[x],
                    g["mean"],
                    color=s.color,
                    marker=s.marker,
                    linestyle=s.linestyle,
                    markersize=4,
                    linewidth=1.3,
                    zorder=3,
                )
                ax.fill_between(g[x], g["lo"], g["hi"], color=s.color, alpha=band_alpha, linewidth=0, zorder=2)
                handles.setdefault(method, line)
            chance = part.groupby(x)["chance"].mean()
            (ch,) = ax.plot(chance.index, chance.to_numpy(), color="black", linestyle="--", linewidth=1, zorder=4)
            handles["chance"] = ch
            ax.set_xscale("symlog", linthresh=1) if x == "n_decoys" else ax.set_xscale("log")
            ax.set_title(f"{value} — {family}", fontsize=9)
            ax.set_xlabel(xlabel, fontsize=8)
            if np.isfinite([lo, hi]).all():
                ax.set_ylim(lo - 0.02 * (hi - lo), hi + 0.02 * (hi - lo))
            ax.grid(True, alpha=0.3)
        for j in range(len(panels), blocks * ncols):
            axes[f * blocks + j // ncols, j % ncols].set_visible(False)
        row = axes[f * blocks, ncols - 1]
        row.legend(
            [handles[m] for m in handles],
            list(handles),
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            frameon=False,
            fontsize=7,
            ncol=1 if len(handles) <= 12 else 2,
        )
    for ax in axes[:, 0]:
        ax.set_ylabel(_axis_label(metric), fontsize=8)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def decoy_curves(
    curves: pd.DataFrame,
    styles: dict[str, Style],
    *,
    metric: MetricInfo,
    settings: list[str] | None = None,
    decoys: str = "decoy features",
) -> Figure:
    """``metric`` against decoy count: one row of panels per method family, one column per setting.

    ``curves`` is :func:`synthbench.report.tables.decoy_table`'s output, ``metric`` what its values are
    (:meth:`Results.metric <synthbench.report.Results.metric>`). The decoy axis is
    logarithmic (symmetric-log below 1, so 0 decoys has a place); bands are 95 % CIs, chance is dashed.
    ``decoys`` names what is counted (``"distractor patches"`` for images).
    """
    settings = settings or list(dict.fromkeys(curves["setting"]))
    return _curve_grid(
        curves,
        styles,
        x="n_decoys",
        panels=settings,
        panel="setting",
        metric=metric,
        xlabel=f"{decoys} (log scale)",
        title=f"{metric.name} against the number of {decoys}, by method family "
        "(bands: 95 % CI over folds and seeds; grey: the other families)",
    )


def sample_curves(curves: pd.DataFrame, styles: dict[str, Style], *, metric: MetricInfo) -> Figure:
    """``metric`` against the number of samples (log): one row per family, one column per dataset and decoy count.

    ``curves`` is :func:`synthbench.report.tables.sample_table`'s output (a ``panel`` column names
    the dataset and decoy count).
    """
    panels = list(dict.fromkeys(curves["panel"]))
    return _curve_grid(
        curves,
        styles,
        x="n_samples",
        panels=panels,
        panel="panel",
        metric=metric,
        xlabel="samples (log scale)",
        title=f"{metric.name} against the number of samples, by method family "
        "(bands: 95 % CI over folds and seeds; grey: the other families)",
    )


def model_sample_curves(models: pd.DataFrame) -> Figure:
    """Held-out AUROC of each shared model against the number of samples (log), one panel per dataset and decoy count.

    ``models`` is :func:`synthbench.report.tables.model_table`'s output; only datasets stored at
    several sample sizes are drawn. Bars: 95 % CI over folds and seeds; dashed: a coin flip (0.5).
    """
    several = models.groupby("dataset")["n_samples"].transform("nunique") > 1
    data = models[several]
    panels = list(dict.fromkeys(zip(data["dataset"], data["n_decoys"])))
    ncols = min(4, max(1, len(panels)))
    nrows = int(np.ceil(len(panels) / ncols)) or 1
    fig = Figure(figsize=(3.6 * ncols + 2.6, 2.9 * nrows + 0.6))
    axes = fig.subplots(nrows, ncols, squeeze=False, sharey=True)
    kinds = list(dict.fromkeys(data["model"]))
    handles = {}
    for ax, (dataset, decoys) in zip(axes.flat, panels):
        part = data[(data["dataset"] == dataset) & (data["n_decoys"] == decoys)].sort_values("n_samples")
        for i, kind in enumerate(kinds):
            g = part[part["model"] == kind]
            if g.empty:
                continue
            err = np.vstack([g["auroc"] - g["auroc_lo"], g["auroc_hi"] - g["auroc"]])
            handles[kind] = ax.errorbar(
                g["n_samples"],
                g["auroc"],
                yerr=np.nan_to_num(err),
                color=TOL_MUTED[i % len(TOL_MUTED)],
                marker=_MARKERS[i // len(TOL_MUTED) % len(_MARKERS)],
                capsize=2,
                linewidth=1.2,
            )
        ax.axhline(0.5, color="black", linestyle="--", linewidth=1)
        ax.set_xscale("log")
        ax.set_ylim(0.4, 1.02)
        ax.set_title(f"{dataset}, {decoys} decoys", fontsize=9)
        ax.set_xlabel("samples (log scale)", fontsize=8)
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("held-out AUROC", fontsize=8)
    _legend_right(fig, list(handles.values()), list(handles))
    fig.suptitle("Held-out AUROC of the shared models against the number of samples (bars: 95 % CI)", fontsize=11)
    fig.tight_layout()
    return fig


def breakpoint_figure(
    points: pd.DataFrame, *, level: float = BREAKPOINT_LEVEL, methods: list[str] | None = None
) -> Figure:
    """Heat map of breakpoints (largest decoy count with best_k ≥ ``level``), methods × settings, labelled.

    Colour is the breakpoint on a symmetric-log scale (``cividis``, colour-blind safe); grey: below
    ``level`` already at the smallest decoy count; a ``≥`` label: it never fell below.
    """
    from matplotlib.colors import SymLogNorm

    table = points.pivot(index="method", columns="setting", values="breakpoint")
    held = points.pivot(index="method", columns="setting", values="held_throughout")
    smallest = points.pivot(index="method", columns="setting", values="smallest")
    order = methods or list(table.mean(axis=1).fillna(-1).sort_values(ascending=False).index)
    settings = list(dict.fromkeys(points["setting"]))
    table, held, smallest = (t.reindex(index=order, columns=settings) for t in (table, held, smallest))
    values = table.to_numpy(dtype=float)
    top = max(10.0, float(np.nanmax(values))) if np.isfinite(values).any() else 10.0
    norm = SymLogNorm(linthresh=1, vmin=0, vmax=top)
    cmap = matplotlib.colormaps["cividis"].with_extremes(bad="#DDDDDD")
    fig = Figure(figsize=(1.3 * len(settings) + 3.2, 0.32 * len(order) + 1.6))
    ax = fig.subplots()
    image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, norm=norm, aspect="auto")
    for i in range(len(order)):
        for j in range(len(settings)):
            v = table.iat[i, j]
            if pd.isna(smallest.iat[i, j]):
                text = "missing"
            elif np.isnan(v):
                text = f"<{int(smallest.iat[i, j])}"
            else:
                text = f"{'≥' if held.iat[i, j] else ''}{int(v)}"
            dark = np.isfinite(values[i, j]) and norm(values[i, j]) < 0.6
            ax.text(j, i, text, ha="center", va="center", fontsize=7, color="white" if dark else "black")
    ax.set_xticks(range(len(settings)), settings, rotation=30, ha="right")
    ax.set_yticks(range(len(order)), order, fontsize=8)
    bar = fig.colorbar(image, ax=ax, fraction=0.04)
    bar.set_label("breakpoint (decoy features, log scale)")
    ax.set_title(f"Breakpoint: largest decoy count with mean best_k ≥ {level}", fontsize=10)
    fig.tight_layout()
    return fig


def cost_quality(summary: pd.DataFrame, styles: dict[str, Style], *, metric: MetricInfo) -> Figure:
    """Mean ``metric`` (95 % CI bars) against mean seconds per cell (log), one point per method; Pareto front drawn
    and labelled.

    ``summary`` is :func:`synthbench.report.tables.summary_table`'s output.
    """
    name = metric.name
    data = summary.dropna(subset=[name, "seconds"])
    data = data[data["seconds"] > 0]
    fig = Figure(figsize=(9.5, 5.5))
    ax = fig.subplots()
    front = pareto_front(data, metric)
    handles, labels = [], []
    for method in [m for m in styles if m in data.index]:
        r, s = data.loc[method], styles[method]
        err = np.array([[r[name] - r[f"{name}_lo"]], [r[f"{name}_hi"] - r[name]]])
        bars = ax.errorbar(
            r["seconds"],
            r[name],
            yerr=None if np.isnan(err).any() else err,
            color=s.color,
            marker=s.marker,
            markersize=6,
            capsize=2,
            linestyle="none",
        )
        handles.append(bars)
        labels.append(method)
        if method in front.index:  # only the front is labelled in the plot; the legend names every point
            ax.annotate(method, (r["seconds"], r[name]), textcoords="offset points", xytext=(5, 3), fontsize=8)
    (line,) = ax.step(front["seconds"], front[name], where="post", color="black", linewidth=1, alpha=0.6)
    _legend_right(fig, [*handles, line], [*labels, "Pareto front (labelled)"])
    ax.set_xscale("log")
    ax.set_xlabel("mean wall time per cell (seconds, log scale)")
    ax.set_ylabel(_axis_label(metric, "mean "))
    ax.set_title(f"Cost against quality: mean {name} over every cell against seconds per cell", fontsize=10)
    ax.grid(True, alpha=0.3, which="both")
    fig.tight_layout()
    return fig


def cd_diagram(test: RankTest, styles: dict[str, Style]) -> Figure:
    """Critical-difference diagram of average ranks (scikit-posthocs): methods joined by a bar do not differ
    significantly."""
    import scikit_posthocs as sp

    fig = Figure(figsize=(10, 0.24 * len(test.ranks) + 1.8))
    ax = fig.subplots()
    if test.pairwise.empty:
        ax.text(0.5, 0.5, test.sentence(), ha="center", va="center", wrap=True, fontsize=9)
        ax.set_axis_off()
        return fig
    # scikit-posthocs walks sets of the labels it is given, so with method names the drawing order followed
    # Python's per-process string hashing and the PNG changed from run to run. It gets positions (ints hash
    # to themselves) and the names are written in afterwards.
    names = list(test.ranks.index)
    ranks = pd.Series(test.ranks.to_numpy(), index=range(len(names)))
    pairwise = pd.DataFrame(test.pairwise.loc[names, names].to_numpy(), index=ranks.index, columns=ranks.index)
    drawn = sp.critical_difference_diagram(
        ranks,
        pairwise,
        ax=ax,
        alpha=test.alpha,
        color_palette={i: styles[m].color for i, m in enumerate(names)},
        label_props={"fontsize": 8},
        label_fmt_left="{label}",
        label_fmt_right="{label}",
    )
    for label in drawn["labels"]:
        i = int(label.get_text())
        rank = f"({ranks[i]:.1f})"
        label.set_text(f"{names[i]} {rank}" if label.get_ha() == "right" else f"{rank} {names[i]}")
        label.set_color("#222222")  # the method's colour stays on its marker and line; pale text is hard to read
    ax.set_title(
        f"Average rank on mean {test.metric} over {test.blocks} blocks (dataset × decoy count; 1 = best)\n"
        f"bars join methods the Nemenyi test cannot separate (α = {test.alpha}); Friedman p = {test.p_value:.2g}",
        fontsize=9,
    )
    fig.tight_layout()
    return fig


def example_maps(
    images: np.ndarray | None, masks: np.ndarray | None, maps: dict[str, np.ndarray], *, title: str = ""
) -> Figure:
    """Example attribution maps: the images with their masks outlined, then one row per method.

    Parameters
    ----------
    images : float ``(m, C, H, W)`` (the first three channels are shown as colour, one as grey); None
        draws the maps alone (the images cannot be made again where the report runs)
    masks : bool ``(m, H, W)``, the signal pixels (outlined in every panel); may be None
    maps : method -> relevance maps ``(m, H, W)`` (non-negative), each panel scaled to its own maximum
    """
    m = min(len(v) for v in maps.values()) if images is None else images.shape[0]
    top = 0 if images is None else 1
    rows = top + len(maps)
    fig = Figure(figsize=(1.6 * m + 1.6, 1.6 * rows), constrained_layout=True)
    axes = fig.subplots(rows, m, squeeze=False)

    def outline(ax, j):
        if masks is not None:
            ax.contour(masks[j].astype(float), levels=[0.5], colors="cyan", linewidths=0.8)

    if images is not None:
        shown = np.clip(images[:, :3].transpose(0, 2, 3, 1), 0, 1) if images.shape[1] >= 3 else images[:, 0]
        for j in range(m):
            ax = axes[0, j]
            ax.imshow(shown[j], cmap=None if images.shape[1] >= 3 else "gray", vmin=0, vmax=1, interpolation="nearest")
            outline(ax, j)
        axes[0, 0].set_ylabel("image", rotation=0, ha="right", va="center", fontsize=8)
    for i, (method, values) in enumerate(maps.items(), start=top):
        for j in range(m):
            ax = axes[i, j]
            ax.imshow(
                values[j], cmap="inferno", vmin=0, vmax=max(float(values[j].max()), 1e-12), interpolation="nearest"
            )
            outline(ax, j)
        axes[i, 0].set_ylabel(method, rotation=0, ha="right", va="center", fontsize=8)
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    if title:
        fig.suptitle(title, fontsize=9)
    return fig


def _panel_grid(n: int, width: float, *, sharey: bool = False) -> tuple[Figure, np.ndarray]:
    """A figure of ``n`` panels, at most four per row, each ``width`` inches wide; the unused panels hidden.

    Returns the figure and its ``(rows, cols)`` axes (fill them in ``axes.flat`` order).
    """
    ncols = min(4, n)
    nrows = int(np.ceil(n / ncols))
    fig = Figure(figsize=(width * ncols + 3.0, 3.0 * nrows + 0.4))
    axes = fig.subplots(nrows, ncols, squeeze=False, sharey=sharey)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, axes


def scorer_curves(
    curves: pd.DataFrame,
    styles: dict[str, Style],
    *,
    ylabel: str = "accuracy",
    limits: tuple[float, float] = (0.0, 1.0),
    xlabel: str = "share of inputs removed",
) -> Figure:
    """A scorer's stored curves: one panel per (setting, decoy count) and curve name, one line per method.

    ``curves`` is :func:`synthbench.report.tables.scorer_curve_table`'s output; x is ``xlabel`` (by
    default the share of inputs removed, 0 = clean), bands are 95 % CIs over the cells, clipped to
    the values' ``limits`` (few cells give wide intervals).
    """
    panels = list(dict.fromkeys(zip(curves["setting"], curves["n_decoys"], curves["curve"])))
    fig, axes = _panel_grid(len(panels), 3.6, sharey=True)
    handles: dict[str, object] = {}
    for ax, (setting, decoys, curve) in zip(axes.flat, panels):
        part = curves[(curves["setting"] == setting) & (curves["n_decoys"] == decoys) & (curves["curve"] == curve)]
        for method, g in part.groupby("method", sort=False):
            st = styles.get(method, Style("#777777", "o", "-"))
            (line,) = ax.plot(
                g["x"],
                g["mean"],
                color=st.color,
                marker=st.marker,
                linestyle=st.linestyle,
                markersize=3.5,
                linewidth=1.2,
            )
            ax.fill_between(
                g["x"], g["lo"].clip(*limits), g["hi"].clip(*limits), color=st.color, alpha=0.12, linewidth=0
            )
            handles.setdefault(method, line)
        ax.set_title(f"{setting_label(setting, decoys)} — {curve}", fontsize=9)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.grid(True, alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel(ylabel, fontsize=8)
    _legend_right(fig, list(handles.values()), list(handles))
    fig.tight_layout()
    return fig


def truth_scatter(table: pd.DataFrame, styles: dict[str, Style], *, truth: str, verdict: str) -> Figure:
    """Each method's verdict against its ground-truth score, one panel per (setting, decoy count).

    ``table`` is :func:`synthbench.report.tables.beside_truth`'s output.
    """
    panels = list(dict.fromkeys(zip(table["setting"], table["n_decoys"])))
    fig, axes = _panel_grid(len(panels), 3.4)
    handles: dict[str, object] = {}
    for ax, (setting, decoys) in zip(axes.flat, panels):
        for r in table[(table["setting"] == setting) & (table["n_decoys"] == decoys)].itertuples():
            st = styles.get(r.method, Style("#777777", "o", "-"))
            handles.setdefault(r.method, ax.scatter(r.truth, r.verdict, color=st.color, marker=st.marker, s=28))
        ax.set_title(setting_label(setting, decoys), fontsize=9)
        ax.set_xlabel(f"{truth} (ground truth)", fontsize=8)
        ax.set_ylabel(verdict, fontsize=8)
        ax.grid(True, alpha=0.3)
    _legend_right(fig, list(handles.values()), list(handles))
    fig.tight_layout()
    return fig


#: The overview writes each cell's value in it up to this many columns (wider grids rely on the colours).
OVERVIEW_ANNOTATE_COLUMNS = 24


def overview_heatmap(
    table: pd.DataFrame,
    *,
    metric: MetricInfo,
    methods: list[str],
    controls: frozenset[str] | set[str] = frozenset(),
    title: str = "",
) -> Figure:
    """The overview: ``metric`` of every method (rows, in the order of ``methods``: best overall first) in every
    setting and decoy count (columns, in store order), one glance for the whole part.

    ``table`` is :func:`synthbench.report.tables.overview_table`'s output. Colour is the mean (viridis, the better
    end yellow whichever the metric's direction); the value is written in each cell where the grid is narrow
    enough. Marks: a cell whose 95 % interval reaches the chance level (the mean alone with one cell) is greyed
    ("no better than chance"); a cell some of whose folds explain a model below the competence threshold is hatched (its
    value says as much about the model as about the method); each column's chance is written under its label and
    every chance level drawn on the colour bar; a missing cell is blank. Control rows are in italics.
    """
    from matplotlib.colors import Normalize
    from matplotlib.patches import Patch, Rectangle

    m = metric
    higher = m.direction == "higher"
    table = table.assign(column=[setting_label(s, d) for s, d in zip(table["setting"], table["n_decoys"])])
    columns = list(dict.fromkeys(table["column"]))
    rows = [r for r in methods if r in set(table["method"])]
    at = {(r.method, r.column): r for r in table.itertuples()}
    values = np.array([[getattr(at.get((r, c)), "mean", np.nan) for c in columns] for r in rows], dtype=float)
    chance = table.groupby("column", sort=False)["chance"].mean().reindex(columns)
    if np.isfinite(m.limits).all():  # the metric's range, so colours mean the same in every store
        low, high = m.limits
    else:  # an unbounded metric: the values' range
        low, high = (np.nanmin(values), np.nanmax(values)) if np.isfinite(values).any() else (0.0, 1.0)
    norm = Normalize(vmin=low, vmax=high if high > low else low + 1)
    cmap = matplotlib.colormaps["viridis" if higher else "viridis_r"]

    width = max(6.0, 2.6 + 0.62 * len(columns) + 1.2)
    fig = Figure(figsize=(width, 1.9 + 0.26 * max(len(rows), 3)))
    ax = fig.subplots()
    image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
    annotate = len(columns) <= OVERVIEW_ANNOTATE_COLUMNS
    greyed = hatched = False
    for i, method in enumerate(rows):
        for j, column in enumerate(columns):
            r = at.get((method, column))
            if r is None or np.isnan(r.mean):
                continue
            edge = r.mean if np.isnan(r.lo) else (r.lo if higher else r.hi)
            at_chance = np.isfinite(chance[column]) and (edge <= chance[column] if higher else edge >= chance[column])
            if at_chance:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="#DDDDDD", edgecolor="white", linewidth=0.5))
                greyed = True
            if r.incompetent:
                ax.add_patch(
                    Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="////", edgecolor="#555555", linewidth=0)
                )
                hatched = True
            if annotate:  # dark text on the bright (yellow) end of viridis and on grey
                position = norm(r.mean) if higher else 1 - norm(r.mean)
                light = at_chance or position > 0.6
                ax.text(
                    j, i, f"{r.mean:.2f}", ha="center", va="center", fontsize=6.5, color="#222222" if light else "white"
                )
    ax.set_xticks(range(len(columns)))
    ax.set_xticklabels(
        [c if np.isnan(chance[c]) else f"{c}\nchance {chance[c]:.2f}" for c in columns],
        fontsize=7,
        rotation=45 if len(columns) > 6 else 0,
        ha="right" if len(columns) > 6 else "center",
    )
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows, fontsize=7.5)
    for label in ax.get_yticklabels():
        if label.get_text().partition("@")[0] in controls:
            label.set_fontstyle("italic")
    ax.tick_params(length=0)
    ax.set_xticks(np.arange(-0.5, len(columns)), minor=True)
    ax.set_yticks(np.arange(-0.5, len(rows)), minor=True)
    ax.grid(which="minor", color="white", linewidth=0.8)
    ax.tick_params(which="minor", length=0)
    bar = fig.colorbar(image, ax=ax, fraction=0.05, pad=0.02)
    bar.set_label(_axis_label(metric, "mean ") + f" ({m.direction} is better)", fontsize=8)
    bar.ax.tick_params(labelsize=7)
    levels = sorted({round(float(v), 3) for v in chance.dropna()})
    for level in levels:
        bar.ax.axhline(level, color="#CC3311", linewidth=1.2)
    legend = (
        [Patch(facecolor="#DDDDDD", edgecolor="#999999", label="no better than chance (95 % CI reaches it)")]
        if greyed
        else []
    )
    legend += (
        [Patch(facecolor="white", edgecolor="#555555", hatch="////", label="some folds' model below competence")]
        if hatched
        else []
    )
    legend += [Patch(facecolor="#CC3311", label="chance level (colour bar)")] if levels else []
    if legend:
        ax.legend(
            handles=legend,
            loc="lower left",
            bbox_to_anchor=(0.0, 1.0),
            fontsize=7,
            frameon=False,
            ncol=len(legend),
            borderaxespad=0.3,
        )
    ax.set_title(title or f"Mean {m.name} per setting (best methods on top)", fontsize=10, pad=22 if legend else 6)
    fig.tight_layout()
    return fig


def validity_heatmap(settings: pd.DataFrame) -> Figure:
    """Each verdict's agreement with the truth (Spearman's rho) per setting: one row per verdict and explained model,
    one column per setting (``†``: folds whose model did not learn), blue agreeing, red reversed, grey none.

    ``settings`` is :func:`synthbench.report.study.verdicts.verdict_agreement`'s table.
    """
    table = settings.assign(
        row=[f"{v} ({m or 'no model'})" for v, m in zip(settings["verdict"], settings["model"])],
        column=[
            setting_label(s, d) + (" †" if a else "")
            for s, d, a in zip(settings["setting"], settings["n_decoys"], settings["apart"])
        ],
    )
    grid = table.pivot_table(index="row", columns="column", values="spearman", aggfunc="mean", sort=False)
    grid = grid.reindex(index=list(dict.fromkeys(table["row"])), columns=list(dict.fromkeys(table["column"])))
    values = grid.to_numpy(dtype=float)
    fig = Figure(figsize=(1.2 + 0.75 * grid.shape[1] + 3.2, 0.9 + 0.38 * grid.shape[0]), layout="constrained")
    ax = fig.add_subplot()
    cmap = matplotlib.colormaps["RdBu"].with_extremes(bad="#dddddd")
    image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=-1, vmax=1, aspect="auto")
    for (i, j), v in np.ndenumerate(values):
        ax.text(j, i, "–" if np.isnan(v) else f"{v:+.2f}", ha="center", va="center", fontsize=7)
    ax.set_xticks(range(grid.shape[1]), grid.columns, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(grid.shape[0]), grid.index, fontsize=8)
    fig.colorbar(image, ax=ax, fraction=0.03, label="Spearman ρ with the truth")
    return fig


def _bars(value: float, lo: float, hi: float) -> list[list[float]]:
    """Error-bar lengths below and above ``value`` of the interval ``[lo, hi]``; a percentile bootstrap interval
    need not hold its point estimate, so a side beyond the estimate is drawn as none."""
    return [[max(0.0, value - lo)], [max(0.0, hi - value)]]


def reliability_validity(summary: pd.DataFrame) -> Figure:
    """Each verdict's reliability (Krippendorff's alpha, internal consistency, MetaQuantus' meta-consistency where
    measured) against its validity (mean Spearman's rho with the truth), with both 95 % intervals: one point per
    verdict, data kind and model (one colour and marker each, the same in every panel), one panel per measure.

    ``summary`` is :attr:`synthbench.report.study.verdicts.VerdictValidity.summary` (the rows of models that learned).
    """
    measures = [(v, label) for v, label in RELIABILITY_MEASURES.items() if v in summary and summary[v].notna().any()]
    names = [f"{r.verdict} ({data_word(r.kind)}, {r.model or 'no model'})" for r in summary.itertuples()]
    looks = {  # one colour and marker per verdict, the same in every panel
        name: (TOL_MUTED[i % len(TOL_MUTED)], _MARKERS[(i // len(TOL_MUTED)) % len(_MARKERS)])
        for i, name in enumerate(dict.fromkeys(names))
    }
    fig = Figure(figsize=(5.2 * max(1, len(measures)) + 2.5, 4.2))
    axes = [fig.add_subplot(1, max(1, len(measures)), i + 1) for i in range(max(1, len(measures)))]
    handles: dict[str, object] = {}
    for ax, (value, label) in zip(axes, measures):
        for name, r in zip(names, summary.itertuples()):
            if np.isnan(getattr(r, value)) or np.isnan(r.spearman):
                continue
            color, marker = looks[name]
            lo, hi = getattr(r, f"{value}_lo"), getattr(r, f"{value}_hi")
            x, y = getattr(r, value), r.spearman
            handles.setdefault(
                name,
                ax.errorbar(
                    x,
                    y,
                    xerr=None if np.isnan(lo) else _bars(x, lo, hi),
                    yerr=None if np.isnan(r.spearman_lo) else _bars(y, r.spearman_lo, r.spearman_hi),
                    fmt=marker,
                    color=color,
                    capsize=2,
                    markersize=5,
                ),
            )
        ax.axhline(0, color="#777777", lw=0.8)
        ax.set_xlabel(f"{label} (no truth)", fontsize=9)
        ax.set_ylabel("validity: mean Spearman ρ with the truth", fontsize=9)
        ax.grid(True, alpha=0.3)
    _legend_right(fig, list(handles.values()), list(handles))
    fig.tight_layout()
    return fig
