"""The ladder's coverage test on TCP blocks across the 32-bit sequence wrap (the sample captures
do not wrap): a SACK / NR-SACK block's wire edges are placed next to the unwrapped ack."""

import pandas as pd

from nrsack.dashboard.ladder import _covers

ACK = (1 << 32) + 0xFFFFFFF0  # unwrapped; on the wire 0xFFFFFFF0, 16 bytes below the wrap


def blocks(kind, lo, hi):
    return pd.DataFrame({"kind": [kind], "lo": [lo], "hi": [hi]})


def test_tcp_block_past_the_wrap_covers_the_data_it_names():
    after_wrap = blocks("tcp_nr", 0x10, 0x20)  # wire edges just past the wrap
    assert _covers("tcp", ACK, after_wrap, (2 << 32) + 0x10, (2 << 32) + 0x20)
    assert _covers("tcp", ACK, blocks("sack", 0x10, 0x20), (2 << 32) + 0x14, (2 << 32) + 0x18)
    assert not _covers("tcp", ACK, after_wrap, (2 << 32) + 0x08, (2 << 32) + 0x18)
    assert not _covers("tcp", ACK, after_wrap, 0x10, 0x20)  # the same wire values one wrap earlier


def test_tcp_block_below_the_wrap_stays_below_it():
    before_wrap = blocks("sack", 0xFFFFFFF8, 0xFFFFFFFC)
    assert _covers("tcp", ACK, before_wrap, (1 << 32) + 0xFFFFFFF8, (1 << 32) + 0xFFFFFFFC)
    assert not _covers("tcp", ACK, before_wrap, (2 << 32) + 0xFFFFFFF8, (2 << 32) + 0xFFFFFFFC)
