"""Events -> flows and sender directions.

A flow is an SCTP association (every address pair that carries its verification tags), a TCP
connection, or an MPTCP connection (its subflows joined by keys and tokens). Each event gets the
flow it belongs to and the `side` (0 = the endpoint that opened it, 1 = the other) that sent it.

A sender direction is turned into the scoreboard's input (`Stream`): data events [lo, hi) and ack
events (cum, blocks) as 64-bit positions in bytes, after unwrapping the 32-bit serial numbers of its
sequence space once, here. SCTP TSNs are mapped to byte positions through the payload size of each
TSN's first transmission, so one scoreboard serves all three protocols; the same TSNs mapped with
size 1 give the figures in TSNs.
"""

from dataclasses import dataclass, field
import hashlib

import numpy as np

from nrsack.analyzer import events as E

TWO32 = 1 << 32


def unwrap32(values) -> np.ndarray:
    """Serial numbers mod 2^32 in observation order -> int64 (first value + 2^32 + signed steps)."""
    v = np.asarray(values, dtype=np.uint64) & 0xFFFFFFFF
    if len(v) == 0:
        return np.empty(0, np.int64)
    steps = (np.diff(v.astype(np.int64)) & 0xFFFFFFFF).astype(np.uint32).view(np.int32).astype(np.int64)
    out = np.empty(len(v), np.int64)
    out[0] = int(v[0]) + TWO32
    np.cumsum(steps, out=out[1:])
    out[1:] += out[0]
    return out


def near(base64, values32) -> np.ndarray:
    """32-bit serial numbers placed in the 64-bit space next to base64 (block edges near an ack)."""
    base64 = np.asarray(base64, np.int64)
    delta = ((np.asarray(values32, np.int64) - base64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    return base64 + delta.astype(np.int64)


@dataclass
class Flow:
    id: int
    protocol: str                 # sctp, tcp, mptcp
    conns: list                   # reader conn ids (SCTP paths, TCP connection, MPTCP subflows)
    endpoints: list               # [side0 "addr:port", side1 "addr:port"] (primary addresses)
    addresses: list = field(default_factory=lambda: [[], []])  # SCTP: every address per side
    handshake: list = field(default_factory=list)  # event indices of the opening exchange
    negotiated_nr: bool = False   # NR-SACK negotiated in the handshake (both sides)
    never_renege: list = field(default_factory=lambda: [False, False])  # per side (TCP flag 0x01)
    keys: list = field(default_factory=lambda: [None, None])  # MPTCP keys per side
    tokens: list = field(default_factory=lambda: [None, None])
    tags: list = field(default_factory=lambda: [None, None])  # SCTP verification tags per side


@dataclass
class Stream:
    """The scoreboard's input for one sender direction (or one path / subflow of it)."""

    rows: np.ndarray     # event indices, capture order
    kind: np.ndarray     # int8: 0 data, 1 ack
    lo: np.ndarray       # int64 data start (bytes); unused for acks
    hi: np.ndarray       # int64 data end / cum ack position
    bstart: np.ndarray   # int64 into the block arrays
    bcount: np.ndarray   # int32
    blo: np.ndarray      # int64
    bhi: np.ndarray      # int64
    bnr: np.ndarray      # int8: non-renegable
    units_lo: np.ndarray = None  # SCTP only: the same in TSNs (for unit notation / counts)
    units_hi: np.ndarray = None
    unit_blo: np.ndarray = None
    unit_bhi: np.ndarray = None
    unit_of: np.ndarray = None   # SCTP: sorted unwrapped TSNs of first transmissions
    nr_seen: bool = False
    gap_from_sacked: bool = False  # MPTCP data level: gap_open is sacked > 0 (decision 12)
    serial: np.ndarray = None    # per row: the unwrapped 64-bit TSN / seq / DSN (data) or cum ack


def _by_owner(ev, blocks, rows, kinds):
    """Blocks of the given kinds belonging to `rows` (in row order) and per-row local start/count."""
    counts = ev["blk_count"][rows].astype(np.int64)
    starts = ev["blk_start"][rows]
    total = int(counts.sum())
    owner = np.repeat(np.arange(len(rows)), counts)
    first = np.repeat(starts - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
    index = first + np.arange(total)
    keep = np.isin(blocks["kind"][index], kinds)
    index, owner = index[keep], owner[keep]
    bcount = np.bincount(owner, minlength=len(rows)).astype(np.int32)
    bstart = np.concatenate(([0], np.cumsum(bcount)[:-1])).astype(np.int64)
    return index, owner, bstart, bcount


def assemble(cap: E.Capture):
    """-> (flows, flow per event (int32, -1 none), side per event (int8))."""
    ev = cap.ev
    n = len(ev)
    flow_of = np.full(n, -1, np.int32)
    side_of = np.zeros(n, np.int8)
    flows = []
    conn_flow, conn_flip = {}, {}
    _assemble_sctp(cap, flows, conn_flow, conn_flip)
    _assemble_tcp(cap, flows, conn_flow, conn_flip)
    if conn_flow:
        lookup_flow = np.full(len(cap.conns), -1, np.int32)
        lookup_flip = np.zeros(len(cap.conns), np.int8)
        for c, f in conn_flow.items():
            lookup_flow[c] = f
            lookup_flip[c] = conn_flip[c]
        flow_of = lookup_flow[ev["conn"]]
        side_of = (ev["dir"].astype(np.int8) ^ lookup_flip[ev["conn"]]).astype(np.int8)
    return flows, flow_of, side_of


def _first(mask):
    hits = np.flatnonzero(mask)
    return int(hits[0]) if len(hits) else None


def _assemble_sctp(cap, flows, conn_flow, conn_flip):
    ev = cap.ev
    sctp = np.flatnonzero(ev["proto"] == E.PROTO_SCTP)
    if not len(sctp):
        return
    chunk, conn, d, tag = ev["chunk"][sctp], ev["conn"][sctp], ev["dir"][sctp], ev["tag"][sctp]
    is_init = (chunk == 1) | (chunk == 2)
    # the tag that names an endpoint: INIT / INIT-ACK carry the sender's own initiate tag, every
    # other chunk the receiver's; endpoint 0/1 of a conn are its a/b addresses
    endpoint = np.where(is_init, d, 1 - d).astype(np.int64)
    # an endpoint is its (port, tag): tags alone may repeat across associations
    ports = np.array([[c.port_a, c.port_b] for c in cap.conns], np.int64)
    port = ports[conn, endpoint]
    pairs = np.stack([conn.astype(np.int64) * 2 + endpoint, (port << 32) | tag.astype(np.int64)], 1)
    if len(cap.conns) < 1 << 15:
        # one 64-bit key per row sorts far faster than unique rows of a 2-D array
        packed = np.unique((pairs[:, 0].astype(np.uint64) << np.uint64(48)) | pairs[:, 1].astype(np.uint64))
        keyed = np.stack([(packed >> np.uint64(48)).astype(np.int64), (packed & np.uint64((1 << 48) - 1)).astype(np.int64)], 1)
    else:
        keyed = np.unique(pairs, axis=0)
    keyed = keyed[(keyed[:, 1] & 0xFFFFFFFF) != 0]  # INIT's verification tag 0 and ABORT-T say nothing
    parent = {}

    def root(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    tags_of = {}
    for key, t in keyed.tolist():
        tags_of.setdefault(key, []).append(t)
    for c in np.unique(conn).tolist():
        ta, tb = tags_of.get(2 * c, []), tags_of.get(2 * c + 1, [])
        for t in ta[1:]:
            parent[root(t)] = root(ta[0])
        for t in tb[1:]:
            parent[root(t)] = root(tb[0])
    # endpoints are tag groups; an association joins the two endpoints of each conn
    assoc_parent = {}

    def aroot(x):
        while assoc_parent.setdefault(x, x) != x:
            x = assoc_parent[x]
        return x

    conn_ends = {}
    for c in np.unique(conn).tolist():
        ta, tb = tags_of.get(2 * c, []), tags_of.get(2 * c + 1, [])
        ea = root(ta[0]) if ta else ("conn", c, 0)
        eb = root(tb[0]) if tb else ("conn", c, 1)
        conn_ends[c] = (ea, eb)
        ra, rb = aroot(ea), aroot(eb)
        if ra != rb:
            assoc_parent[rb] = ra
    groups = {}
    for c in sorted(conn_ends):
        groups.setdefault(aroot(conn_ends[c][0]), []).append(c)
    for members in groups.values():
        rows = sctp[np.isin(conn, members)]
        inits = rows[ev["chunk"][rows] == 1]
        init_acks = rows[ev["chunk"][rows] == 2]
        # side 0: the endpoint that sent the INIT, else the sender of the first packet
        first = int(inits[0]) if len(inits) else int(rows[0])
        first_conn = int(ev["conn"][first])
        opener = conn_ends[first_conn][int(ev["dir"][first])]
        peer = conn_ends[first_conn][1 - int(ev["dir"][first])]
        flow = Flow(len(flows), "sctp", members, ["", ""])
        for c in members:
            ea, eb = conn_ends[c]
            conn_flow[c] = flow.id
            # a path seen in one direction only knows one of its endpoints' tags
            conn_flip[c] = 0 if ea == opener or eb == peer else 1
        for side, end in ((0, opener), (1, peer)):
            # an endpoint group is keyed (port << 32 | tag); a placeholder when no tag was seen
            flow.tags[side] = int(end) & 0xFFFFFFFF if isinstance(end, (int, np.integer)) else None
        primary = cap.conns[first_conn]
        flip = conn_flip[first_conn]
        flow.endpoints = [primary.endpoint(flip), primary.endpoint(1 - flip)]
        for side, chunk_rows in ((0, inits), (1, init_acks)):
            if len(chunk_rows):
                r = int(chunk_rows[0])
                flow.addresses[side] = _addresses(cap, r)
        if len(inits) and len(init_acks):
            flow.negotiated_nr = bool(ev["flags"][inits[0]] & E.EXT_NRSACK and ev["flags"][init_acks[0]] & E.EXT_NRSACK)
        flow.handshake = _sctp_handshake(ev, rows)
        flows.append(flow)


def _addresses(cap, row):
    ev, blocks = cap.ev, cap.blocks
    start, count = int(ev["blk_start"][row]), int(ev["blk_count"][row])
    b = blocks[start:start + count]
    return [E.block_address(lo, hi) for lo, hi in zip(b["lo"][b["kind"] == E.BK_ADDR].tolist(),
                                                       b["hi"][b["kind"] == E.BK_ADDR].tolist())]


def _sctp_handshake(ev, rows):
    """INIT, INIT-ACK, COOKIE-ECHO event indices when all three were captured."""
    picks = []
    for chunk in (1, 2, 10):
        hit = rows[ev["chunk"][rows] == chunk]
        if not len(hit):
            return []
        picks.append(int(hit[0]))
    return picks


def mptcp_tokens(key: int) -> set:
    """The token of a key: the high 32 bits of its SHA-256 (RFC 8684) or SHA-1 (RFC 6824, version 0)."""
    raw = key.to_bytes(8, "big")
    return {int.from_bytes(hashlib.new(name, raw).digest()[:4], "big") for name in ("sha256", "sha1")}


def _assemble_tcp(cap, flows, conn_flow, conn_flip):
    ev = cap.ev
    tcp = np.flatnonzero(ev["proto"] == E.PROTO_TCP)
    if not len(tcp):
        return
    conn = ev["conn"][tcp]
    order = np.argsort(conn, kind="stable")
    bounds = np.flatnonzero(np.diff(conn[order])) + 1
    by_conn = {int(conn[order[g[0]]]): tcp[order[g]] for g in np.split(np.arange(len(order)), bounds) if len(g)}
    token_flow = {}  # MPTCP token -> (flow, side owning the key)
    joins = []
    for c, rows in by_conn.items():
        fl, tf = ev["flags"][rows], ev["tcp_flags"][rows]
        syn = rows[(tf & E.TCP_SYN) & ~(tf & 0x10) != 0]
        synack = rows[((tf & E.TCP_SYN) != 0) & ((tf & 0x10) != 0)]
        flip = int(ev["dir"][syn[0]]) if len(syn) else 0
        if len(syn) and ev["flags"][syn[0]] & E.MP_JOIN:
            joins.append((c, rows, flip, int(ev["aux"][syn[0]])))
            continue
        mptcp = bool(len(syn) and ev["flags"][syn[0]] & E.MP_CAPABLE)
        flow = Flow(len(flows), "mptcp" if mptcp else "tcp", [c], [cap.conns[c].endpoint(flip), cap.conns[c].endpoint(1 - flip)])
        conn_flow[c], conn_flip[c] = flow.id, flip
        if len(syn) and len(synack):
            f0, f1 = int(ev["flags"][syn[0]]), int(ev["flags"][synack[0]])
            nr_bit = E.MPTCP_NR_CAP if mptcp else E.NR_PERM
            flow.negotiated_nr = bool(f0 & nr_bit and f1 & nr_bit)
            flow.never_renege = [bool(f0 & E.NEVER_RENEGE), bool(f1 & E.NEVER_RENEGE)]
            acks = rows[(ev["dir"][rows] == flip) & ((tf & 0x10) != 0) & (ev["time_ns"][rows] >= ev["time_ns"][synack[0]])]
            if len(acks):
                flow.handshake = [int(syn[0]), int(synack[0]), int(acks[0])]
        if mptcp:
            # MP_CAPABLE v1 sends no key on the SYN: the opener's key rides on its third ACK
            capable = rows[(fl & E.MP_CAPABLE) != 0]
            for side in (0, 1):
                keyed = capable[(ev["dir"][capable] ^ flip == side) & (ev["key"][capable] != 0)]
                if len(keyed):
                    flow.keys[side] = int(ev["key"][keyed[0]])
                    tokens = mptcp_tokens(flow.keys[side])
                    flow.tokens[side] = min(tokens)
                    token_flow.update({t: (flow.id, side) for t in tokens})
        flows.append(flow)
    for c, rows, flip, token in joins:
        if token in token_flow:
            fid, owner = token_flow[token]
            # the join SYN goes to the key's owner: its sender is the other side of the connection
            conn_flow[c], conn_flip[c] = fid, flip ^ (1 - owner)
            flows[fid].conns.append(c)
        else:  # a subflow whose connection was not captured: a TCP flow of its own
            flow = Flow(len(flows), "tcp", [c], [cap.conns[c].endpoint(flip), cap.conns[c].endpoint(1 - flip)])
            conn_flow[c], conn_flip[c] = flow.id, flip
            flows.append(flow)


# ---- sender directions -> scoreboard input ----

def _stream(rows, is_data, lo, hi, owner_count_blocks):
    bstart, bcount, blo, bhi, bnr = owner_count_blocks
    return Stream(rows, np.where(is_data, 0, 1).astype(np.int8), lo.astype(np.int64), hi.astype(np.int64),
                  bstart, bcount, blo.astype(np.int64), bhi.astype(np.int64), bnr.astype(np.int8))


def tcp_stream(cap, rows_all, side_all, conn, sender, never_renege):
    """TCP level of one conn in direction `sender`: seq space of the sender, its data and the peer's acks."""
    ev = cap.ev
    on_conn = ev["conn"][rows_all] == conn
    sel = rows_all[on_conn]
    s = side_all[on_conn]
    fl = ev["flags"][sel]
    tf = ev["tcp_flags"][sel]
    data = (s == sender) & (ev["len"][sel] > 0) & ((tf & E.TCP_RST) == 0)
    ack = (s != sender) & ((fl & E.ACK) != 0)
    rows = sel[data | ack]
    is_data = data[data | ack]
    raw = np.where(is_data, ev["seq"][rows], ev["ack"][rows])
    u = unwrap32(raw)
    lo = u
    hi = np.where(is_data, u + ev["len"][rows], u)
    index, owner, bstart, bcount = _by_owner(ev, cap.blocks, rows, [E.BK_TCP_SACK, E.BK_TCP_NR])
    blk = cap.blocks[index]
    base = u[owner]
    blo, bhi = near(base, blk["lo"] & 0xFFFFFFFF), near(base, blk["hi"] & 0xFFFFFFFF)
    bnr = (blk["kind"] == E.BK_TCP_NR) | bool(never_renege)
    bcount = np.where(is_data, 0, bcount).astype(np.int32)  # a data segment's own SACK blocks ack the other way
    stream = _stream(rows, is_data, lo, hi, (bstart, bcount, blo, bhi, bnr))
    stream.nr_seen = bool((blk["kind"] == E.BK_TCP_NR).any())
    stream.serial = u
    return stream


def mptcp_stream(cap, rows_all, side_all, sender):
    """MPTCP data level: DSS mappings of the sender's subflows, DATA ACKs of the peer with its NR blocks
    and, as renegable blocks, the DSNs its subflow acks cover (decision 12: `sacked` at the data level)."""
    ev = cap.ev
    fl = ev["flags"][rows_all]
    s = side_all
    data = (s == sender) & ((fl & E.DSS_MAP) != 0) & (ev["dss_len"][rows_all] > 0)
    ack = (s != sender) & ((fl & E.DATA_ACK) != 0)
    rows = rows_all[data | ack]
    is_data = data[data | ack]
    raw = np.where(is_data, ev["dsn"][rows], ev["data_ack"][rows]) & np.uint64(0xFFFFFFFF)
    u = unwrap32(raw)
    hi = np.where(is_data, u + ev["dss_len"][rows], u)
    index, owner, _, _ = _by_owner(ev, cap.blocks, rows, [E.BK_MPTCP_NR])
    acking = ~is_data[owner]  # a data segment's NR blocks ack the other way
    index, owner = index[acking], owner[acking]
    blk = cap.blocks[index]
    base = u[owner]
    nr_lo = base + blk["lo"].astype(np.int64)
    nr_hi = base + blk["hi"].astype(np.int64)
    sub_owner, sub_lo, sub_hi = _subflow_acked_dsns(cap, rows_all, side_all, sender, rows, u, is_data)
    owners = np.concatenate((owner, sub_owner))
    order = np.argsort(owners, kind="stable")  # per ack: its NR blocks, then its subflow-acked DSNs
    bcount = np.bincount(owners, minlength=len(rows)).astype(np.int32)
    bstart = np.concatenate(([0], np.cumsum(bcount)[:-1])).astype(np.int64)
    blo = np.concatenate((nr_lo, sub_lo))[order]
    bhi = np.concatenate((nr_hi, sub_hi))[order]
    bnr = np.concatenate((np.ones(len(owner), np.int8), np.zeros(len(sub_owner), np.int8)))[order]
    stream = _stream(rows, is_data, u, hi, (bstart, bcount, blo, bhi, bnr))
    stream.nr_seen = bool(len(blk))
    stream.serial = u
    stream.gap_from_sacked = True
    return stream


def _subflow_acked_dsns(cap, rows_all, side_all, sender, rows, dsn, is_data):
    """The DSN ranges each data-level ack's own subflow ack covers: the subflow bytes its cum ack newly
    covers (since that subflow's previous DATA ACK segment) and its SACK blocks, mapped byte for byte
    through the sender's DSS mappings on that subflow. -> (index into rows, DSN lo, DSN hi)."""
    ev = cap.ev
    out = ([], [], [])
    conn_of = ev["conn"][rows]
    for conn in np.unique(ev["conn"][rows_all]).tolist():
        sub = tcp_stream(cap, rows_all, side_all, conn, sender, False)
        mapped = (sub.kind == 0) & ((ev["flags"][sub.rows] & E.DSS_MAP) != 0) & (ev["dss_len"][sub.rows] > 0)
        if not mapped.any():
            continue
        map_rows = sub.rows[mapped]
        seq64 = sub.serial[mapped]
        on_conn = rows_all[ev["conn"][rows_all] == conn]
        syn = on_conn[(side_all[ev["conn"][rows_all] == conn] == sender)
                      & ((ev["tcp_flags"][on_conn] & E.TCP_SYN) != 0)]
        if len(syn):  # the mapping's subflow sequence number is relative to the ISN (RFC 8684 3.3)
            isn = int(ev["seq"][syn[0]])
            map_lo = near(seq64, (isn + ev["aux"][map_rows].astype(np.int64)) & 0xFFFFFFFF)
        else:
            map_lo = seq64
        map_dsn = dsn[np.searchsorted(rows, map_rows)]
        map_lo, first = np.unique(map_lo, return_index=True)  # a retransmission repeats its mapping
        map_dsn = map_dsn[first]
        map_hi = map_lo + ev["dss_len"][map_rows[first]].astype(np.int64)
        # the subflow acks that ride on data-level acks
        acks = (sub.kind == 1) & np.isin(sub.rows, rows[~is_data & (conn_of == conn)])
        ack_rows, cum = sub.rows[acks], sub.hi[acks]
        prev = np.concatenate(([map_lo[0]], np.maximum.accumulate(cum)[:-1]))
        ranges = [(ack_rows, np.maximum(prev, map_lo[0]), cum)]
        count = sub.bcount[acks]
        pick = _expand(sub.bstart[acks], count)
        ranges.append((np.repeat(ack_rows, count), sub.blo[pick], sub.bhi[pick]))
        for owner_rows, lo, hi in ranges:
            keep = hi > lo
            owner_rows, lo, hi = owner_rows[keep], lo[keep], hi[keep]
            i = np.searchsorted(map_hi, lo, "right")
            j = np.searchsorted(map_lo, hi, "left")
            n = np.maximum(j - i, 0)
            k = _expand(i, n)  # the mappings each range overlaps
            a = np.maximum(np.repeat(lo, n), map_lo[k])
            b = np.minimum(np.repeat(hi, n), map_hi[k])
            out[0].append(np.searchsorted(rows, np.repeat(owner_rows, n)))
            out[1].append(map_dsn[k] + (a - map_lo[k]))
            out[2].append(map_dsn[k] + (b - map_lo[k]))
    if not out[0]:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64)
    return tuple(np.concatenate(part).astype(np.int64) for part in out)


def _expand(starts, counts) -> np.ndarray:
    """starts[i] .. starts[i] + counts[i] - 1 for every i, concatenated."""
    counts = np.asarray(counts, np.int64)
    offsets = np.cumsum(counts) - counts
    return (np.repeat(np.asarray(starts, np.int64) - offsets, counts) + np.arange(int(counts.sum()))).astype(np.int64)


def sctp_stream(cap, rows_all, side_all, sender, path_conn=None):
    """One SCTP association direction (or the part of it first sent on one path): TSNs -> bytes."""
    ev = cap.ev
    ch = ev["chunk"][rows_all]
    s = side_all
    data = (s == sender) & (ch == 0)
    ack = (s != sender) & ((ch == 3) | (ch == 16))
    rows = rows_all[data | ack]
    is_data = data[data | ack]
    u = unwrap32(np.where(is_data, ev["seq"][rows], ev["ack"][rows]))
    # the unit table: each TSN's first transmission (its size, its path)
    data_pos = np.flatnonzero(is_data)
    tsn, first = np.unique(u[data_pos], return_index=True)
    first_rows = rows[data_pos[first]]
    size = ev["len"][first_rows].astype(np.int64)
    keep_data = is_data
    if path_conn is not None:
        on_path = ev["conn"][first_rows] == path_conn
        tsn, size = tsn[on_path], size[on_path]
        # data of this path's TSNs sent on this path; the other paths' TSNs are not in its queue
        keep_data = is_data & (ev["conn"][rows] == path_conn) & np.isin(u, tsn)
    keep = keep_data | ~is_data
    rows, is_data, u = rows[keep], is_data[keep], u[keep]
    index, owner, bstart, bcount = _by_owner(ev, cap.blocks, rows, [E.BK_R, E.BK_NR])
    blk = cap.blocks[index]
    cum = u[owner]
    first_tsn = cum + blk["lo"].astype(np.int64)  # a block covers cum+Start .. cum+End inclusive
    last_tsn = cum + blk["hi"].astype(np.int64)
    bnr = (blk["kind"] == E.BK_NR).astype(np.int8)
    bcount = np.where(is_data, 0, bcount).astype(np.int32)

    def positions(weights):
        # position of TSN t = weight of the first-transmitted TSNs below t; a DATA chunk spans its
        # own weight, a cum ack c ends at the position after c
        acc = np.concatenate(([0], np.cumsum(weights)))
        return (acc[np.searchsorted(tsn, u, "left")], acc[np.searchsorted(tsn, u, "right")],
                acc[np.searchsorted(tsn, first_tsn, "left")], acc[np.searchsorted(tsn, last_tsn, "right")])

    lo, hi, blo, bhi = positions(size)
    stream = _stream(rows, is_data, lo, hi, (bstart, bcount, blo, bhi, bnr))
    stream.units_lo, stream.units_hi, stream.unit_blo, stream.unit_bhi = positions(np.ones(len(tsn), np.int64))
    stream.unit_of = tsn
    stream.serial = u
    stream.nr_seen = bool((ch[(s != sender)] == 16).any())
    return stream
