"""synthbench: measure how well attribution and feature-selection methods recover known features."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("synthbench")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
