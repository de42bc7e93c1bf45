"""The compiled reader: every link type and encapsulation of wire-formats.md section 5, pcap (micro and
nano) and pcapng with several interfaces, snaplen-truncated frames, and the decoded events.

Captures are built with Scapy in support/frames.py and read back through libpcap by the analyzer.
"""

import subprocess

import numpy as np
import pytest
from scapy.utils import RawPcapNgWriter

from nrsack.analyzer import analyze
from nrsack.analyzer.read import events as E
from nrsack.analyzer.rules.checker import check
from nrsack.generator.pcapfile import PcapWriter
from support import pcaps
from support.frames import EPOCH, LINKS, TSN0, ip_packets, sctp_packets, write_pcap
from support.lab import lab_run

EVENT_COLUMNS = ["frame", "flow", "side", "protocol", "kind", "src", "dst", "data", "ack", "tsn", "cum_ack", "seq",
                 "tcp_ack", "length", "stream", "ssn", "unordered", "window", "vtag", "dsn", "data_ack", "blocks",
                 "seq64", "ack64", "flags"]


def comparable_events(analysis):
    frame = analysis.events[EVENT_COLUMNS].copy()
    for col in ("flow", "protocol", "kind", "src", "dst"):
        frame[col] = frame[col].astype(str)
    return frame.reset_index(drop=True)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    path = tmp_path_factory.mktemp("reader") / "ethernet.pcap"
    return analyze(write_pcap(path, [LINKS["ethernet"][1](p) for p in ip_packets()], 1))


def test_sctp_events_decoded(baseline):
    ev = baseline.events
    sctp = ev[ev["protocol"] == "sctp"]
    data = sctp[sctp["kind"] == "DATA"]
    assert list(data["tsn"]) == [0xFFFFFFFE, 0xFFFFFFFF, 0, 1]
    assert list(data["frame"]) == [5, 5, 5, 5]  # bundled: one packet, four events in chunk order
    assert list(data["length"]) == [100, 200, 300, 400]
    assert list(data["unordered"]) == [False, False, False, True]
    assert list(data["ssn"]) == [0, 1, 2, 3] and set(data["stream"]) == {1}
    # TSNs unwrapped to 64 bit once: consecutive across the wrap
    assert list(np.diff(data["seq64"].to_numpy(dtype=np.int64))) == [1, 1, 1]
    blocks = baseline.blocks
    first_nr = sctp[sctp["kind"] == "NR-SACK"].index[0]
    mine = blocks[blocks["event"] == first_nr]
    assert [(k, lo, hi) for k, lo, hi in zip(mine["kind"].astype(str), mine["lo"], mine["hi"])] == [
        ("r", 3, 3), ("nr", 2, 2), ("dup", TSN0, TSN0)]
    init = sctp[sctp["kind"] == "INIT"].iloc[0]
    assert init["flags"] & E.EXT_NRSACK and init["flags"] & E.EXT_FSACK
    flows = baseline.flows
    assert flows.loc[0, "addresses_0"] == "192.0.2.1 192.0.2.2" and bool(flows.loc[0, "nr_sack_negotiated"])
    fsack = sctp[sctp["kind"].astype(str).str.startswith("FSACK")]
    assert list(fsack["kind"].astype(str)) == ["FSACK-INIT", "FSACK-ACK", "FSACK-COMPLETE"]
    assert list(fsack["fsack_timestamp"][:2]) == [1234, 1234]
    addr = blocks[(blocks["event"] == fsack.index[2]) & (blocks["kind"] == "address")]
    assert E.block_address(addr["lo"].iloc[0], addr["hi"].iloc[0]) == "198.51.100.9"


def test_sctp_figures_across_tsn_wrap(baseline):
    entry = next(e for e in baseline.entries if e.summary["protocol"] == "sctp")
    first_ack = entry.rtxq[entry.rtxq["event"] == "ack"].iloc[0]
    # 1000 bytes sent; cum acks 100; NR-acked TSN 0 (300); SACKed TSNs 0 and 1 (700)
    assert first_ack["rtxq_sack_bytes"] == 900
    assert first_ack["nr_acked_bytes"] == 300 and first_ack["rtxq_nr_bytes"] == 600
    assert first_ack["sacked_bytes"] == 700 and first_ack["rtxq_whatif_bytes"] == 200
    assert first_ack["freed_bytes"] == 300 and bool(first_ack["gap_open"])
    assert entry.summary["complete"] and entry.summary["data_bytes"] == 1000
    assert entry.summary["nr_sack"] and entry.summary["src"] == "192.0.2.1:5000"


def test_tcp_events_and_figures_across_seq_wrap(baseline):
    entry = next(e for e in baseline.entries if e.summary["protocol"] == "tcp" and e.summary["src"].endswith(":40000"))
    acks = entry.rtxq[entry.rtxq["event"] == "ack"]
    sacking = acks[acks["sacked_bytes"] > 0].iloc[0]
    assert sacking["rtxq_sack_bytes"] == 300            # 400 sent, 100 cum-acked
    assert sacking["sacked_bytes"] == 200               # SACK 201-301 plus NR 301-401
    assert sacking["nr_acked_bytes"] == 100 and sacking["rtxq_nr_bytes"] == 200
    assert entry.summary["retransmissions"] == 1 and entry.summary["complete"]
    assert entry.summary["nr_sack"] and entry.summary["data_bytes"] == 400
    assert entry.summary["vantage"] == "middle"         # 1 ms between every frame: no side is near
    ev = baseline.events
    data = ev[(ev["protocol"] == "tcp") & ev["data"] & (ev["src"].astype(str).str.endswith(":40000"))]
    seq64 = data["seq64"].to_numpy(dtype=np.int64)
    assert list(np.diff(seq64)) == [100, 100, 100, -200]  # unwrapped across 2^32; the retransmission
    acks = ev[(ev["protocol"] == "tcp") & ev["src"].astype(str).str.endswith(":80") & ev["ack64"].notna()]
    assert list(acks["ack64"].to_numpy(dtype=np.int64)[-2:] - seq64[0]) == [100, 400]


def test_mptcp_dss_and_nr_blocks(baseline):
    ev = baseline.events
    dss = ev[ev["dsn"].notna()]
    assert list(dss["dsn"]) == [14001] and list(dss["dss_length"]) == [100]
    acked = ev[ev["data_ack"].notna() & (ev["frame"] == dss["frame"].iloc[0] + 1)]
    blocks = baseline.blocks
    nr = blocks[(blocks["event"] == acked.index[0]) & (blocks["kind"] == "mptcp_nr")]
    assert (int(acked["data_ack"].iloc[0]) + int(nr["lo"].iloc[0]), int(acked["data_ack"].iloc[0]) + int(nr["hi"].iloc[0])) == (19601, 21001)


@pytest.mark.parametrize("link", sorted(LINKS))
@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_link_types_give_the_same_events(tmp_path, baseline, link, v6):
    linktype, build = LINKS[link]
    analysis = analyze(write_pcap(tmp_path / f"{link}.pcap", [build(p) for p in ip_packets(v6)], linktype))
    got = comparable_events(analysis)
    want = comparable_events(baseline)
    if v6:
        # the same transfer between IPv6 addresses: everything but the addresses agrees
        got, want = got.drop(columns=["src", "dst", "flags"]), want.drop(columns=["src", "dst", "flags"])
        assert analysis.events["src"].astype(str).str.startswith("[2001:db8::").all()
    assert got.equals(want), got.compare(want)
    assert analysis.capture.findings == []


def test_sctp_over_udp_9899(tmp_path, baseline):
    frames = [LINKS["ethernet"][1](p) for p in ip_packets(udp=True)]
    analysis = analyze(write_pcap(tmp_path / "udp.pcap", frames, 1))
    sctp = analysis.events[analysis.events["protocol"] == "sctp"]
    assert (sctp["flags"] & E.SCTP_UDP).all() and len(sctp) == (baseline.events["protocol"] == "sctp").sum()
    assert comparable_events(analysis).drop(columns="flags").equals(comparable_events(baseline).drop(columns="flags"))


def test_nanosecond_pcap_keeps_nanoseconds(tmp_path):
    frames = [LINKS["ethernet"][1](p) for p in ip_packets()]
    micro = analyze(write_pcap(tmp_path / "us.pcap", frames, 1))
    nano = analyze(write_pcap(tmp_path / "ns.pcap", frames, 1, nano=True))
    ns = nano.capture.ev["time_ns"] - EPOCH * 1_000_000_000
    us = micro.capture.ev["time_ns"] - EPOCH * 1_000_000_000
    assert (ns % 1000 == 123).all() and (us % 1000 == 0).all()
    assert ((ns - us) == 123).all()


def test_pcapng_with_several_interfaces(tmp_path, baseline):
    path = tmp_path / "multi.pcapng"
    with RawPcapNgWriter(str(path)) as writer:
        writer.write_header(None)
        for i, p in enumerate(ip_packets()):
            # odd frames seen on a second interface (same link type, as libpcap requires)
            writer._write_packet(LINKS["ethernet"][1](p), linktype=1, sec=EPOCH + i / 1000, ifname=b"eth%d" % (i % 2))
    analysis = analyze(path)
    assert comparable_events(analysis).equals(comparable_events(baseline))


def test_snaplen_keeps_header_lengths(tmp_path, baseline):
    # 96 bytes keep every header here but cut the payloads: lengths must come from the headers
    frames = [LINKS["ethernet"][1](p) for p in ip_packets()]
    analysis = analyze(write_pcap(tmp_path / "snap.pcap", frames, 1, snaplen=96))
    ev, base = analysis.events, baseline.events
    data = ev[(ev["kind"] == "DATA")]
    # the bundle lost its later chunks' headers to the snaplen: the first one is still exact
    assert data["length"].iloc[0] == 100
    tcp_data = ev[(ev["protocol"] == "tcp") & ev["data"]]
    assert list(tcp_data["length"]) == list(base[(base["protocol"] == "tcp") & base["data"]]["length"])
    frames_cut = {f for f, _ in analysis.capture.findings}
    assert all(1 <= f <= len(frames) for f in frames_cut)


# ---- link types with no Ethernet or IP framing of their own: NFLOG (239) and raw SCTP (248) ----

@pytest.mark.parametrize("big_endian", [False, True], ids=["little-endian", "big-endian"])
@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_nflog_gives_the_same_events(tmp_path, baseline, big_endian, v6):
    frames = [pcaps.nflog_frame(p, big_endian) for p in ip_packets(v6)]
    analysis = analyze(write_pcap(tmp_path / "nflog.pcap", frames, pcaps.LINKTYPE_NFLOG))
    got, want = comparable_events(analysis), comparable_events(baseline)
    if v6:
        got, want = got.drop(columns=["src", "dst", "flags"]), want.drop(columns=["src", "dst", "flags"])
    assert got.equals(want), got.compare(want)
    assert analysis.capture.findings == [] and analysis.capture.linktype == pcaps.LINKTYPE_NFLOG


def test_nflog_payload_longer_than_the_frame_is_a_finding(tmp_path):
    frame = bytearray(pcaps.nflog_frame(ip_packets()[0]))
    frame[-len(ip_packets()[0]) - 4] += 40  # the payload TLV's length (little-endian) claims 40 bytes more
    analysis = analyze(write_pcap(tmp_path / "long.pcap", [bytes(frame)] + [pcaps.nflog_frame(p) for p in ip_packets()[1:]],
                                  pcaps.LINKTYPE_NFLOG))
    assert [(f, r.split(" ")[0]) for f, r in analysis.capture.findings] == [(1, "NFLOG")]


def raw_sctp_frames():
    return [bytes(transport) for _, transport in sctp_packets("192.0.2.1", "198.51.100.1")]


def test_raw_sctp_gives_the_same_sctp_events_without_addresses(tmp_path, baseline):
    analysis = analyze(write_pcap(tmp_path / "sctp.pcap", raw_sctp_frames(), pcaps.LINKTYPE_SCTP))
    want = comparable_events(baseline)
    want = want[want["protocol"] == "sctp"].reset_index(drop=True)
    got = comparable_events(analysis)
    assert set(got["src"]) == {"0.0.0.0:5000", "0.0.0.0:5001"} and set(got["dst"]) == set(got["src"])
    assert got.drop(columns=["src", "dst"]).equals(want.drop(columns=["src", "dst"]))
    assert list(analysis.summary["data_bytes"]) == [1000] and bool(analysis.summary["complete"].iloc[0])


def test_check_reads_nflog_and_raw_sctp_as_ethernet(tmp_path):
    ethernet = write_pcap(tmp_path / "eth.pcap", [LINKS["ethernet"][1](p) for p in ip_packets()], 1)
    nflog = write_pcap(tmp_path / "nflog.pcap", [pcaps.nflog_frame(p) for p in ip_packets()], pcaps.LINKTYPE_NFLOG)
    sctp = write_pcap(tmp_path / "sctp.pcap", raw_sctp_frames(), pcaps.LINKTYPE_SCTP)
    found = {name: [(f["rule"], list(f["frames"])) for _, f in check(path).iterrows()]
             for name, path in (("eth", ethernet), ("nflog", nflog), ("sctp", sctp))}
    assert found["eth"] and found["eth"] == found["nflog"] == found["sctp"]  # the SCTP frames come first


def test_pcapng_interfaces_of_ethernet_nflog_and_raw_sctp(tmp_path, baseline):
    path = tmp_path / "mixed.pcapng"
    sctp_count = len(raw_sctp_frames())
    with RawPcapNgWriter(str(path)) as writer:
        writer.write_header(None)
        for i, p in enumerate(ip_packets()):
            if i < sctp_count:  # the association as raw SCTP on one interface, the rest alternating
                frame, linktype = raw_sctp_frames()[i], pcaps.LINKTYPE_SCTP
            elif i % 2:
                frame, linktype = pcaps.nflog_frame(p), pcaps.LINKTYPE_NFLOG
            else:
                frame, linktype = LINKS["ethernet"][1](p), 1
            writer._write_packet(frame, linktype=linktype, sec=EPOCH + i / 1000, ifname=b"if%d" % linktype)
    got, want = comparable_events(analyze(path)), comparable_events(baseline)
    sctp = got["protocol"] == "sctp"
    assert set(got["src"][sctp]) == {"0.0.0.0:5000", "0.0.0.0:5001"}
    assert got[~sctp].equals(want[~sctp]) and got.drop(columns=["src", "dst"]).equals(want.drop(columns=["src", "dst"]))


def test_usrsctp_lab_run_through_text2pcap_as_raw_sctp(tmp_path):
    """A real usrsctp AF_CONN transfer (the lab), its packets printed as usrsctp_dumppacket() does and
    turned into a LINKTYPE_SCTP capture by text2pcap: the same figures and findings as the lab's own
    Ethernet capture, only the addresses unknown."""
    lab_run(tmp_path / "lab", "--ack", "nrsack", "--sndbuf", "8192", "--loss", "0.02", "--delay", "5",
            "--bytes", "200000", "--seed", "7")
    ethernet = tmp_path / "lab" / "sender.pcap"
    dump = pcaps.usrsctp_dump(ethernet, tmp_path / "usrsctp.txt")
    raw = tmp_path / "usrsctp.pcap"
    subprocess.run(["text2pcap", "-q", "-D", "-l", str(pcaps.LINKTYPE_SCTP), "-t", "%H:%M:%S.%f", dump, str(raw)],
                   check=True)
    by_lab, by_dump = analyze(ethernet), analyze(raw)
    assert by_dump.capture.linktype == pcaps.LINKTYPE_SCTP and by_dump.capture.frames == by_lab.capture.frames
    assert by_dump.summary.drop(columns=["src", "dst"]).equals(by_lab.summary.drop(columns=["src", "dst"]))
    assert by_lab.summary["q_s"].iloc[0] > 0 and by_lab.summary["blocking_intervals"].iloc[0] > 0
    # text2pcap dates the time of day today: the same rows, shifted by whole days
    clock = ["flow", "time_s", "time_ns"]
    assert by_dump.rtxq.drop(columns=clock).equals(by_lab.rtxq.drop(columns=clock))
    shift = by_dump.rtxq["time_ns"] - by_lab.rtxq["time_ns"]
    assert shift.nunique() == 1 and shift.iloc[0] % 86_400_000_000_000 == 0
    assert check(raw)[["rule", "frames"]].equals(check(ethernet)[["rule", "frames"]])


def _events_through(path, pipe):
    """read_chunks of `path`, from the file or (pipe) through a pipe, which libpcap reads record by record:
    -> (events bytes, blocks bytes, frames, findings, rule findings, why reading stopped)."""
    source = None
    if pipe:
        source = subprocess.Popen(["cat", str(path)], stdout=subprocess.PIPE)
        path = f"/dev/fd/{source.stdout.fileno()}"
    try:
        chunks = list(E.read_chunks(path, frames=20_000))
    finally:
        if source is not None:
            source.stdout.close()
            source.wait()
    last = chunks[-1]
    return (b"".join(c.ev.tobytes() for c in chunks), b"".join(c.blocks.tobytes() for c in chunks), last.frames,
            last.findings, last.rule_findings, last.truncated)


@pytest.mark.parametrize("nano", [False, True])
@pytest.mark.parametrize("damage", ["none", "cut", "oversize"])
def test_a_file_read_through_its_mapped_window_as_libpcap_reads_it(tmp_path, nano, damage):
    """A regular pcap file is read through a mapped window (read/_reader.c map_read), larger than one window
    here, so records straddle its edges; a pipe is read by libpcap. Both give the same events, findings and
    end: a file cut inside its last record, or a record longer than the snapshot length (libpcap reads it)."""
    frames = [LINKS["ethernet"][1](p) for p in ip_packets()]
    path = tmp_path / "long.pcap"
    with PcapWriter(path, nano=nano, snaplen=200) as writer:
        for i in range(60_000):  # ~6 MB: past the 4 MB window
            frame = frames[i % len(frames)]
            if damage == "oversize" and i == 45_000:
                frame = frame + bytes(300)  # captured past the snapshot length: libpcap keeps 200 bytes
            writer.write(EPOCH + i // 1000, (i % 1000) * (1_000_000 if nano else 1000) + 7, frame)
    if damage == "cut":
        with open(path, "r+b") as handle:
            handle.truncate(path.stat().st_size - 5)
    mapped, piped = _events_through(path, False), _events_through(path, True)
    assert mapped == piped
    assert mapped[2] == (59_999 if damage == "cut" else 60_000)
    assert (mapped[5] is not None) == (damage == "cut")
