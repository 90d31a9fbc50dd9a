"""Extract the 2023 benchmark's per-m result files from the authors' repository into docs/reproduction/.

The page ``python -m synthbench.report.reproduction`` writes reads two of the files this script writes:

- ``published_2023_per_m.csv``: ``results/<name>-<dataset>-1000.txt`` at commit 06afd2e of
  AntoinePassemiers/Feature-Selection-Benchmark, the files the published table (``tables/table-1000.tex``) averages;
- ``published_2023_earlier_per_m.csv``: ``old-results/`` at the same commit, an earlier run of the authors' code on
  the same sets (1000 rows, 6 folds, m = k to 512, the data drawn again and stored as CSV files): how far the
  authors' own two runs lie apart, the noise of the published numbers that one seed's folds do not show. It has
  the attribution methods (``resultsRING.txt`` and its like) and the selectors but TreeSHAP, mutual information and
  DeepPINK (two variants, ``deeppinku`` and ``deeppink2o``, neither the published one).

Both: ``method`` (the faithful suite's name), ``paper_name`` (the name in the authors' files), ``dataset``,
``n_features`` (m), ``best_k``, ``best_2k`` (fractions, rounded to 6 decimals). Usage::

    python benchmarks/published_2023.py --repo PATH_OF_A_CLONE [--out docs/reproduction]
"""

from __future__ import annotations

import argparse
import io
import re
import subprocess
from pathlib import Path

import pandas as pd

COMMIT = "06afd2e"
#: The faithful suite's methods and the authors' names for them: (result file prefix, column prefix).
NAMES = {
    "saliency": ("Saliency", "Saliency"),
    "integrated_gradients_nomul": ("IG_noMul", "IG_noMul"),
    "deeplift_nomul": ("DeepLift", "DeepLift"),
    "input_x_gradient": ("InputXGradient", "InputXGradient"),
    "smoothgrad_saliency": ("SmoothGrad", "SmoothGrad"),
    "guided_backprop_captum": ("GuidedBackprop", "GuidedBackprop"),
    "deconvolution_captum": ("Deconvolution", "Deconvolution"),
    "feature_ablation": ("FeatureAblation", "FeatureAblation"),
    "feature_permutation": ("FeaturePermutation", "FeaturePermutation"),
    "shapley_sampling": ("ShapleyValueSampling", "ShapleyValueSampling"),
    "lassonet_2023": ("lassonet", "LassoNet"),
    "concrete_autoencoder_2023": ("cae", "CAE"),
    "fsnet_2023": ("fsnet", "FSNet"),
    "cancelout_softmax_2023": ("canceloutsoftmax", "CancelOut_Softmax"),
    "cancelout_sigmoid_2023": ("canceloutsigmoid", "CancelOut_Sigmoid"),
    "deeppink_2023": ("deeppink", "DeepPINK"),
    "mrmr": ("mrmr", "mRMR"),
    "mi": ("mi", "MI"),
    "relief_1nn": ("relief", "Relief"),
    "rf": ("rf", "RF"),
    "treeshap_all_rows": ("treeshap", "TreeSHAP"),
}
#: synthbench's dataset names and the authors' (in file names).
DATASETS = {"ring": "ring", "xor": "xor", "ring_xor": "ring+xor", "ring_xor_sum": "ring+xor+sum", "dag": "dag"}
#: The attribution methods' earlier results: one file per dataset, every method a pair of columns.
EARLIER_ATTRIBUTION = {"ring": "RING", "xor": "XOR", "ring_xor": "RING+XOR", "ring_xor_sum": "RING+XOR+SUM"}
#: Methods the earlier run lacks (DeepPINK: two variants, neither the published one).
NOT_IN_EARLIER = ("deeppink_2023", "mi", "treeshap_all_rows")
#: The least m of each synthetic set (its k): the earlier run also has m below it on ring_xor.
K = {"ring": 2, "xor": 2, "ring_xor": 4, "ring_xor_sum": 6}


def _show(repo: Path, path: str) -> pd.DataFrame | None:
    done = subprocess.run(["git", "-C", str(repo), "show", f"{COMMIT}:{path}"], capture_output=True, text=True)
    if done.returncode != 0 or not done.stdout.strip():  # absent, or empty (a run that wrote nothing)
        return None
    # one line of results/mrmr-xor-1000.txt separates its fields by spaces
    return pd.read_csv(io.StringIO(done.stdout), sep=r"\s+")


def _m(name: str) -> int:
    """m of a row's data set name: ``ring_32_1000`` (published) or ``ring_1000samples-32feat.csv`` (earlier)."""
    found = re.search(r"-(\d+)feat", name) or re.match(r".*?_(\d+)_1000$", name)
    if found is None:
        raise ValueError(f"no feature count in {name!r}")
    return int(found.group(1))


def _rows(frame: pd.DataFrame, column: str, method: str, paper_name: str, dataset: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "method": method,
            "paper_name": paper_name,
            "dataset": dataset,
            "n_features": frame["Dataset"].map(_m),
            "best_k": frame[f"{column}_bestK"].round(6),
            "best_2k": frame[f"{column}_best2K"].round(6),
        }
    )


def published(repo: Path) -> pd.DataFrame:
    """The per-m values the published table averages, one row per method, dataset and m."""
    frames = []
    for method, (prefix, column) in NAMES.items():
        for dataset, theirs in DATASETS.items():
            frame = _show(repo, f"results/{prefix}-{theirs}-1000.txt")
            if frame is not None:
                frames.append(_rows(frame, column, method, prefix, dataset))
    return pd.concat(frames, ignore_index=True)


def earlier(repo: Path) -> pd.DataFrame:
    """The authors' earlier run (``old-results/``), one row per method, dataset and m at least k, in the order of
    :data:`NAMES` and :data:`EARLIER_ATTRIBUTION` (each file lists m ascending)."""
    frames = []
    for method, (prefix, column) in NAMES.items():
        if method in NOT_IN_EARLIER:
            continue
        for dataset, upper in EARLIER_ATTRIBUTION.items():
            attribution = prefix == column  # the attribution methods share one file per dataset
            path = f"old-results/results{upper}.txt" if attribution else f"old-results/{prefix}-{DATASETS[dataset]}.txt"
            frame = _show(repo, path)
            if frame is None:
                raise FileNotFoundError(f"{path} at {COMMIT}")
            rows = _rows(frame, column, method, prefix, dataset)
            frames.append(rows[rows["n_features"] >= K[dataset]])
    return pd.concat(frames, ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True, help="a clone of the authors' repository (with 06afd2e)")
    parser.add_argument("--out", type=Path, default=Path("docs/reproduction"))
    args = parser.parse_args()
    files = {"published_2023_per_m.csv": published(args.repo), "published_2023_earlier_per_m.csv": earlier(args.repo)}
    for name, frame in files.items():
        frame.to_csv(args.out / name, index=False)
        print(f"wrote {len(frame)} rows to {args.out / name}")


if __name__ == "__main__":
    main()
