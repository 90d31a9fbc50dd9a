"""Are the differences between methods real? Friedman test and Nemenyi post-hoc over blocks.

A *block* is one (setting, decoy count): the methods' mean metric over that block's folds and
seeds are ranked within it (1 = best, ties share their mean rank). The Friedman test asks whether
any method ranks consistently differently; the Nemenyi test (scikit-posthocs) compares every
pair. Only blocks that every compared method completed enter; a method present in fewer than
half of the blocks is left out and named, so one missing method cannot empty the test.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from synthbench.report.results import Results

__all__ = ["RankTest", "rank_test"]


@dataclass
class RankTest:
    """Outcome of :func:`rank_test`.

    Attributes
    ----------
    metric, alpha : what was compared, at which significance level
    blocks : number of (setting, decoy count) blocks used
    ranks : average rank per method (1 = best), best first
    statistic, p_value : Friedman chi-square and its p-value (NaN when fewer than 3 methods or 2 blocks)
    pairwise : Nemenyi p-values, methods × methods (empty when not computed)
    left_out : methods left out for lack of blocks
    """

    metric: str
    alpha: float
    blocks: int
    ranks: pd.Series
    statistic: float = np.nan
    p_value: float = np.nan
    pairwise: pd.DataFrame = field(default_factory=pd.DataFrame)
    left_out: list[str] = field(default_factory=list)

    @property
    def tested(self) -> bool:
        return not np.isnan(self.p_value)

    def significant_pairs(self) -> list[tuple[str, str]]:
        """Pairs (better, worse by average rank) whose Nemenyi p-value is below ``alpha``."""
        if self.pairwise.empty or not self.p_value < self.alpha:
            return []
        order = list(self.ranks.index)
        return [(a, b) for i, a in enumerate(order) for b in order[i + 1 :] if self.pairwise.loc[a, b] < self.alpha]

    def sentence(self) -> str:
        """Plain-language summary of which differences are significant."""
        left = f" ({', '.join(self.left_out)} left out: too few complete blocks)" if self.left_out else ""
        if not self.tested:
            return (
                f"Too little data for a rank test: {len(self.ranks)} methods over {self.blocks} complete blocks "
                f"(at least 3 methods and 2 blocks are needed){left}."
            )
        head = (
            f"Friedman test over {self.blocks} blocks (dataset × decoy count) and {len(self.ranks)} methods on "
            f"mean {self.metric}: χ² = {self.statistic:.1f}, p = {self.p_value:.2g}{left}."
        )
        if not self.p_value < self.alpha:
            return head + f" At α = {self.alpha} the methods' ranks are not distinguishable; no pairwise test is made."
        pairs = self.significant_pairs()
        best = self.ranks.index[0]
        beats = [b for a, b in pairs if a == best]
        ties = [m for m in self.ranks.index[1:] if m not in beats]
        total = len(self.ranks) * (len(self.ranks) - 1) // 2
        text = f"{head} At α = {self.alpha} the Nemenyi test separates {len(pairs)} of {total} method pairs. "
        lead = f"The best-ranked method, {best} (average rank {self.ranks.iloc[0]:.2f}),"
        if not beats:
            return text + f"{lead} cannot be told apart from any other method."
        text += f"{lead} is significantly better than {_names(beats)}"
        return text + (f"; it cannot be told apart from {_names(ties)}." if ties else ".")


def _names(items: list[str], limit: int = 12) -> str:
    if len(items) > limit:
        return ", ".join(items[:limit]) + f" and {len(items) - limit} more"
    return ", ".join(items)


def block_means(results: Results, metric: str) -> pd.DataFrame:
    """Mean ``metric`` per block (rows: ``setting/n_decoys``) and method (columns); NaN where missing."""
    sel = results.scores[results.scores["metric"] == metric]
    table = sel.pivot_table(index=["setting", "n_decoys"], columns="method", values="value", aggfunc="mean")
    table.index = [f"{s}/{d}" for s, d in table.index]
    return table


def rank_test(results: Results, metric: str = "best_k", alpha: float = 0.05) -> RankTest:
    """Friedman test and Nemenyi post-hoc of the methods' ranks over complete blocks."""
    import scikit_posthocs as sp
    from scipy import stats

    table = block_means(results, metric)
    coverage = table.notna().mean()
    left_out = sorted(coverage.index[coverage < 0.5])
    table = table.drop(columns=left_out).dropna(axis=0, how="any")
    higher_better = results.metric(metric).direction == "higher"
    ranks = table.rank(axis=1, ascending=not higher_better).mean().sort_values()
    test = RankTest(metric=metric, alpha=alpha, blocks=len(table), ranks=ranks, left_out=left_out)
    if table.shape[1] < 3 or len(table) < 2:
        return test
    test.statistic, test.p_value = (float(v) for v in stats.friedmanchisquare(*(table[c] for c in table.columns)))
    if np.isnan(test.p_value):  # every method ties with every other in every block
        test.p_value = 1.0
    test.pairwise = sp.posthoc_nemenyi_friedman(table.to_numpy())
    test.pairwise.index = test.pairwise.columns = table.columns
    return test
