"""Certification of the image data sets: labels from the signal alone, nothing outside the masks, balance, masks."""

from __future__ import annotations

import gzip
import json
import pickle
import shutil

import numpy as np
import pytest
from scipy import stats
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score

from synthbench import datasets
from synthbench.datasets.files import DATA_DIR_ENV, MissingDataFiles, read_idx
from synthbench.datasets.images import GLYPHS, XOR_GLYPHS, glyph
from synthbench.runner.grid import Cell

PATCH = 5


def _squares(mask: np.ndarray) -> list[tuple[int, int]]:
    """Top-left corners of the PATCH x PATCH squares of a 2-D mask, in reading order."""
    m = mask.copy()
    corners = []
    for r, c in zip(*np.nonzero(m)):
        if m[r, c]:
            assert m[r : r + PATCH, c : c + PATCH].all(), "a mask component is not a full square"
            m[r : r + PATCH, c : c + PATCH] = False
            corners.append((int(r), int(c)))
    return corners


def _read(image: np.ndarray, corner: tuple[int, int]) -> int:
    """The glyph (index into GLYPHS) whose strokes best match the signal channel at ``corner``."""
    r, c = corner
    crop = image[r : r + PATCH, c : c + PATCH]
    errors = [np.square(crop - glyph(name, PATCH)).sum() for name in GLYPHS]
    return int(np.argmin(errors))


@pytest.mark.parametrize("n_classes", [2, 5])
def test_shapes_label_is_the_signal_glyph_read_back_from_the_masked_square(n_classes):
    ds = datasets.make("shapes", n_samples=300, n_decoys=6, seed=1, n_classes=n_classes)
    assert ds.X.shape == (300, 3, 32, 32) and ds.relevant is None and ds.kind == "image"
    for x, y, mask in zip(ds.X, ds.y, ds.relevant_local):
        (corner,) = _squares(mask[0])
        assert _read(x[0], corner) == y


def test_shapes_xor_label_is_the_xor_of_the_two_signal_glyphs_and_neither_alone_says_anything():
    ds = datasets.make("shapes_xor", n_samples=2000, n_decoys=4, seed=2)
    bits = []
    xor_index = [GLYPHS.index(g) for g in XOR_GLYPHS]
    for x, mask in zip(ds.X, ds.relevant_local):
        corners = _squares(mask[0])
        assert len(corners) == 2
        bits.append([xor_index.index(_read(x[0], c)) for c in corners])
    bits = np.array(bits)
    np.testing.assert_array_equal(bits[:, 0] ^ bits[:, 1], ds.y)
    for j in range(2):  # one glyph alone: independent of the label (chi-square on the 2x2 table)
        table = np.array([[np.sum((bits[:, j] == b) & (ds.y == c)) for c in (0, 1)] for b in (0, 1)])
        assert stats.chi2_contingency(table)[1] > 1e-3, table


def _outside_accuracy(X: np.ndarray, y: np.ndarray, masks: np.ndarray) -> tuple[float, float, float]:
    """Cross-validated accuracy of a linear classifier reading only the pixels outside the masks, chance
    ``1 / k``, and the largest distance from chance the certification accepts (4 standard errors + 0.02)."""
    outside = np.where(masks, 0.0, X).reshape(len(y), -1)
    k = int(y.max()) + 1
    acc = cross_val_score(LogisticRegression(C=0.1, max_iter=300), outside, y, cv=4).mean()
    return acc, 1 / k, 4 * np.sqrt((1 / k) * (1 - 1 / k) / len(y)) + 0.02


def _distractor_ink_pvalue(X: np.ndarray, y: np.ndarray) -> float:
    """Kruskal-Wallis p-value of the distractor cue's ink (channel 1, strokes counted) across the classes."""
    ink = X[:, 1].reshape(len(y), -1).clip(0).sum(axis=1)
    return stats.kruskal(*[ink[y == c] for c in range(int(y.max()) + 1)]).pvalue


@pytest.mark.parametrize(
    "name,params",
    [
        ("shapes", {"n_classes": 2}),
        ("shapes", {"n_classes": 4}),
        ("shapes_xor", {}),
        ("shapes", {"n_classes": 2, "channels": 1}),
    ],
)
def test_pixels_outside_the_masks_carry_no_information_about_the_label(name, params):
    ds = datasets.make(name, n_samples=800, n_decoys=4, seed=3, size=24, **params)
    acc, chance, tolerance = _outside_accuracy(ds.X, ds.y, ds.relevant_local)
    assert abs(acc - chance) < tolerance, (acc, chance)
    # the distractors' glyphs, counted by their strokes in the distractor cue, do not depend on the label
    if params.get("channels", 3) >= 2:
        assert _distractor_ink_pvalue(ds.X, ds.y) > 1e-3


@pytest.mark.parametrize("params", [{"n_classes": 4}, {"n_classes": 2, "channels": 1}])
def test_the_outside_checks_detect_a_leak_planted_outside_the_masks(params):
    """Positive control of the certification above, on a copy of its data: in images of class c, the
    4 x 4 block at corner c of the last channel is one pixel-noise sd (0.1) brighter wherever no mask
    covers it; the same classifier must read the label there. Separately, 3 pixels of distractor ink
    added to class 1's images (a third of the ink's sd) must move the ink test below its threshold."""
    ds = datasets.make("shapes", n_samples=800, n_decoys=4, seed=3, size=24, **params)
    k = int(ds.y.max()) + 1
    leak = np.zeros_like(ds.X)
    for c in range(k):
        rows, cols = [slice(0, 4), slice(-4, None)][c // 2], [slice(0, 4), slice(-4, None)][c % 2]
        leak[ds.y == c, -1, rows, cols] = 0.1
    acc, chance, tolerance = _outside_accuracy(ds.X + np.where(ds.relevant_local, 0.0, leak), ds.y, ds.relevant_local)
    assert acc - chance > tolerance, (acc, chance)
    if params.get("channels", 3) >= 2:
        ink = np.zeros_like(ds.X)
        ink[ds.y == 1, 1, 12, 10:13] = 1.0
        assert _distractor_ink_pvalue(ds.X + np.where(ds.relevant_local, 0.0, ink), ds.y) < 1e-3


def test_classes_are_balanced_and_the_data_reproducible():
    for n, k in [(301, 2), (300, 3), (16, 8)]:
        y = datasets.make("shapes", n_samples=n, n_decoys=1, seed=4, n_classes=k).y
        counts = np.bincount(y, minlength=k)
        assert counts.max() - counts.min() <= 1
    y = datasets.make("shapes_xor", n_samples=301, n_decoys=0, seed=4).y
    assert abs(int(y.sum()) - 150) <= 1
    a = datasets.make("shapes", n_samples=20, n_decoys=3, seed=5)
    b = datasets.make("shapes", n_samples=20, n_decoys=3, seed=5)
    c = datasets.make("shapes", n_samples=20, n_decoys=3, seed=6)
    assert np.array_equal(a.X, b.X) and np.array_equal(a.relevant_local, b.relevant_local)
    assert not np.array_equal(a.X, c.X)


@pytest.mark.parametrize("name,signals", [("shapes", 1), ("shapes_xor", 2)])
@pytest.mark.parametrize("channels", [3, 1])
def test_masks_cover_exactly_the_signal_squares(name, signals, channels):
    ds = datasets.make(name, n_samples=200, n_decoys=8, seed=7, noise=0.0, channels=channels)
    mask = ds.relevant_local
    assert mask.dtype == bool and mask.shape == ds.X.shape
    assert (mask == mask[:, :1]).all()  # the same pixels in every channel
    assert (mask[:, 0].sum(axis=(1, 2)) == signals * PATCH * PATCH).all()
    signal_ink = ds.X[:, 0] if channels > 1 else np.where(ds.X[:, 0] == 1.0, 1.0, 0.0)
    assert not (signal_ink * ~mask[:, 0]).any()  # no signal stroke outside the mask
    if channels > 1:
        assert not (ds.X[:, 1] * mask[:, 0]).any()  # no distractor stroke inside it
        assert ds.X[:, 1].sum() > 0
    else:
        distractor = np.isclose(ds.X[:, 0], 0.5)
        assert distractor.any() and not (distractor & mask[:, 0]).any()


def test_bad_image_parameters_are_refused():
    with pytest.raises(ValueError, match="do not fit"):
        datasets.make("shapes", n_samples=5, n_decoys=30, seed=0)
    with pytest.raises(ValueError, match="n_classes"):
        datasets.make("shapes", n_samples=5, n_decoys=0, seed=0, n_classes=9)
    with pytest.raises(ValueError, match="n_decoys"):
        datasets.make("shapes", n_samples=5, n_decoys=-1, seed=0)
    with pytest.raises(ValueError, match="has no decoys"):
        datasets.make("digits", n_samples=5, n_decoys=2, seed=0)


def test_digits_are_sklearns_images_in_a_seeded_order():
    from sklearn.datasets import load_digits

    ds = datasets.make("digits", n_samples=100, seed=0)
    assert ds.X.shape == (100, 1, 8, 8) and ds.X.min() >= 0 and ds.X.max() <= 1 and ds.relevant_local is None
    images, target = load_digits(return_X_y=True)
    rows = [int(np.nonzero((images == ds.X[i].reshape(-1) * 16).all(axis=1))[0][0]) for i in range(5)]
    np.testing.assert_array_equal(target[rows], ds.y[:5])
    with pytest.raises(ValueError, match="1797"):
        datasets.make("digits", n_samples=2000, seed=0)


def _idx(path, array, gz):
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    data = header + array.astype(np.uint8).tobytes()
    (gzip.open if gz else open)(path, "wb").write(data)


def _write_mnist(folder, n_train=6, n_test=4, gz=True, seed=0):
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    suffix = ".gz" if gz else ""
    for split, n in (("train", n_train), ("t10k", n_test)):
        _idx(folder / f"{split}-images-idx3-ubyte{suffix}", rng.integers(0, 256, (n, 28, 28)), gz)
        _idx(folder / f"{split}-labels-idx1-ubyte{suffix}", rng.integers(0, 10, n), gz)


@pytest.mark.parametrize("gz", [True, False])
def test_mnist_loader_reads_local_idx_files(tmp_path, gz):
    _write_mnist(tmp_path / "mnist", gz=gz)
    ds = datasets.make("mnist", n_samples=10, seed=0, data_dir=tmp_path)
    assert ds.X.shape == (10, 1, 28, 28) and ds.X.dtype == np.float32 and 0 <= ds.X.min() and ds.X.max() <= 1
    suffix = ".gz" if gz else ""
    images = np.concatenate(
        [read_idx(tmp_path / "mnist" / f"{s}-images-idx3-ubyte{suffix}") for s in ("train", "t10k")]
    )
    labels = np.concatenate(
        [read_idx(tmp_path / "mnist" / f"{s}-labels-idx1-ubyte{suffix}") for s in ("train", "t10k")]
    )
    rows = np.random.default_rng(0).permutation(10)
    np.testing.assert_array_equal(ds.y, labels[rows])
    np.testing.assert_allclose(ds.X[:, 0] * 255, images[rows], atol=1e-3)
    with pytest.raises(ValueError, match="too many"):
        datasets.make("mnist", n_samples=11, seed=0, data_dir=tmp_path)


def test_fashion_mnist_and_cifar10_loaders(tmp_path):
    _write_mnist(tmp_path, gz=False)  # files directly in the folder also count
    batches = tmp_path / "cifar10" / "cifar-10-batches-py"
    batches.mkdir(parents=True)
    rng = np.random.default_rng(1)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        with open(batches / name, "wb") as f:
            pickle.dump({b"data": rng.integers(0, 256, (2, 3072), dtype=np.uint8), b"labels": [1, 2]}, f)
    assert datasets.make("fashion_mnist", n_samples=10, seed=0, data_dir=tmp_path).X.shape == (10, 1, 28, 28)
    cifar = datasets.make("cifar10", n_samples=12, seed=0, data_dir=str(tmp_path))
    assert cifar.X.shape == (12, 3, 32, 32) and set(cifar.y) == {1, 2}


def test_missing_or_malformed_files_say_what_is_expected(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))  # the library never reads it: the folder is passed
    with pytest.raises(
        MissingDataFiles, match="--data-dir PATH .or set SYNTHBENCH_DATA_DIR.; in Python, data_dir=PATH"
    ):
        datasets.make("mnist", n_samples=5, seed=0)
    with pytest.raises(MissingDataFiles, match="train-images-idx3-ubyte.*t10k-labels-idx1-ubyte"):
        datasets.make("mnist", n_samples=5, seed=0, data_dir=tmp_path)
    with pytest.raises(MissingDataFiles, match="cifar-10-batches-py/data_batch_1"):
        datasets.make("cifar10", n_samples=5, seed=0, data_dir=tmp_path)
    _write_mnist(tmp_path / "mnist", gz=False)
    (tmp_path / "mnist" / "t10k-labels-idx1-ubyte").write_bytes(b"\x00\x00\x08\x01\x00\x00\x00\x09abc")
    with pytest.raises(ValueError, match="header says"):
        datasets.make("mnist", n_samples=5, seed=0, data_dir=tmp_path)


def test_the_files_content_hash_enters_the_cell_id_and_their_folder_does_not(tmp_path):
    _write_mnist(tmp_path / "mnist", seed=0)
    cell = Cell("mnist", 10, None, 0, 2, 0, "random", data_dir=str(tmp_path))
    first = cell.cell_id
    assert "data_hash" in cell.config() and cell.cell_id == first
    assert str(tmp_path) not in json.dumps(cell.config())
    shutil.copytree(tmp_path / "mnist", tmp_path / "copy" / "mnist")  # the same files elsewhere: the same cells
    assert Cell("mnist", 10, None, 0, 2, 0, "random", data_dir=str(tmp_path / "copy")).cell_id == first
    _write_mnist(tmp_path / "mnist", seed=1)  # other content at the same path
    assert cell.cell_id != first


def test_a_run_on_files_reads_the_folder_it_is_given_in_every_worker_and_the_report_draws_them(
    tmp_path, monkeypatch, capsys
):
    """--data-dir travels with the cells (no environment variable set for the workers), and the report draws
    the images again only when it is given the folder too."""
    from synthbench.report.cli import main as report
    from synthbench.run import main as run

    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    _write_mnist(tmp_path / "data" / "mnist", n_train=12, n_test=8)
    store = tmp_path / "r.sqlite"
    args = [
        "--datasets",
        "shapes,mnist",
        "--decoys",
        "1",
        "--methods",
        "sobel",
        "--n-samples",
        "20",
        "--folds",
        "2",
        "--quiet",
        "--store",
        str(store),
    ]
    assert run([*args, "--jobs", "2", "--data-dir", str(tmp_path / "data")]) == 0
    assert "4 cells run, 0 already" in capsys.readouterr().out
    shutil.copytree(tmp_path / "data", tmp_path / "moved")  # the same files elsewhere: the same cells
    assert run([*args, "--jobs", "1", "--data-dir", str(tmp_path / "moved")]) == 0
    assert "0 cells run, 4 already" in capsys.readouterr().out
    assert report(["--store", str(store), "--out", str(tmp_path / "alone")]) == 0
    alone = (tmp_path / "alone" / "report.md").read_text()
    assert "Example maps, mnist" in alone and "pass `--data-dir`" in alone
    assert report(["--store", str(store), "--out", str(tmp_path / "drawn"), "--data-dir", str(tmp_path / "data")]) == 0
    assert "pass `--data-dir`" not in (tmp_path / "drawn" / "report.md").read_text()
    assert "Example maps, mnist" in (tmp_path / "drawn" / "report.md").read_text()
