"""nrsack: tools for Non-Renegable Selective Acknowledgments (NR-SACK) and Fast SACK."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("nrsack")  # from VERSION, the one place it is written
except PackageNotFoundError:  # a source tree on sys.path, not installed
    __version__ = "unknown"
