"""The package layering: each part of synthbench imports only from the parts below it."""

from __future__ import annotations

import ast
from pathlib import Path

import synthbench

ROOT = Path(synthbench.__file__).parent
#: Bottom to top. A module may import from its own layer and the layers before it: ``cli`` (what the
#: two command lines share) below the report, and the run's command line (``run``) on top, so the
#: report's command line cannot import from it.
LAYERS = [
    "defaults",
    "machine",
    "registry",
    "kinds",
    "catalogue",
    "plugins",
    "datasets",
    "protocol",
    "models",
    "attribution",
    "selection",
    "methods",
    "scoring",
    "testing",
    "runner",
    "suites",
    "cli",
    "report",
    "run",
]
RANK = {name: i for i, name in enumerate(LAYERS)}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "synthbench" and parts[1] in LAYERS else None


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_every_module_imports_only_from_its_layer_and_below():
    violations = []
    for path in ROOT.rglob("*.py"):
        own = path.relative_to(ROOT).parts[0].removesuffix(".py")
        if own not in LAYERS:
            continue
        for module in _imports(path):
            layer = _layer(module)
            if layer is not None and RANK[layer] > RANK[own]:
                violations.append(f"{path.relative_to(ROOT)} imports {module} ({layer} is above {own})")
    assert not violations, "\n".join(sorted(violations))
    assert {p.name for p in ROOT.iterdir() if p.suffix == ".py" or p.is_dir()} >= {
        "protocol.py",
        "attribution",
        "scoring",
    }
    placed = {
        p.name.removesuffix(".py")
        for p in ROOT.iterdir()
        if (p.suffix == ".py" or p.is_dir()) and p.name not in ("__init__.py", "__pycache__")
    }
    assert placed <= set(LAYERS), f"modules without a layer: {sorted(placed - set(LAYERS))}"
