"""Where the tests find the repository and its sample captures (NRSACK_SAMPLE_PCAPS overrides the
bundled sample-pcaps/, e.g. to run the suites on a copy)."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLES = Path(os.environ.get("NRSACK_SAMPLE_PCAPS", REPO / "sample-pcaps"))
CONFORMANCE = SAMPLES / "conformance"
