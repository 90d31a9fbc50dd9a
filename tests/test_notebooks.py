"""Every notebook in notebooks/ runs top to bottom (nbclient, a real Jupyter kernel), so none can rot."""

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert [p.name for p in NOTEBOOKS] == ["leaderboard.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_top_to_bottom_and_draws_its_figures(path, tmp_path, monkeypatch):
    monkeypatch.delenv("SYNTHBENCH_STORE", raising=False)  # the notebook makes its own small grid
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 4  # overview, curves, breakpoints, critical-difference diagram
    summary = [o["data"]["text/markdown"] for o in outputs if "text/markdown" in o.get("data", {})]
    assert len(summary) == 1 and "**Best methods**" in summary[0] and "leads with" in summary[0]  # what the store says
    text = "".join(o.get("text", "") for o in outputs)
    assert "Friedman test" in text and "ran 126 cells" in text  # saliency on two MLP presets
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("best_k" in h for h in html)
    assert any("mlp@sparse_mlp" in h and "mlp@dense_mlp" in h and "auroc" in h for h in html)  # the models table
    assert os.listdir(tmp_path)  # the small grid's store went to the temporary folder
