"""Damaged input never crashes the checker: captures with bytes flipped inside their packets or cut
short anywhere give findings (GEN-01 and friends) or a CaptureError, never another exception."""

import random

import pandas as pd
import pytest

from nrsack.analyzer import CaptureError, check
from nrsack.analyzer.rules import REGISTRY
from support.paths import CONFORMANCE as VECTORS

SOURCES = ["nr03-revocation.pcap", "fs04-sack-off-fsack-path.pcap", "tn03-revocation-inside-the-span.pcap",
           "mn05-malformed-nr-blocks.pcap", "gen01-legal-long-nr-sack.pcap"]
PCAP_HEADER = 24


def mutations(data, seed):
    rng = random.Random(seed)
    flipped = bytearray(data)
    for _ in range(rng.randint(1, 12)):
        flipped[rng.randrange(PCAP_HEADER, len(data))] = rng.randrange(256)
    yield bytes(flipped)
    yield data[:rng.randrange(PCAP_HEADER, len(data))]


@pytest.mark.parametrize("name", SOURCES)
def test_damaged_captures_give_findings_or_a_capture_error(name, tmp_path):
    data = (VECTORS / name).read_bytes()
    outcomes = {"findings": 0, "unusable": 0}
    for seed in range(20):
        for i, damaged in enumerate(mutations(data, seed)):
            path = tmp_path / f"{seed}-{i}.pcap"
            path.write_bytes(damaged)
            try:
                frame = check(path)
            except CaptureError:
                outcomes["unusable"] += 1
                continue
            assert isinstance(frame, pd.DataFrame)
            assert set(frame.rule) <= set(REGISTRY)
            assert all(len(frames) == len(set(frames)) > 0 for frames in frame.frames)
            outcomes["findings"] += 1
    assert outcomes["findings"] > 0
