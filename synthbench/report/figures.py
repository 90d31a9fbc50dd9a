"""Report figures (matplotlib, no display needed): decoy curves, breakpoints, cost against quality, CD diagram.

Every figure takes the same :func:`method_styles` mapping, so a method keeps one colour and
marker in every figure. Figures are built without pyplot (no global backend state): save them
with ``fig.savefig``, or let a notebook display them. Colours come from Paul Tol's colour-blind-safe "muted" scheme; with more
methods than colours, the marker (and line style) tells methods of the same colour apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from synthbench import metrics as M
from synthbench.report.statistics import RankTest
from synthbench.report.tables import BREAKPOINT_LEVEL, pareto_front

__all__ = ["Style", "method_styles", "decoy_curves", "breakpoint_figure", "cost_quality", "cd_diagram", "TOL_MUTED"]

#: Paul Tol's "muted" qualitative scheme (colour-blind safe), without its pale grey.
TOL_MUTED = ("#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677", "#882255", "#AA4499")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
_LINES = ("-", "--", ":", "-.")


def _axis_label(metric: str, prefix: str = "") -> str:
    unit = M.get(metric).unit
    return f"{prefix}{metric}" + (f" ({unit})" if unit else "")


@dataclass(frozen=True)
class Style:
    """How one method is drawn."""

    color: str
    marker: str
    linestyle: str


def method_styles(methods: list[str]) -> dict[str, Style]:
    """A fixed style per method: registry order first (so a method looks the same in every report), then others by name."""
    from synthbench.methods import method_names

    registered = method_names()
    order = [m for m in registered if m in methods] + sorted(m for m in methods if m not in registered)
    position = {m: registered.index(m) if m in registered else len(registered) + i for i, m in enumerate(order)}
    n = len(TOL_MUTED)
    return {m: Style(TOL_MUTED[i % n], _MARKERS[(i // n) % len(_MARKERS)], _LINES[(i // n) % len(_LINES)])
            for m, i in position.items()}


def _legend_right(fig: Figure, handles: list, labels: list) -> None:
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False, fontsize=8,
               ncol=1 if len(labels) <= 28 else 2)


def decoy_curves(curves: pd.DataFrame, styles: dict[str, Style], *, metric: str = "best_k",
                 settings: list[str] | None = None) -> Figure:
    """``metric`` against decoy count, one panel per setting, 95 % CI bands, chance dashed.

    ``curves`` is :func:`synthbench.report.tables.decoy_table`'s output. The decoy axis is
    logarithmic (symmetric-log below 1, so 0 decoys has a place).
    """
    settings = settings or list(dict.fromkeys(curves["setting"]))
    ncols = min(3, len(settings))
    nrows = int(np.ceil(len(settings) / ncols))
    fig = Figure(figsize=(4.2 * ncols, 3.4 * nrows))
    axes = fig.subplots(nrows, ncols, squeeze=False, sharey=True)
    handles: dict[str, object] = {}
    band_alpha = min(0.12, 0.8 / max(1, curves["method"].nunique()))  # many overlapping bands stay readable
    for ax, setting in zip(axes.flat, settings):
        part = curves[curves["setting"] == setting]
        for method, g in part.groupby("method", sort=False):
            s = styles[method]
            (line,) = ax.plot(g["n_decoys"], g["mean"], color=s.color, marker=s.marker, linestyle=s.linestyle,
                              markersize=4, linewidth=1.2, label=method)
            ax.fill_between(g["n_decoys"], g["lo"], g["hi"], color=s.color, alpha=band_alpha, linewidth=0)
            handles.setdefault(method, line)
        chance = part.groupby("n_decoys")["chance"].mean()
        (ch,) = ax.plot(chance.index, chance.to_numpy(), color="black", linestyle="--", linewidth=1, label="chance")
        handles["chance"] = ch
        ax.set_xscale("symlog", linthresh=1)
        ax.set_title(setting, fontsize=10)
        ax.set_xlabel("decoy features (log scale)")
        lo, hi = M.get(metric).limits
        if np.isfinite([lo, hi]).all():
            ax.set_ylim(lo - 0.02 * (hi - lo), hi + 0.02 * (hi - lo))
        ax.grid(True, alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel(_axis_label(metric))
    for ax in list(axes.flat)[len(settings):]:
        ax.set_visible(False)
    order = [m for m in styles if m in handles] + ["chance"]
    _legend_right(fig, [handles[m] for m in order], order)
    fig.suptitle(f"{metric} against the number of decoy features (bands: 95 % CI over folds and seeds)", fontsize=11)
    fig.tight_layout()
    return fig


def breakpoint_figure(points: pd.DataFrame, *, level: float = BREAKPOINT_LEVEL,
                      methods: list[str] | None = None) -> Figure:
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


def cost_quality(summary: pd.DataFrame, styles: dict[str, Style], *, metric: str = "best_k") -> Figure:
    """Mean ``metric`` (95 % CI bars) against mean seconds per cell (log), one point per method; Pareto front drawn and labelled.

    ``summary`` is :func:`synthbench.report.tables.summary_table`'s output.
    """
    data = summary.dropna(subset=[metric, "seconds"])
    data = data[data["seconds"] > 0]
    fig = Figure(figsize=(9.5, 5.5))
    ax = fig.subplots()
    front = pareto_front(data, metric)
    handles, labels = [], []
    for method in [m for m in styles if m in data.index]:
        r, s = data.loc[method], styles[method]
        err = np.array([[r[metric] - r[f"{metric}_lo"]], [r[f"{metric}_hi"] - r[metric]]])
        bars = ax.errorbar(r["seconds"], r[metric], yerr=None if np.isnan(err).any() else err, color=s.color,
                           marker=s.marker, markersize=6, capsize=2, linestyle="none")
        handles.append(bars)
        labels.append(method)
        if method in front.index:  # only the front is labelled in the plot; the legend names every point
            ax.annotate(method, (r["seconds"], r[metric]), textcoords="offset points", xytext=(5, 3), fontsize=8)
    (line,) = ax.step(front["seconds"], front[metric], where="post", color="black", linewidth=1, alpha=0.6)
    _legend_right(fig, [*handles, line], [*labels, "Pareto front (labelled)"])
    ax.set_xscale("log")
    ax.set_xlabel("mean wall time per cell (seconds, log scale)")
    ax.set_ylabel(_axis_label(metric, "mean "))
    ax.set_title(f"Cost against quality: mean {metric} over every cell against seconds per cell", fontsize=10)
    ax.grid(True, alpha=0.3, which="both")
    fig.tight_layout()
    return fig


def cd_diagram(test: RankTest, styles: dict[str, Style]) -> Figure:
    """Critical-difference diagram of average ranks (scikit-posthocs): methods joined by a bar do not differ significantly."""
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
    drawn = sp.critical_difference_diagram(ranks, pairwise, ax=ax, alpha=test.alpha,
                                           color_palette={i: styles[m].color for i, m in enumerate(names)},
                                           label_props={"fontsize": 8}, label_fmt_left="{label}",
                                           label_fmt_right="{label}")
    for label in drawn["labels"]:
        i = int(label.get_text())
        rank = f"({ranks[i]:.1f})"
        label.set_text(f"{names[i]} {rank}" if label.get_ha() == "right" else f"{rank} {names[i]}")
        label.set_color("#222222")  # the method's colour stays on its marker and line; pale text is hard to read
    ax.set_title(f"Average rank on mean {test.metric} over {test.blocks} blocks (dataset × decoy count; 1 = best)\n"
                 f"bars join methods the Nemenyi test cannot separate (α = {test.alpha}); Friedman p = {test.p_value:.2g}",
                 fontsize=9)
    fig.tight_layout()
    return fig
