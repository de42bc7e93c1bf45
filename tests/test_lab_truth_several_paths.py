"""The lab's truth over several paths, from hand-made inputs (no namespaces, no real time): what counts
as a buffer full of *sent* data (docs/metrics.md: b and p) when the stack hands data to a path's queue
(MPTCP subflows) or the capture misses a frame and acks cross on two paths (usrsctp CMT)."""

import pandas as pd
import pytest

from nrsack.lab.truth import _connection_samples, sent_full_and_gaps
from nrsack.lab.config import LabConfig
from support import pcaps

SENDER, RECEIVER, TAG = "10.0.0.1", "10.0.0.2", 7


def _data(t, tsn):
    return pcaps.sctp_packet(t, SENDER, RECEIVER, TAG, [pcaps.data_chunk(tsn)], udp_port=9899)


def _ack(t, cum, nr_gaps=()):
    return pcaps.sctp_packet(t, RECEIVER, SENDER, TAG, [pcaps.nr_sack_chunk(cum, nr_gaps=nr_gaps)], udp_port=9899)


def test_a_frame_the_capture_missed_does_not_shift_the_chunks_after_it(tmp_path):
    """Chunk k is TSN k - 1 (one a write): it had left once it or a later TSN was seen."""
    # TSN 101 never reached the capture; 100, 102 and 103 did, at 1, 3 and 4 s (times in us below)
    path = pcaps.write(tmp_path / "s.pcap", [_data(1.0, 100), _data(3.0, 102), _data(4.0, 103), _ack(9.0, 103)])
    waits = pd.DataFrame({"start_s": [0.5, 2.0], "end_s": [2.5, 5.0], "written_bytes": [2000, 4000]})
    unsent, sent_full, _ = sent_full_and_gaps(waits, 1000, path, 0, 10_000_000)
    # wait 1: its 2 chunks (TSNs 100, 101) had all left at 3 s, after the wait; wait 2: its 4 at 4 s
    assert list(unsent[1]) == [2_500_000, 4_000_000] and list(sent_full[0]) == [2_500_000, 4_000_000]


def test_an_ack_older_than_one_received_opens_no_gap(tmp_path):
    """Over two paths an ack sent earlier can arrive later; the stack drops it (its cum TSN is below)."""
    path = pcaps.write(tmp_path / "s.pcap", [
        _data(0.1, 10), _data(0.2, 11), _data(0.3, 12),
        _ack(1.0, 10, nr_gaps=[(2, 2)]),  # 12 NR-acked above 11: a gap
        _ack(2.0, 12),                    # all acked: no gap
        _ack(3.0, 10, nr_gaps=[(2, 2)]),  # the first ack again, late over the slower path: dropped
    ])
    waits = pd.DataFrame({"start_s": [0.0], "end_s": [4.0], "written_bytes": [3000]})
    _, _, (starts, ends) = sent_full_and_gaps(waits, 1000, path, 0, 4_000_000)
    assert list(zip(starts, ends)) == [(1_000_000, 2_000_000)]


@pytest.mark.parametrize("subflow_notsent, sent_unacked", [(0, 30_000), (20_000, 10_000)])
def test_mptcp_data_a_subflow_holds_unsent_is_not_sent(tmp_path, subflow_notsent, sent_unacked):
    """MPTCP_INFO counts data handed to a subflow as sent; the wire has not seen what the subflow holds."""
    # one sample: 30 KB written, none acked, all handed to the subflows (MPTCP_INFO bytes_sent)
    m = {"sent": 30_000, "samples": [[1.0, 1, 30_000, 0, 0, 0, 30_000, 0, 65536, 40_000, 30_000]],
         "subflow_samples": [[1.0, 0, 10, 0, 0, 0, 1448, 10, subflow_notsent, 1]]}
    times, unsent, _, sent, mss = _connection_samples(LabConfig(stack="linux-mptcp", more_paths=((0.01, 45.0, 100.0),)), m, tmp_path)
    # a subflow's segment carries snd_mss less the DSS option (lab/truth.py MPTCP_DSS_MAX_BYTES)
    assert list(unsent) == [subflow_notsent] and list(sent) == [sent_unacked] and mss == 1448 - 28
    assert pd.read_csv(tmp_path / "truth_mptcp_info.csv").subflow_notsent_bytes.tolist() == [subflow_notsent]


@pytest.mark.parametrize("stack, b_over_q", [("linux-mptcp", 0.0), ("linux-tcp", 1.0)])
def test_one_full_mptcp_segment_unsent_is_unsent_data(stack, b_over_q):
    """A wait with 1424 bytes unsent: under MPTCP a full segment (snd_mss 1448 less a 24-byte DSS
    option on the lab's captures), so the wait is on unsent data; under TCP less than a segment (a
    write waiting to fill one), so the buffer counts as full of sent data."""
    from nrsack.lab.truth import linux_b_p_over_q

    m = {"start": 0.0, "done": 1.0, "sent": 30_000, "waits": [[0.0, 1.0]]}
    if stack == "linux-mptcp":  # all 30 KB handed to the one subflow, which holds 1424 bytes unsent
        m["samples"] = [[t, 0, 30_000, 0, 0, 0, 30_000, 0, 65536, 40_000, 30_000] for t in (0.0, 0.5)]
        m["subflow_samples"] = [[t, 0, 20, 0, 0, 0, 1448, 20, 1424, 1] for t in (0.0, 0.5)]
    else:
        m["samples"] = [[t, 20, 0, 0, 0, 1448, 20, 1424, 0, 65536, 40_000, 30_000] for t in (0.0, 0.5)]
    b, p = linux_b_p_over_q(stack, m)
    assert b == pytest.approx(b_over_q) and p == 0.0


def test_sampler_coverage_counts_only_the_gaps_nobody_sampled():
    """1 ms samples over [0, 0.1] s cover all of it; a 20 ms hole, and 10 ms with no sample after the
    start, are time nobody looked (gaps of up to SAMPLER_GAP_S are the sampler's own period)."""
    from nrsack.lab.truth import SAMPLER_GAP_S, sampler_coverage

    steady = [i / 1000 for i in range(101)]
    assert sampler_coverage(steady, 0.0, 0.1) == pytest.approx(1.0)
    holed = [t for t in steady if not 0.04 < t < 0.06]  # 0.04 -> 0.06: one 20 ms gap
    assert sampler_coverage(holed, 0.0, 0.1) == pytest.approx(0.8)
    late = [t for t in steady if t >= 0.01]
    assert sampler_coverage(late, 0.0, 0.1) == pytest.approx(0.9)
    assert sampler_coverage([0.0, SAMPLER_GAP_S, 2 * SAMPLER_GAP_S], 0.0, 2 * SAMPLER_GAP_S) == pytest.approx(1.0)
    assert sampler_coverage([], 0.0, 0.1) == 0.0 and sampler_coverage(steady, 0.1, 0.1) is None
