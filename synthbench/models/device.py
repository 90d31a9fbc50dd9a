"""Where torch computes: the device a training or a method runs on, and the CPU threads it may use.

Every trainer and every method that trains its own network chooses its device here
(:func:`select_device`: ``"auto"`` is CUDA when torch sees a GPU) and runs on one CPU thread
unless told otherwise (:func:`cpu_threads`), so CPU results do not depend on the core count.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

import torch

__all__ = ["select_device", "torch_threads", "cpu_threads", "denormals_flushed"]


def select_device(device: str | torch.device = "auto") -> torch.device:
    """The torch device to train on.

    Parameters
    ----------
    device : ``"auto"`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``,
        or a ``torch.device``.

    Returns
    -------
    torch.device

    Raises
    ------
    ValueError
        For CUDA when torch sees no CUDA device (or not that index), and for any other name.
    """
    if isinstance(device, str) and device == "auto":
        return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"unknown device {device!r}; valid: 'auto', 'cpu', 'cuda', 'cuda:N'") from exc
    if dev.type == "cpu":
        return dev
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"device {device!r} requested but CUDA is not available to torch {torch.__version__} "
                "(CPU-only build or no visible GPU); use 'cpu' or 'auto'"
            )
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"device {device!r} requested but only {torch.cuda.device_count()} CUDA device(s) visible")
        return dev
    raise ValueError(f"unsupported device {device!r}; valid: 'auto', 'cpu', 'cuda', 'cuda:N'")


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the body with ``torch.set_num_threads(n)``, restoring the previous count after.

    ``None`` leaves the setting alone. The setting is process-wide: threads that run torch
    concurrently see it too.
    """
    if n is None:
        yield
        return
    if n < 1:
        raise ValueError(f"thread count must be positive, got {n}")
    previous = torch.get_num_threads()
    if previous == n:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def cpu_threads(device: torch.device, n: int | None = 1) -> AbstractContextManager[None]:
    """:func:`torch_threads` ``(n)`` for work on ``device`` when it is the CPU (None: its setting); on a GPU the
    thread setting is left alone."""
    return torch_threads(n if device.type == "cpu" else None)


@contextmanager
def denormals_flushed() -> Iterator[None]:
    """Run the body with the CPU flushing denormal floats to zero (``torch.set_flush_denormal``), then switch it off.

    A network whose penalty drives weights towards zero (the screened MLP's group lasso) fills Adam's
    moments with denormal numbers, on which the CPU is an order of magnitude slower (torch's fused Adam
    18 times on ``1e-20`` gradients, ``benchmarks/bench_batched_retrain.py``); flushed, a value below
    ``1.2e-38`` becomes 0. The setting belongs to the calling thread (the one torch computes in at one
    thread), and torch offers no way to read it, so it is switched off afterwards (its default); a
    machine without the instruction (not x86 with SSE3) trains as before.
    """
    flushed = torch.set_flush_denormal(True)
    try:
        yield
    finally:
        if flushed:
            torch.set_flush_denormal(False)
