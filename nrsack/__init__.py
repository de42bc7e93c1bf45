"""nrsack: tools for Non-Renegable Selective Acknowledgments (NR-SACK) and Fast SACK."""


def __getattr__(name):
    # looked up on first use: importlib.metadata costs a command's start-up more than the analysis of a
    # short capture, and only `wireshark install` and `--version` ask
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("nrsack")  # from VERSION, the one place it is written
        except PackageNotFoundError:  # a source tree on sys.path, not installed
            return "unknown"
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
