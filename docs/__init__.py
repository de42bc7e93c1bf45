"""The contract documents, shipped in the package as nrsack.docs so that `nrsack docs NAME` works from
an installed wheel (no code here)."""
