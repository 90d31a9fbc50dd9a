"""What the two command lines share: ``python -m synthbench.run`` and ``python -m synthbench.report``.

Bad input is a :class:`UsageError`: the command prints it on one line of stderr and exits with
code 2, before anything is written. :class:`OneLineParser` turns argparse's own errors into
such errors; :func:`parse_names` reads comma-separated names; :func:`load_plugins` imports the
``--plugin`` modules (names or paths to ``.py`` files), a plugin that cannot be imported being
one line that names it and its error (``--debug`` adds the traceback).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import NoReturn

from synthbench.defaults import COMPETENCE_THRESHOLD, DATA_DIR_ENV, check_threshold
from synthbench.plugins import PluginError, import_plugin, is_plugin_path

__all__ = [
    "DEFAULT_STORE",
    "UsageError",
    "OneLineParser",
    "parse_names",
    "add_common_options",
    "add_data_dir_option",
    "data_dir",
    "setup_logging",
    "load_plugins",
    "print_error",
    "add_competence_options",
    "competence_threshold",
]

log = logging.getLogger(__name__)

#: The results database both commands use when ``--store`` is not given.
DEFAULT_STORE = Path("results") / "synthbench.sqlite"


class UsageError(Exception):
    """Bad command-line input: reported on one line, exit code 2."""


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors raise :class:`UsageError` (one line, exit code 2) instead of exiting."""

    def error(self, message: str) -> NoReturn:  # one line, exit 2
        raise UsageError(message)


def parse_names(text: str, valid: list[str], what: str) -> tuple[str, ...]:
    """Comma-separated names from ``--what``, each in ``valid``, duplicates dropped; :class:`UsageError` otherwise."""
    items = tuple(s.strip() for s in text.split(",") if s.strip())
    if not items:
        raise UsageError(f"--{what} is empty")
    unknown = [s for s in items if s not in valid]
    if unknown:
        raise UsageError(f"unknown {what[:-1]} {', '.join(map(repr, unknown))}; valid: {', '.join(valid)}")
    return tuple(dict.fromkeys(items))


def add_common_options(parser: argparse.ArgumentParser, plugin_help: str) -> None:
    """``--plugin MODULE|PATH.py`` (repeatable) and ``--debug``."""
    parser.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE|PATH.py",
        help=f"{plugin_help}; a module name or a path to a .py file; repeatable",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="log synthbench's debug messages, with the traceback of a plugin that fails to import",
    )


def add_data_dir_option(parser: argparse.ArgumentParser, purpose: str) -> None:
    """``--data-dir PATH``, the folder of data sets read from files (default: ``$SYNTHBENCH_DATA_DIR``)."""
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=os.environ.get(DATA_DIR_ENV) or None,
        help=f"folder of local image files (mnist, fashion_mnist, cifar10), {purpose}; default: ${DATA_DIR_ENV}",
    )


def add_competence_options(parser: argparse.ArgumentParser) -> None:
    """``--competence T`` (the threshold below which an explained model did not learn) and ``--all-models``."""
    parser.add_argument(
        "--competence",
        type=float,
        default=COMPETENCE_THRESHOLD,
        metavar="T",
        help="a model whose competence, (accuracy - chance) / (ceiling - chance) on held-out rows, is "
        "below T did not learn: cells explaining it are left out of the leaderboard, summary and "
        "verdict agreement (default: %(default)s; strictly between 0 and 1)",
    )
    parser.add_argument(
        "--all-models",
        action="store_true",
        help="average in the cells of models below the competence threshold too (marked)",
    )


def competence_threshold(args: argparse.Namespace) -> float:
    """``--competence`` checked; :class:`UsageError` unless strictly between 0 and 1."""
    try:
        return check_threshold(args.competence)
    except ValueError as exc:
        raise UsageError(f"--competence: {exc}") from None


def data_dir(args: argparse.Namespace) -> str | None:
    """The ``--data-dir`` given (or defaulted), as an absolute path; :class:`UsageError` when it is not a folder."""
    if args.data_dir is None:
        return None
    if not args.data_dir.is_dir():
        raise UsageError(f"--data-dir {args.data_dir}: not a folder")
    return str(args.data_dir.resolve())


def setup_logging(debug: bool = False) -> None:
    """Warnings and errors on stderr, one line each; with ``debug``, synthbench's debug messages too."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("synthbench").setLevel(logging.DEBUG if debug else logging.NOTSET)


def load_plugins(items: list[str]) -> tuple[str, ...]:
    """Import every ``--plugin`` item here; the items as worker processes must import them (paths made absolute).

    :class:`UsageError` (one line naming the plugin and its error) for one that cannot be
    imported; the traceback goes to the debug log (``--debug``).
    """
    resolved = []
    for item in items:
        try:
            import_plugin(item)
        except PluginError as exc:
            log.debug("--plugin %s failed to import", item, exc_info=exc.__cause__ or exc)
            where = " (--debug shows where)" if exc.raised and not log.isEnabledFor(logging.DEBUG) else ""
            raise UsageError(f"--plugin: {exc}{where}") from None
        resolved.append(str(Path(item).resolve()) if is_plugin_path(item) else item)
    return tuple(resolved)


def print_error(prog: str, message: object) -> int:
    """Print ``prog: error: message`` on one line of stderr; the exit code of bad input, 2."""
    line = " ".join(part.strip() for part in str(message).splitlines() if part.strip())
    print(f"{prog}: error: {line}", file=sys.stderr)
    return 2
