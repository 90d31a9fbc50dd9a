"""Plugins: modules (or ``.py`` files) that register datasets, methods, scorers or model kinds when imported.

Both command lines import the ``--plugin`` items (:func:`import_plugin`, one line naming the plugin
and its error when it cannot be imported), and every worker process imports them again before
running a task (:func:`import_plugins`), so what they register exists wherever cells run. The
module imports nothing of synthbench.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

__all__ = ["PluginError", "is_plugin_path", "import_plugin", "import_plugins"]


class PluginError(ImportError):
    """A plugin that cannot be imported: no such module or file, or it raised while being imported.

    The message is one line naming the plugin and the error; the original exception is the
    ``__cause__``. ``raised`` is True when the plugin's own code raised (the cause's traceback then
    shows where).
    """

    def __init__(self, message: str, *, raised: bool = False) -> None:
        super().__init__(message)
        self.raised = raised


def is_plugin_path(item: str) -> bool:
    """Whether a plugin item names a file (``./myplug.py``, ``plugins/mine.py``) rather than a module."""
    return item.endswith(".py") or "/" in item or os.sep in item


def import_plugin(item: str) -> ModuleType:
    """Import one plugin: a module name (``mypackage.plugin``) or a path to a ``.py`` file.

    A file is imported as a module named after it (``./myplug.py`` as ``myplug``), once: the same
    file again returns the module already imported. :class:`PluginError` when the module or file
    does not exist, when another module of that name is already imported, or when the plugin
    raises while being imported.
    """
    return _import_file(item) if is_plugin_path(item) else _import_module(item)


def _import_module(item: str) -> ModuleType:
    try:
        return importlib.import_module(item)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if item == missing or item.startswith(missing + "."):  # the plugin itself, not a module it imports
            raise PluginError(
                f"No module named {item!r} (a plugin is a module on the Python path or a path to a .py file)"
            ) from exc
        raise PluginError(_raised(item, exc), raised=True) from exc
    except Exception as exc:  # noqa: BLE001 - whatever the plugin raised, named on one line
        raise PluginError(_raised(item, exc), raised=True) from exc


def _import_file(item: str) -> ModuleType:
    path = Path(item).expanduser().resolve()
    if not path.is_file():
        raise PluginError(f"{item}: no such file")
    name = path.stem
    loaded = sys.modules.get(name)
    if loaded is not None:
        where = getattr(loaded, "__file__", None)
        if where and Path(where).resolve() == path:
            return loaded
        raise PluginError(f"{item}: a module named {name!r} is already imported from elsewhere; rename the file")
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise PluginError(f"{item}: not a Python file")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - whatever the plugin raised, named on one line
        del sys.modules[name]
        raise PluginError(_raised(item, exc), raised=True) from exc
    return module


def _raised(item: str, exc: BaseException) -> str:
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return f"{item} raised {type(exc).__name__} while being imported{': ' + text if text else ''}"


def import_plugins(modules: Iterable[str]) -> None:
    """Import each plugin in ``modules`` (they register extra datasets or methods; see :func:`import_plugin`).

    Worker processes and Ray workers call this before running a task, so methods registered
    outside synthbench exist wherever cells run.
    """
    for item in modules:
        import_plugin(item)
