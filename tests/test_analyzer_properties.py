"""Property tests: the figures do not depend on how DATA is bundled, on where the 32-bit TSN / sequence
space wraps, or on duplicated and reordered acks (decisions 1-2: sticky acknowledgement state, the
cumulative ack never moves backwards).

Each example is a small lossy transfer (some TSNs lost once, retransmitted after the last new data),
written as a real pcap with Scapy and read back through the analyzer.
"""

from hypothesis import HealthCheck, given, settings, strategies as st
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.layers.sctp import SCTP, SCTPChunkData, SCTPChunkSACK

from nrsack.analyzer import analyze
from nrsack.generator.pcapfile import PcapWriter
from nrsack.generator.layers import SCTPChunkNRSACK

EPOCH_NS = 1_700_000_000 * 10**9
A, B = "192.0.2.1", "198.51.100.1"
MAX32 = 1 << 32
FIGURES = ["data_bytes", "q_ns", "p_ns", "b_ns", "max_rtxq_sack_bytes", "max_rtxq_nr_bytes", "max_rtxq_whatif_bytes",
           "blocking_intervals", "complete", "retransmissions", "acked_bytes", "sndbuf_bytes", "nr_sack"]
SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def transfers(draw):
    n = draw(st.integers(6, 30))
    sizes = draw(st.lists(st.integers(1, 1200), min_size=n, max_size=n))
    lost = set(draw(st.lists(st.integers(0, n - 1), max_size=n // 3, unique=True)))
    nr = draw(st.booleans())
    return n, sizes, sorted(lost), nr


def schedule(n, sizes, lost, burst=1):
    """[(t_us, 'data', unit index) | (t_us, 'ack', received set)]: `burst` units per ms, an ack 50 ms
    after each arrival, lost units retransmitted once after the last new one."""
    out, received = [], set()
    for i in range(n):
        out.append((1000 * (i // burst), "data", i))
    for k, i in enumerate(lost):
        out.append((1000 * (n + 60 + k), "data", i))
    arrivals = sorted((t + 50_000, i) for t, kind, i in out if kind == "data" and not (i in lost and t < 1000 * n))
    for t, i in arrivals:
        received.add(i)
        out.append((t, "ack", frozenset(received)))
    return sorted(out, key=lambda e: (e[0], e[1] != "data"))


def ranges(units):
    """Sorted unit indices -> [(first, last)] runs."""
    runs = []
    for u in sorted(units):
        if runs and runs[-1][1] == u - 1:
            runs[-1][1] = u
        else:
            runs.append([u, u])
    return [tuple(r) for r in runs]


def ack_state(received):
    cum = -1
    while cum + 1 in received:
        cum += 1
    return cum, ranges(u for u in received if u > cum)


def sctp_frames(n, sizes, lost, nr, tsn0=1, bundle=None, ack_transform=None, burst=1):
    """Frames (t_us, bytes) of the transfer as SCTP. `bundle`: packet sizes (in chunks, cycled) for the
    DATA chunks that leave at one instant; None sends each chunk in a packet of its own."""
    events = schedule(n, sizes, lost, burst)
    if ack_transform:
        events = ack_transform(events)
    frames = []

    def pkt(src, dst, sport, dport, tag, chunks):
        layer = SCTP(sport=sport, dport=dport, tag=tag)
        for c in chunks:
            layer = layer / c
        return bytes(Ether() / IP(src=src, dst=dst) / layer)

    pending = []
    for t, kind, info in events:
        if kind == "data":
            pending.append((t, SCTPChunkData(tsn=(tsn0 + info) % MAX32, data=b"d" * sizes[info], beginning=1, ending=1)))
            continue
        frames.extend(_flush(pending, bundle, lambda cs: pkt(A, B, 5000, 5001, 2, cs)))
        pending = []
        cum, gaps = ack_state(info)
        cum_tsn = (tsn0 + cum) % MAX32
        blocks = [f"{first - cum}:{last - cum}" for first, last in gaps]
        chunk = (SCTPChunkNRSACK(cumul_tsn_ack=cum_tsn, nr_gap_ack_list=blocks) if nr
                 else SCTPChunkSACK(cumul_tsn_ack=cum_tsn, gap_ack_list=blocks))
        frames.append((t, pkt(B, A, 5001, 5000, 1, [chunk])))
    frames.extend(_flush(pending, bundle, lambda cs: pkt(A, B, 5000, 5001, 2, cs)))
    return sorted(frames, key=lambda f: f[0])


def _flush(pending, bundle, build):
    """Chunks sent at one instant go out in packets of the bundle sizes (cycled)."""
    out, i, k = [], 0, 0
    by_time = {}
    for t, chunk in pending:
        by_time.setdefault(t, []).append(chunk)
    for t, chunks in by_time.items():
        i = 0
        while i < len(chunks):
            size = bundle[k % len(bundle)] if bundle else 1
            out.append((t, build(chunks[i:i + size])))
            i, k = i + size, k + 1
    return out


def tcp_frames(n, sizes, lost, nr, isn=1000):
    offsets = [0]
    for s in sizes:
        offsets.append(offsets[-1] + s)
    frames = []
    for t, kind, info in schedule(n, sizes, lost):
        if kind == "data":
            seg = TCP(sport=40000, dport=80, flags="PA", seq=(isn + offsets[info]) % MAX32, ack=1) / (b"d" * sizes[info])
            frames.append((t, bytes(Ether() / IP(src=A, dst=B) / seg)))
        else:
            cum, gaps = ack_state(info)
            sack = [((isn + offsets[f]) % MAX32, (isn + offsets[l + 1]) % MAX32) for f, l in gaps][:3]
            options = [("SAck", tuple(x for edge in sack for x in edge))] if sack else []
            seg = TCP(sport=80, dport=40000, flags="A", seq=1, ack=(isn + offsets[cum + 1]) % MAX32, options=options)
            frames.append((t, bytes(Ether() / IP(src=B, dst=A) / seg)))
    return frames


def write(path, frames):
    with PcapWriter(path, nano=True) as writer:
        for t_us, raw in frames:
            ns = EPOCH_NS + t_us * 1000
            writer.write(ns // 10**9, ns % 10**9, raw)
    return path


def figures(path, sndbuf):
    analysis = analyze(path, sndbuf=sndbuf)
    entry = next(e for e in analysis.entries if e.summary["src"].startswith(A))
    return {k: entry.summary[k] for k in FIGURES}, entry.rtxq


def step_at_times(rtxq):
    """The step function: the value after the last event of each instant."""
    cols = ["rtxq_sack_bytes", "rtxq_nr_bytes", "rtxq_whatif_bytes", "sacked_bytes", "nr_acked_bytes", "blocked", "gap_open"]
    return rtxq.groupby("time_ns", sort=True)[cols].last().reset_index()


@given(transfers(), st.lists(st.integers(1, 4), min_size=1, max_size=4), st.integers(2, 5), st.integers(1000, 20000))
@SETTINGS
def test_bundling_does_not_change_figures(tmp_path_factory, transfer, bundle, burst, sndbuf):
    d = tmp_path_factory.mktemp("bundle")
    n, sizes, lost, nr = transfer
    # `burst` DATA chunks leave at each instant: one per packet, or bundled `bundle` at a time
    alone = figures(write(d / "one.pcap", sctp_frames(n, sizes, lost, nr, burst=burst)), sndbuf)
    bundled = figures(write(d / "many.pcap", sctp_frames(n, sizes, lost, nr, bundle=bundle, burst=burst)), sndbuf)
    assert alone[0] == bundled[0]
    assert step_at_times(alone[1]).equals(step_at_times(bundled[1]))


@given(transfers(), st.integers(1, 3000), st.integers(1000, 20000))
@SETTINGS
def test_tsn_wrap_does_not_change_figures(tmp_path_factory, transfer, before_wrap, sndbuf):
    d = tmp_path_factory.mktemp("wrap")
    n, sizes, lost, nr = transfer
    plain = figures(write(d / "plain.pcap", sctp_frames(n, sizes, lost, nr, tsn0=1)), sndbuf)
    # the initial TSN sits just below 2^32: the TSNs wrap inside the transfer
    wrapped = figures(write(d / "wrap.pcap", sctp_frames(n, sizes, lost, nr, tsn0=MAX32 - (before_wrap % n) - 1)), sndbuf)
    assert plain[0] == wrapped[0]
    cols = [c for c in plain[1].columns if c not in ("flow",)]
    assert plain[1][cols].equals(wrapped[1][cols])


@given(transfers(), st.integers(1, 200_000), st.integers(1000, 20000))
@SETTINGS
def test_tcp_sequence_wrap_does_not_change_figures(tmp_path_factory, transfer, below, sndbuf):
    d = tmp_path_factory.mktemp("tcpwrap")
    n, sizes, lost, _ = transfer
    plain = figures(write(d / "plain.pcap", tcp_frames(n, sizes, lost, False, isn=1000)), sndbuf)
    wrapped = figures(write(d / "wrap.pcap", tcp_frames(n, sizes, lost, False, isn=MAX32 - below)), sndbuf)
    assert plain[0] == wrapped[0]
    cols = [c for c in plain[1].columns if c != "flow"]
    assert plain[1][cols].equals(wrapped[1][cols])


@given(transfers(), st.data(), st.integers(1000, 20000))
@SETTINGS
def test_duplicated_acks_change_nothing(tmp_path_factory, transfer, data, sndbuf):
    d = tmp_path_factory.mktemp("dup")
    n, sizes, lost, nr = transfer

    def duplicate(events):
        acks = [i for i, e in enumerate(events) if e[1] == "ack"]
        picks = set(data.draw(st.lists(st.sampled_from(acks), max_size=5)))
        out = []
        for i, e in enumerate(events):
            out.append(e)
            if i in picks:
                out.append(e)  # the same ack again at the same instant
        return out

    clean = figures(write(d / "clean.pcap", sctp_frames(n, sizes, lost, nr)), sndbuf)
    dup = figures(write(d / "dup.pcap", sctp_frames(n, sizes, lost, nr, ack_transform=duplicate)), sndbuf)
    assert clean[0] == dup[0]
    assert step_at_times(clean[1]).equals(step_at_times(dup[1]))


@given(transfers(), st.data(), st.integers(1000, 20000))
@SETTINGS
def test_reordered_acks_give_the_same_state_after_both(tmp_path_factory, transfer, data, sndbuf):
    """An older ack arriving after a newer one is stale: nothing moves back, and from the later of the
    two on, the step function equals the clean one."""
    d = tmp_path_factory.mktemp("reorder")
    n, sizes, lost, nr = transfer
    events = schedule(n, sizes, lost)
    acks = [i for i, e in enumerate(events) if e[1] == "ack"]
    k = data.draw(st.integers(0, len(acks) - 2))
    first, second = acks[k], acks[k + 1]

    def swap(events):
        out = list(events)
        (t1, _, s1), (t2, _, s2) = out[first], out[second]
        out[first], out[second] = (t1, "ack", s2), (t2, "ack", s1)
        return out

    clean = figures(write(d / "clean.pcap", sctp_frames(n, sizes, lost, nr)), sndbuf)
    swapped = figures(write(d / "swap.pcap", sctp_frames(n, sizes, lost, nr, ack_transform=swap)), sndbuf)
    later = events[second][0] * 1000 + EPOCH_NS
    a, b = step_at_times(clean[1]), step_at_times(swapped[1])
    # gap_open follows the last ack whose cum is >= the highest (decision 3): an older ack with the
    # same cum still sets it, so after the swap only the queue figures must agree
    queue = [c for c in a.columns if c != "gap_open"]
    assert a.loc[a["time_ns"] >= later, queue].reset_index(drop=True).equals(
        b.loc[b["time_ns"] >= later, queue].reset_index(drop=True))
    assert a[a["time_ns"] < events[first][0] * 1000 + EPOCH_NS].reset_index(drop=True).equals(
        b[b["time_ns"] < events[first][0] * 1000 + EPOCH_NS].reset_index(drop=True))
    # the RtxQ never grows on an ack, stale or not
    acks_swapped = swapped[1][swapped[1]["event"] == "ack"]
    prev = swapped[1]["rtxq_sack_bytes"].shift(1)
    assert (acks_swapped["rtxq_sack_bytes"] <= prev[acks_swapped.index]).all()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=40), st.integers(0, 2))
def test_distinct_is_numpys_unique_on_both_sides_of_its_threshold(values, repeat):
    """flows.distinct sorts short arrays and leaves long ones to np.unique (which imports numpy.ma at its first
    call): both give np.unique's answer, dtype included."""
    import numpy as np

    from nrsack.analyzer.state import flows as F

    short = np.array(values * (repeat + 1), np.uint64)
    long = np.resize(short, F.SORT_UNIQUE_MAX + 1) if len(short) else short
    for array in (short, long, short.astype(np.int64) >> 1):
        got = F.distinct(array)
        assert got.dtype == array.dtype and np.array_equal(got, np.unique(array))
