"""nrsack: tools for Non-Renegable Selective Acknowledgments (NR-SACK) and Fast SACK."""

__version__ = "0.1.0"
