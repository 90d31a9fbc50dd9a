"""What machine a run ran on, recorded with the run so a report can say where its seconds come from, and the
versions of the packages installed on it."""

from __future__ import annotations

import os
import platform
from collections.abc import Iterable
from importlib import metadata
from typing import Any

__all__ = ["describe_machine", "usable_cores", "installed_versions"]


def installed_versions(names: Iterable[str]) -> dict[str, str]:
    """The installed version of each distribution in ``names`` (``"absent"`` for one that is not installed)."""
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the OS has one (a container's or a
    scheduler's share), else every core of the machine."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this OS (macOS, Windows)
        return os.cpu_count() or 1


def describe_machine() -> dict[str, Any]:
    """Host, platform, CPU model and cores, memory, GPUs and library versions of this process's machine.

    Returns
    -------
    dict with keys ``host``, ``platform``, ``python``, ``cpu``, ``cores``, ``memory_bytes``
    (``None`` where the OS does not say), ``torch`` and ``gpus`` (CUDA device names, empty without CUDA).
    """
    import torch

    gpus = (
        [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []
    )
    return {
        "host": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_bytes": _memory_bytes(),
        "torch": torch.__version__,
        "gpus": gpus,
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
