"""The one registry behind every named part of synthbench.

Datasets, model kinds, model presets, attribution functions, methods and scorers are each a
:class:`Registry`: names kept in registration order, an unknown name answered by a
:class:`UnknownName` that lists the valid ones, a second registration under a taken name
refused with a ValueError. Each package keeps its own public verbs (``datasets.make``,
``methods.register_method``, ``scoring.register_scorer``, ...) as thin calls into its registry.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

__all__ = ["Registry", "UnknownName"]

T = TypeVar("T")


class UnknownName(KeyError, ValueError):
    """A name no registry entry has; the message lists the valid names.

    A KeyError (a lookup that failed) and a ValueError (a bad argument), so code written against
    either contract catches it.
    """

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class Registry(Generic[T]):
    """Named entries of one kind, in registration order.

    Parameters
    ----------
    what : what an entry is, for messages (``"method"``, ``"model kind"``)
    """

    def __init__(self, what: str) -> None:
        self.what = what
        self._entries: dict[str, T] = {}

    def add(self, name: str, entry: T) -> T:
        """Register ``entry`` under ``name`` and return it; ValueError when ``name`` is taken."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.what} name must be a non-empty string, got {name!r}")
        if name in self._entries:
            raise ValueError(f"{self.what} {name!r} is already registered")
        self._entries[name] = entry
        return entry

    def remove(self, name: str) -> T:
        """Unregister ``name`` and return its entry (tests and interactive sessions that re-register)."""
        entry = self[name]
        del self._entries[name]
        return entry

    @contextmanager
    def temporarily(self, name: str, entry: T) -> Iterator[T]:
        """Register ``entry`` under ``name`` for the body of a ``with`` block only (tests, notebooks)."""
        self.add(name, entry)
        try:
            yield entry
        finally:
            self._entries.pop(name, None)

    @contextmanager
    def restoring(self) -> Iterator[None]:
        """Undo every registration made in the body of a ``with`` block (a test importing a plugin)."""
        saved = dict(self._entries)
        try:
            yield
        finally:
            self._entries = saved

    def __getitem__(self, name: str) -> T:
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            raise UnknownName(f"unknown {self.what} {name!r}; valid names: {', '.join(self._entries)}") from None

    def names(self) -> list[str]:
        """Every registered name, in registration order."""
        return list(self._entries)

    def items(self) -> list[tuple[str, T]]:
        """``(name, entry)`` pairs in registration order."""
        return list(self._entries.items())

    def values(self) -> list[T]:
        """Every entry, in registration order."""
        return list(self._entries.values())

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.what!r}: {', '.join(self._entries)})"
