"""`nrsack lab run --stack usrsctp-udp`: usrsctp multi-homed with CMT over 2 emulated paths (root).
AF_CONN cannot multi-home (docs/lab.md), so the two ends run in network namespaces over UDP
encapsulation; the captures are SCTP in UDP 9899, which tshark and the analyzer read."""

import pytest

from nrsack.analyzer import analyze
from support import tshark
from support.lab import root_lab_run

pytestmark = [pytest.mark.root, pytest.mark.slow]

ARGS = ["--ack", "nrsack", "--no-drain", "--sndbuf", "65536", "--loss", "0.01",
        "--delay", "10,20", "--bandwidth", "20,10", "--bytes", "1000000", "--seed", "1", "--timeout", "60"]


@pytest.fixture(scope="module")
def cmt_run(tmp_path_factory):
    return root_lab_run(tmp_path_factory, "usrsctp-udp", ARGS)


def chunks(pcap, plugin, fields):
    proc = tshark.run_tshark(["-T", "fields", *sum((["-e", f] for f in fields), [])], plugin, pcap=pcap)
    return [line.split("\t") for line in proc.stdout.splitlines() if line]


def test_both_paths_carry_data(cmt_run, nrsack_c_plugin):
    out, truth = cmt_run
    assert truth["complete"] and truth["cmt"] and truth["counters"]["bytes_sent"] == 1_000_000
    rows = chunks(out / "sender.pcap", nrsack_c_plugin, ["ip.src", "ip.dst", "sctp.chunk_type"])
    data = {}
    for src, dst, types in rows:
        if "0" in types.split(","):
            data[(src, dst)] = data.get((src, dst), 0) + 1
    assert set(data) == {("10.0.0.1", "10.0.0.2"), ("10.0.1.1", "10.0.1.2")}
    assert min(data.values()) > 100, data
    assert all(p["lost_forward"] >= 0 for p in truth["counters"]["paths"]) and truth["counters"]["lost_forward"] > 0


def test_nr_sack_sent_and_tshark_marks_only_stale_acks(cmt_run, nrsack_c_plugin):
    """No malformed frame at the sender; the plugin's only error marks there are NR-03 ("NR-acked
    earlier, not acked now") on stale acks: with CMT the receiver's NR-SACKs return on both paths, so an ack sent
    earlier on the slower path arrives after a later one on the faster (acking less than it). Read in capture order that looks like reneging; it is reordering between paths."""
    out, _ = cmt_run
    malformed = {side: set(tshark.run_tshark(["-Y", "_ws.malformed", "-T", "fields", "-e", "frame.number"],
                                             nrsack_c_plugin, pcap=out / f"{side}.pcap").stdout.split())
                 for side in ("sender", "receiver")}
    assert malformed["sender"] == set()
    # The receiver's side: the plugin marks GEN-01 ("TSN more than 2^20 above the oldest unacked") on
    # a DATA chunk whose TSN is below one it has already seen, which CMT does (the first DATA went on
    # the slower path and arrived after later TSNs on the faster): a plugin reading, not a bad frame
    late, highest = set(), 0
    for frame, tsns in chunks(out / "receiver.pcap", nrsack_c_plugin, ["frame.number", "sctp.data_tsn_raw"]):
        for tsn in (int(x) for x in tsns.split(",") if x):
            if tsn < highest:
                late.add(frame)
            highest = max(highest, tsn)
    assert malformed["receiver"] <= late, malformed["receiver"] - late
    acks = chunks(out / "sender.pcap", nrsack_c_plugin,
                  ["frame.number", "sctp.nr_sack_cumulative_tsn_ack", "sctp.nr_sack_nr_gap_block_start_tsn",
                   "sctp.nr_sack_nr_gap_block_end_tsn"])
    acks = [(row + [""] * 4)[:4] for row in acks if len(row) > 1 and row[1]]
    assert len(acks) > 100  # NR-SACK chunks (type 0x10) carry the acks
    # stale: acking a strict subset of what the newest ack before it acked (an older ack, sent before
    # it: with nothing reneged, each ack acks all that earlier ones did); TSNs counted from the first
    stale, newest, base = set(), set(), int(acks[0][1])
    for frame, cum, starts, ends in acks:
        acked = set(range(base, int(cum) + 1)) | {
            tsn for a, b in zip(starts.split(","), ends.split(",")) if a for tsn in range(int(a), int(b) + 1)}
        if acked < newest:
            stale.add(frame)
        else:
            newest = acked
    errors = chunks(out / "sender.pcap", nrsack_c_plugin, ["frame.number", "_ws.expert.message"])
    marked = {frame for frame, message in errors if "NR-03" in message}
    proc = tshark.run_tshark(["-Y", "_ws.expert.severity >= 8388608", "-T", "fields", "-e", "frame.number"],
                             nrsack_c_plugin, pcap=out / "sender.pcap")
    assert set(proc.stdout.split()) <= marked and marked <= stale, (marked - stale)


def test_analyzer_shows_the_cmt_association_with_its_paths(cmt_run):
    out, truth = cmt_run
    (entry,) = [e for e in analyze(out / "sender.pcap").entries if e.summary["src"] == "10.0.0.1:5001"]
    s = entry.summary
    assert s["protocol"] == "sctp" and s["nr_sack"] and s["complete"] and s["data_bytes"] == 1_000_000
    assert sorted(p.summary["src"] for p in entry.paths) == ["10.0.0.1:5001", "10.0.1.1:5001"]
    assert all(p.summary["data_bytes"] > 100_000 for p in entry.paths)
    # q: from the first write into the established association to all acked, against first DATA to
    # the last ack in the capture
    assert s["q_s"] == pytest.approx(truth["q_s"], abs=0.01)
    # without --sndbuf (metrics.md, Data over several paths): a path alone does not see the buffer the
    # paths share; the association reads it from its own waits, as the stack counts it (payload, whole
    # messages of 1000 bytes: a ceiling at most SO_SNDBUF), or says never or why it cannot tell. Which
    # of them a run gives depends on how often the buffer filled; what each says, the truth holds to.
    for path in entry.paths:
        assert path.summary["sndbuf_verdict"] == "cannot tell" and path.summary["b_over_q"] is None
        assert path.summary["sndbuf_reason"].startswith("a path of data over several paths")
    if s["sndbuf_verdict"] == "held back":
        assert 65536 - 1000 < s["sndbuf_bytes"] <= 65536, s["sndbuf_reason"]
        assert s["b_over_q"] == pytest.approx(truth["b_over_q"], abs=0.1), (s["b_over_q"], truth)
        assert s["p_over_q"] == pytest.approx(truth["p_over_q"], abs=0.1), (s["p_over_q"], truth)
    elif s["sndbuf_verdict"] == "never":
        assert s["b_over_q"] == 0 and truth["b_over_q"] <= 0.1, truth
    else:
        assert s["b_over_q"] is s["sndbuf_bytes"] is None and s["sndbuf_reason"], s
    # given B (the socket's SO_SNDBUF, which usrsctp counts in payload bytes), the analyzer's b and p
    # meet the truth's under the same names. Not the largest RtxQ: a CMT sender held back by its
    # paths' windows may never fill the buffer with sent data (one run peaked at 47,000 of 65,536)
    given = analyze(out / "sender.pcap", sndbuf=truth["sndbuf_bytes"])
    (s,) = [e.summary for e in given.entries if e.summary["src"] == "10.0.0.1:5001"]
    # the capture sees the buffer full of sent data only; the writer also waits on unsent data
    assert 0 <= s["b_over_q"] <= truth["app_blocked_over_q"] + 0.05
    # the truth's b and p (the waits on a buffer full of sent data, and those with a gap open),
    # split by the TSNs and acks on the sender's veth
    assert s["b_over_q"] == pytest.approx(truth["b_over_q"], abs=0.05), (s["b_over_q"], truth)
    assert s["p_over_q"] == pytest.approx(truth["p_over_q"], abs=0.05), (s["p_over_q"], truth)
    assert 0 <= truth["p_s"] <= truth["b_s"] <= truth["app_blocked_s"]
