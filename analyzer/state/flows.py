"""Events -> flows and sender directions, chunk by chunk.

A flow is an SCTP association (every address pair that carries its verification tags), a TCP
connection, or an MPTCP connection (its subflows joined by keys and tokens). FlowTable.assign gives
each event of a chunk the flow it belongs to and the `side` (0 = the endpoint that opened it, 1 =
the other) that sent it. A conn joins a flow when it is first seen; what later chunks add (the rest
of a handshake, keys, tags) refines the flow (docs/decisions.md 28).

A sender direction is turned into the scoreboard's input chunk by chunk by a level: TcpLevel (a TCP
connection or MPTCP subflow), SctpLevel (an association direction or one of its paths), MptcpLevel
(the data level). Each unwraps the 32-bit serial numbers of its sequence space once, carrying the
space's state from chunk to chunk, and keeps only tables bounded by the window. TcpLevel and SctpLevel
pick their rows in one compiled pass (_levels.c), the bulk of the work on most captures. TCP and MPTCP
positions are bytes; SCTP positions are TSNs, weighed by the scoreboard with their payload sizes.
"""

from dataclasses import dataclass, field
import sys

import numpy as np

from nrsack.analyzer import _native
from nrsack.analyzer.read import events as E

TWO32 = 1 << 32


# numpy's np.unique hashes (fast on many rows) but imports numpy.ma on its first call: ~40M instructions,
# a tenth of `nrsack analyze` on a short capture. Below this many values a sort costs less than either.
SORT_UNIQUE_MAX = 4096


def distinct(values) -> np.ndarray:
    """np.unique(values) of a 1-D array."""
    if len(values) > SORT_UNIQUE_MAX:
        return np.unique(values)
    ordered = np.sort(values)
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))] if len(ordered) else ordered


def unwrap32(values, state, frames, far: "FarSerials"):
    """Serial numbers mod 2^32 in observation order -> (int64 serials, mask of the rows kept, the space's
    new state), by the core's one rule (core/serial.c): each the 64-bit value nearest to the highest
    seen; a far value is left out (counted in `far`) unless the next far value confirms it. `state` is
    None for a fresh space, else the state the previous chunk returned."""
    values = np.ascontiguousarray(np.asarray(values, np.uint64) & np.uint64(0xFFFFFFFF))
    serials, kept, state, (count, first) = _native.unwrap(values, state)
    if count:
        far.add(count, frames[first])
    return np.frombuffer(serials, np.int64), np.frombuffer(kept, np.bool_), state


def unwrap_one(value, state) -> int:
    """unwrap32's serial of one value, whether far or not (nothing counts it): for a caller reading serials one at
    a time, without unwrap32's arrays around each (the checker's start events of a flood's connections)."""
    serials = _native.unwrap(np.array([value & 0xFFFFFFFF], np.uint64), state)[0]
    return int.from_bytes(serials[:8], sys.byteorder, signed=True)


class FarSerials:
    """Rows a level left out because their serial number landed more than SERIAL_FAR (core/serial.c) from
    the highest seen (an ack 2^31 away must not make every later ack look 2^32 behind): how many, the first frame."""

    def __init__(self):
        self.count, self.first_frame = 0, None

    def add(self, count, first_frame):
        if count and self.first_frame is None:
            self.first_frame = int(first_frame)
        self.count += int(count)


def unwrap32_guarded(values, prev, frames, far: FarSerials):
    """unwrap32 of a fresh space (prev None) for the rules' inputs: -> (serials, mask of the rows kept)."""
    return unwrap32(values, prev, frames, far)[:2]


def near(base64, values32) -> np.ndarray:
    """32-bit serial numbers placed in the 64-bit space next to base64 (block edges near an ack)."""
    base64 = np.asarray(base64, np.int64)
    delta = ((np.asarray(values32, np.int64) - base64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    return base64 + delta.astype(np.int64)


@dataclass(slots=True)  # (no __dict__: a flood holds hundreds of thousands)
class Flow:
    id: int
    protocol: str                 # sctp, tcp, mptcp
    conns: list                   # reader conn ids (SCTP paths, TCP connection, MPTCP subflows)
    endpoints: list               # [side0 "addr:port", side1 "addr:port"] (primary addresses)
    # Per side, read by index. Until a protocol fills them they are shared tuples, not lists of each flow's own:
    # FlowTable gives an SCTP association its addresses and tags, an MPTCP connection its keys and tokens (a
    # flood's plain TCP connections then hold no list the cyclic collector walks).
    addresses: list = ((), ())    # SCTP: every address per side
    handshake: list = ()          # event indices of the opening exchange
    handshake_ns: list = ()       # and their times
    negotiated_nr: bool = False   # NR-SACK negotiated in the handshake (both sides)
    never_renege: list = (False, False)  # per side (TCP flag 0x01)
    keys: list = (None, None)     # MPTCP keys per side
    mp_version: int | None = None  # MPTCP version of the first MP_CAPABLE (0: RFC 6824, 1: RFC 8684)
    tokens: list = (None, None)
    tags: list = (None, None)     # SCTP verification tags per side
    # the first event of each handshake kind (SCTP chunk type / TCP "syn", "synack", "ack"): (index, time, flags)
    firsts: dict = field(default_factory=dict, repr=False)


def mptcp_tokens(key: int) -> set:
    """The token of a key: the high 32 bits of its SHA-256 (RFC 8684) or SHA-1 (RFC 6824, version 0)."""
    import hashlib  # here: only MPTCP asks, and it costs a capture without MPTCP's start-up

    raw = key.to_bytes(8, "big")
    return {int.from_bytes(hashlib.new(name, raw).digest()[:4], "big") for name in ("sha256", "sha1")}


class _UnionFind(dict):
    def root(self, x):
        while self.setdefault(x, x) != x:
            self[x] = self[self[x]]
            x = self[x]
        return x

    def join(self, a, b):
        ra, rb = self.root(a), self.root(b)
        if ra != rb:
            self[rb] = ra


class FlowTable:
    """Flows as the chunks of a capture reveal them (ids in order of first appearance)."""

    def __init__(self):
        self.flows = []
        self._conn_flow = np.empty(0, np.int32)  # conn id -> flow id (-1: not seen yet)
        self._conn_flip = np.empty(0, np.int8)   # conn id -> 1 when its endpoint B is the flow's side 0
        self._key_side = {}      # SCTP endpoint key (port << 32 | tag) -> (flow, side)
        self._token_flow = {}    # MPTCP token -> (flow, side owning the key)
        self._pending = []       # flows whose handshake may still be completed by later chunks
        self._untagged = []      # SCTP flows that have not shown the tag of one side yet

    def flip(self, conn) -> int:
        return int(self._conn_flip[conn])

    def assign(self, cap: E.Capture):
        """-> (flow id per event (int32), side per event (int8)) of one chunk."""
        ev = cap.ev
        grow = len(cap.conns) - len(self._conn_flow)
        if grow > 0:
            self._conn_flow = np.concatenate((self._conn_flow, np.full(grow, -1, np.int32)))
            self._conn_flip = np.concatenate((self._conn_flip, np.zeros(grow, np.int8)))
        present = np.frombuffer(_native.conn_present(ev, len(cap.conns)), bool)
        new = present & (self._conn_flow < 0)
        if new.any():
            created = self._new_sctp(cap, new)
            joins = self._new_tcp(cap, new, created)
            created.sort(key=lambda f: f.conns[0])
            for flow_id, flow in enumerate(created, len(self.flows)):
                flow.id = flow_id
            self.flows += created
            # (each conn in one flow: one assignment of them all, not one a flow)
            self._conn_flow[[c for flow in created for c in flow.conns]] = [flow.id for flow in created
                                                                            for _ in flow.conns]
            self._pending.extend(f for f in created if f.firsts is not None)
            self._untagged.extend(f for f in created if f.protocol == "sctp" and None in f.tags)
            self._refine(cap, present)
            for conn, flip, token in joins:
                self._join(cap, conn, flip, token)
        elif self._pending:
            self._refine(cap, present)
        if self._untagged:
            self._learn_tags(cap)
        flow_of, side_of = _native.conn_flows(ev, self._conn_flow, self._conn_flip)
        return np.frombuffer(flow_of, np.int32), np.frombuffer(side_of, np.int8)

    def flows_of_conns(self, conns) -> np.ndarray:
        """The flow id each conn names (-1: none yet)."""
        known = conns < len(self._conn_flow)
        out = np.full(len(conns), -1, np.int64)
        out[known] = self._conn_flow[conns[known]]
        return out

    def forget(self, flow, conns: E.ConnList):
        """A finished flow leaves the table: its id stays taken (its conns still name it), its object,
        its endpoint keys and its tokens go, so a later association or subflow starts a flow of its own."""
        self.flows[flow.id] = None
        flow.firsts = None
        if flow.protocol == "sctp":
            ports = set(conns.ports[flow.conns].ravel().tolist())
            for key in ((port << 32) | tag for port in ports for tag in flow.tags if tag is not None):
                if self._key_side.get(key, (None,))[0] is flow:
                    del self._key_side[key]
            if None in flow.tags:
                self._untagged = [f for f in self._untagged if f is not flow]
        for key in flow.keys:
            for token in mptcp_tokens(key) if key is not None else ():
                if self._token_flow.get(token, (None,))[0] is flow:
                    del self._token_flow[token]

    # -- SCTP: associations are the conns linked by shared endpoint keys (port, verification tag)

    def _new_sctp(self, cap, new):
        ev = cap.ev
        rows = np.flatnonzero(new[ev["conn"]] & (ev["proto"] == E.PROTO_SCTP))
        if not len(rows):
            return []
        nodes, keys = _sctp_endpoint_keys(cap, rows)
        ends = _UnionFind()   # endpoints: (conn, endpoint) nodes and the keys they carry
        for node, key in zip(nodes.tolist(), keys.tolist()):
            ends.join(-1 - node, key)
        conn_of_row = ev["conn"][rows]
        conns = np.flatnonzero(np.bincount(conn_of_row)).tolist()
        # per conn its first event and its first INIT (writing in reverse leaves the first one)
        first_row = np.empty(len(cap.conns), np.int64)
        first_row[conn_of_row[::-1]] = rows[::-1]
        first_init = _first_per_conn(ev, rows[ev["chunk"][rows] == 1])
        assoc = _UnionFind()  # associations: the two endpoints of every conn
        for c in conns:
            assoc.join(ends.root(-1 - 2 * c), ends.root(-2 - 2 * c))
        keys_of = {}
        for node, key in zip(nodes.tolist(), keys.tolist()):
            keys_of.setdefault(ends.root(-1 - node), []).append(key)
        groups = {}
        for c in conns:
            groups.setdefault(assoc.root(ends.root(-1 - 2 * c)), []).append(c)
        created = []
        for members in groups.values():
            known = [self._key_side[k] for c in members for e in (0, 1) for k in keys_of.get(ends.root(-1 - 2 * c - e), [])
                     if k in self._key_side]
            if known:
                flow = min(known, key=lambda fs: fs[0].id)[0]
                side_of_end = {}
                for c in members:
                    for e in (0, 1):
                        end = ends.root(-1 - 2 * c - e)
                        hits = [self._key_side[k][1] for k in keys_of.get(end, [])
                                if self._key_side.get(k, (None,))[0] is flow]
                        if hits:
                            side_of_end[end] = hits[0]
                is_side0 = lambda end: side_of_end.get(end) == 0
                is_side1 = lambda end: side_of_end.get(end) == 1
                primary_conn = None
            else:
                member_inits = [first_init[c] for c in members if c in first_init]
                first = min(member_inits) if member_inits else int(first_row[members].min())
                first_conn, first_dir = int(ev["conn"][first]), int(ev["dir"][first])
                opener, peer = ends.root(-1 - 2 * first_conn - first_dir), ends.root(-2 - 2 * first_conn + first_dir)
                flow = Flow(-1, "sctp", [], ["", ""], addresses=[[], []])
                primary_conn = first_conn
                flow.tags = [_tag(keys_of.get(opener)), _tag(keys_of.get(peer))]
                created.append(flow)
                is_side0 = lambda end: end == opener
                is_side1 = lambda end: end == peer
            for c in members:
                ea, eb = ends.root(-1 - 2 * c), ends.root(-2 - 2 * c)
                # a path seen in one direction only knows one of its endpoints' tags
                flip = 0 if is_side0(ea) or is_side1(eb) else 1
                self._conn_flip[c] = flip
                flow.conns.append(c)
                if flow.id >= 0:
                    self._conn_flow[c] = flow.id
                for end, side in ((ea, flip), (eb, 1 - flip)):
                    for k in keys_of.get(end, []):
                        self._key_side.setdefault(k, (flow, side))
                    if flow.tags[side] is None:
                        flow.tags[side] = _tag(keys_of.get(end))
            if primary_conn is not None:
                flow.endpoints = cap.conns.endpoints([primary_conn], [self._conn_flip[primary_conn]])[0]
        return created

    def _learn_tags(self, cap):
        """An endpoint's tag first seen after its conn joined a flow (the INIT-ACK in a later chunk)."""
        ev = cap.ev
        watched = np.zeros(len(self._conn_flow), bool)
        for flow in self._untagged:
            watched[flow.conns] = True
        rows = np.flatnonzero(watched[ev["conn"]] & (ev["proto"] == E.PROTO_SCTP))
        if len(rows):
            nodes, keys = _sctp_endpoint_keys(cap, rows)
            for node, key in zip(nodes.tolist(), keys.tolist()):
                conn = node >> 1
                flow = self.flows[self._conn_flow[conn]]
                side = (node & 1) ^ int(self._conn_flip[conn])
                self._key_side.setdefault(key, (flow, side))
                if flow.tags[side] is None:
                    flow.tags[side] = _tag([key])
        self._untagged = [f for f in self._untagged if None in f.tags]

    # -- TCP and MPTCP: a connection per conn, MP_JOIN subflows joined to theirs by token

    def _new_tcp(self, cap, new, created):
        """Adds the new TCP connections to `created`; -> the MP_JOIN subflows to join once keys are known."""
        ev = cap.ev
        rows = np.flatnonzero(new[ev["conn"]] & (ev["proto"] == E.PROTO_TCP))
        joins = []
        if not len(rows):
            return joins
        tf = ev["tcp_flags"][rows]
        syn_rows = rows[((tf & E.TCP_SYN) != 0) & ((tf & 0x10) == 0)]
        conns = np.flatnonzero(np.bincount(ev["conn"][rows]))
        # per new conn its first SYN (-1: none seen), all at once (a million connections)
        syn_conns, first = np.unique(ev["conn"][syn_rows], return_index=True)
        syn = np.full(len(self._conn_flow), -1, np.int64)
        syn[syn_conns] = syn_rows[first]
        syn = syn[conns]
        has_syn = syn >= 0
        flips = np.where(has_syn, ev["dir"][syn], 0).astype(np.int8)
        flags = np.where(has_syn, ev["flags"][syn], 0)
        self._conn_flip[conns] = flips
        join = (flags & E.MP_JOIN) != 0
        joins = list(zip(conns[join].tolist(), flips[join].tolist(), ev["aux"][syn[join]].tolist()))
        opened = ~join
        for c, flip_, mptcp, seen, ends in zip(conns[opened].tolist(), flips[opened].tolist(),
                                               ((flags[opened] & E.MP_CAPABLE) != 0).tolist(), has_syn[opened].tolist(),
                                               cap.conns.endpoints(conns[opened], flips[opened])):
            flow = Flow(-1, "mptcp", [c], ends, keys=[None, None], tokens=[None, None]) if mptcp else \
                Flow(-1, "tcp", [c], ends)
            if not seen:
                flow.firsts = None  # no opening seen: nothing to wait for
            created.append(flow)
        return joins

    def _join(self, cap, conn, flip, token):
        if token in self._token_flow:
            flow, owner = self._token_flow[token]
            # the join SYN goes to the key's owner: its sender is the other side of the connection
            self._conn_flip[conn] = flip ^ (1 - owner)
            flow.conns.append(conn)
        else:  # a subflow whose connection was not captured: a TCP flow of its own
            flow = Flow(len(self.flows), "tcp", [conn], cap.conns.endpoints([conn], [flip])[0])
            self.flows.append(flow)
        self._conn_flow[conn] = flow.id

    # -- handshakes, negotiation, keys: from the first events of each kind, whichever chunk holds them

    def _refine(self, cap, present=None):
        """present: per conn, whether it has rows in the chunk (assign's)."""
        ev = cap.ev
        pending = [f for f in self._pending if f.firsts is not None]
        if not pending:
            self._pending = []
            return
        watched = np.zeros(len(self._conn_flow), bool)
        watched[[c for flow in pending for c in (flow.conns if flow.protocol == "sctp" else flow.conns[:1])]] = True
        conn, proto, chunk, tf = ev["conn"], ev["proto"], ev["chunk"], ev["tcp_flags"]
        # the rows a handshake's parts can be among, found in one compiled pass and then checked one by one for
        # being watched (an association or connection seen without its handshake is watched to the end: a
        # gather of every row's conn and _refine_tcp's sorts over half a chunk cost ~10% of a capture): SCTP's
        # INIT, INIT-ACK and COOKIE-ECHO, TCP's SYNs and MP_CAPABLE options
        rare = np.frombuffer(_native.handshake_rows(ev), np.int64)
        rare = rare[watched[conn[rare]]]
        rare_proto = proto[rare]
        sctp = rare[(rare_proto == E.PROTO_SCTP) & np.isin(chunk[rare], (1, 2, 10))]
        for r in sctp.tolist():
            flow = self.flows[self._conn_flow[ev["conn"][r]]]
            kind = int(ev["chunk"][r])
            if kind not in flow.firsts:
                flow.firsts[kind] = (cap.offset + r, int(ev["time_ns"][r]), int(ev["flags"][r]))
                if kind in (1, 2):
                    flow.addresses[kind - 1] = _addresses(cap, r)
        tcp = rare[rare_proto == E.PROTO_TCP]
        # and every row of a conn whose SYN-ACK came (here or before) and whose opener's first ACK after it did not
        awaiting = np.zeros(len(watched), bool)
        awaiting[[flow.conns[0] for flow in pending if flow.protocol != "sctp" and "synack" in flow.firsts
                  and "ack" not in flow.firsts]] = True
        awaiting[conn[tcp[(tf[tcp] & 0x12) == 0x12]]] = True
        if awaiting.any():
            tcp = np.flatnonzero(((proto == E.PROTO_TCP) & watched[conn])
                                 & (awaiting[conn] | ((tf & E.TCP_SYN) != 0) | ((ev["flags"] & E.MP_CAPABLE) != 0)))
        if len(tcp):
            self._refine_tcp(cap, tcp)
        # what the handshake says changes only for the flows with rows here
        here = np.zeros(len(self.flows), bool)
        seen = present if present is not None else np.bincount(conn, minlength=len(watched)) > 0
        here[self._conn_flow[seen & watched]] = True
        for flow in pending:
            if here[flow.id]:
                self._settle(flow)
        self._pending = [f for f in pending if f.firsts is not None]

    def _refine_tcp(self, cap, rows):
        """The handshake rows of the watched TCP conns (each its flow's first conn) among `rows`, in
        capture order: found for every conn at once, not in a loop per flow."""
        ev = cap.ev
        conn, tf = ev["conn"][rows], ev["tcp_flags"][rows]

        flows = self.flows

        def note(kind, mask):
            conns, first = np.unique(conn[mask], return_index=True)  # each conn's first row of the kind
            picked = rows[mask][first]
            for f, r, t, fl in zip(self._conn_flow[conns].tolist(), picked.tolist(), ev["time_ns"][picked].tolist(),
                                   ev["flags"][picked].tolist()):
                firsts = flows[f].firsts
                if kind not in firsts:
                    firsts[kind] = (cap.offset + r, t, fl)

        note("syn", ((tf & E.TCP_SYN) != 0) & ((tf & 0x10) == 0))
        note("synack", (tf & 0x12) == 0x12)
        # the opener's first ACK at or after the SYN-ACK (of this chunk or an earlier one)
        synack_ns = np.full(len(self._conn_flow), np.iinfo(np.int64).max)
        conns = distinct(conn)
        for c, f in zip(conns.tolist(), self._conn_flow[conns].tolist()):
            firsts = flows[f].firsts
            if "synack" in firsts and "ack" not in firsts:
                synack_ns[c] = firsts["synack"][1]
        note("ack", (ev["dir"][rows] == self._conn_flip[conn]) & ((tf & 0x10) != 0)
             & (ev["time_ns"][rows] >= synack_ns[conn]))
        for c in distinct(conn[(ev["flags"][rows] & E.MP_CAPABLE) != 0]).tolist():
            flow = self.flows[self._conn_flow[c]]
            if flow.protocol == "mptcp":
                self._mptcp_keys(ev, flow, rows[conn == c])

    def _mptcp_keys(self, ev, flow, rows):
        # MP_CAPABLE v1 sends no key on the SYN: the opener's key rides on its third ACK
        flip = self.flip(flow.conns[0])
        capable = rows[(ev["flags"][rows] & E.MP_CAPABLE) != 0]
        if flow.mp_version is None and len(capable):
            flow.mp_version = int(ev["aux"][capable[0]])
        capable = capable[ev["key"][capable] != 0]
        for side in (0, 1):
            keyed = capable[(ev["dir"][capable] ^ flip) == side]
            if flow.keys[side] is None and len(keyed):
                flow.keys[side] = int(ev["key"][keyed[0]])
                tokens = mptcp_tokens(flow.keys[side])
                flow.tokens[side] = min(tokens)
                self._token_flow.update({t: (flow, side) for t in tokens})

    def _settle(self, flow):
        """Derives what the handshake says once its parts are known; stops watching a complete one."""
        f = flow.firsts
        if flow.protocol == "sctp":
            kinds = (1, 2, 10)
            if 1 in f and 2 in f:
                flow.negotiated_nr = bool(f[1][2] & E.EXT_NRSACK and f[2][2] & E.EXT_NRSACK)
        else:
            kinds = ("syn", "synack", "ack")
            if "syn" in f and "synack" in f:
                nr_bit = E.MPTCP_NR_CAP if flow.protocol == "mptcp" else E.NR_PERM
                flow.negotiated_nr = bool(f["syn"][2] & nr_bit and f["synack"][2] & nr_bit)
                flow.never_renege = [bool(f["syn"][2] & E.NEVER_RENEGE), bool(f["synack"][2] & E.NEVER_RENEGE)]
        if all(k in f for k in kinds):
            flow.handshake = [f[k][0] for k in kinds]
            flow.handshake_ns = [f[k][1] for k in kinds]
            if flow.protocol != "mptcp" or None not in flow.keys:
                flow.firsts = None


def _first_per_conn(ev, rows) -> dict:
    """conn -> the first of `rows` (in order) on it."""
    first = {}
    for conn, row in zip(ev["conn"][rows].tolist(), rows.tolist()):
        first.setdefault(conn, row)
    return first


def _tag(keys):
    return int(min(keys)) & 0xFFFFFFFF if keys else None


def _sctp_endpoint_keys(cap, rows):
    """Unique (endpoint node, key) pairs of SCTP events: node = 2 * conn + endpoint (0: the conn's
    A address), key = port << 32 | verification tag naming that endpoint (tag 0 says nothing)."""
    ev = cap.ev
    chunk, conn, d, tag = ev["chunk"][rows], ev["conn"][rows], ev["dir"][rows], ev["tag"][rows]
    is_init = (chunk == 1) | (chunk == 2)
    # INIT / INIT-ACK carry the sender's own initiate tag, every other chunk the receiver's
    endpoint = np.where(is_init, d, 1 - d).astype(np.int64)
    ports = cap.conns.ports
    node = conn.astype(np.int64) * 2 + endpoint
    key = (ports[conn, endpoint] << 32) | tag.astype(np.int64)
    if len(cap.conns) < 1 << 15:
        # one 64-bit key per row, made unique by hashing (few distinct values, many rows)
        packed = distinct((node.astype(np.uint64) << np.uint64(48)) | key.astype(np.uint64))
        node, key = (packed >> np.uint64(48)).astype(np.int64), (packed & np.uint64((1 << 48) - 1)).astype(np.int64)
    else:
        pairs = np.unique(np.stack([node, key], 1), axis=0)
        node, key = pairs[:, 0], pairs[:, 1]
    keep = (key & 0xFFFFFFFF) != 0
    return node[keep], key[keep]


def _addresses(cap, row):
    ev, blocks = cap.ev, cap.blocks
    start, count = int(ev["blk_start"][row]), int(ev["blk_count"][row])
    b = blocks[start:start + count]
    return [E.block_address(lo, hi) for lo, hi in zip(b["lo"][b["kind"] == E.BK_ADDR].tolist(),
                                                       b["hi"][b["kind"] == E.BK_ADDR].tolist())]


def assemble(cap: E.Capture):
    """-> (flows, flow per event (int32, -1 none), side per event (int8)) of a whole capture."""
    table = FlowTable()
    flow_of, side_of = table.assign(cap)
    return table.flows, flow_of, side_of


# ---- sender directions -> scoreboard input, chunk by chunk ----

class FlowEvents:
    """One flow's events in one chunk: `rows` (chunk indices, in order), `side`, and each field
    gathered once and shared by all the flow's levels (`events["seq"]`)."""

    def __init__(self, cap: E.Capture, rows, side):
        self.cap, self.rows, self.side = cap, rows, side
        self.blocks = cap.blocks
        self._fields = {}

    def __getitem__(self, name):
        values = self._fields.get(name)
        if values is None:
            values = self._fields[name] = self.cap.ev[name][self.rows]
        return values


@dataclass
class ScoreboardInput:
    """The scoreboard's input from one chunk for one level: pos (positions in FlowEvents, in order),
    kind 0 data [lo, hi) of `size` payload bytes / 1 ack (cum = hi, blocks bstart .. + bcount), and
    per row the event's conn, time and frame."""

    pos: np.ndarray
    kind: np.ndarray     # int8
    lo: np.ndarray       # int64
    hi: np.ndarray
    size: np.ndarray
    bstart: np.ndarray   # int64 into blo / bhi / bnr
    bcount: np.ndarray   # int32
    conn: np.ndarray     # int32
    time_ns: np.ndarray  # int64
    frame: np.ndarray    # uint32
    blo: np.ndarray
    bhi: np.ndarray
    bnr: np.ndarray      # int8: non-renegable
    serial: np.ndarray   # per row: the unwrapped 64-bit TSN / seq / DSN (data) or cum ack

    def rows(self, keep):
        """The rows where `keep` holds, with all the blocks."""
        return ScoreboardInput(*(getattr(self, name)[keep] for name in ROW_FIELDS), self.blo, self.bhi, self.bnr, self.serial[keep])


ROW_FIELDS = ("pos", "kind", "lo", "hi", "size", "bstart", "bcount", "conn", "time_ns", "frame")
_ROW_DTYPES = (np.int64, np.int8, np.int64, np.int64, np.int64, np.int64, np.int32, np.int32, np.int64, np.uint32)
_BLOCK_DTYPES = (np.int64, np.int64, np.int8)
LEVEL_TCP, LEVEL_SCTP = 0, 1  # _levels.c


def handshake_space(events: "FlowEvents", protocol, conn, sender):
    """A fresh space anchored as in the plugins (docs/scoreboard.md "anchor") when this chunk holds the
    sender's handshake: TCP, its SYN's ISN + 1 (the first byte); SCTP, the initial TSN of its INIT (side
    0) or INIT-ACK (side 1). Else None: the first serial seen anchors."""
    ev, mine = events.cap.ev, events.rows[events.side == sender]
    if protocol == LEVEL_TCP:
        opening = mine[(ev["conn"][mine] == conn) & ((ev["tcp_flags"][mine] & E.TCP_SYN) != 0)][:1]
        initial = ev["seq"][opening].astype(np.uint64) + 1
    else:
        opening = mine[ev["chunk"][mine] == (2 if sender else 1)][:1]
        initial = ev["seq"][opening].astype(np.uint64)
    return anchored_space(int(initial[0])) if len(opening) else None


def handshake_spaces(cap, order, sides, groups) -> list:
    """handshake_space of many TCP levels of one chunk at once: groups [(lo, hi, conn, sender)], each a level's
    rows order[lo:hi] (sides[lo:hi] theirs). The first SYN of the sender's rows anchors where its conn is the
    level's (else handshake_space looks further, as for a capture mixing conns in a flow's rows)."""
    ev = cap.ev
    syn = (ev["tcp_flags"][order] & E.TCP_SYN) != 0
    firsts = [np.flatnonzero(syn & (sides == side)) for side in (0, 1)]
    out = []
    for lo, hi, conn, sender in groups:
        candidates = firsts[sender]
        at = int(np.searchsorted(candidates, lo))
        if at == len(candidates) or candidates[at] >= hi:
            out.append(None)
            continue
        row = order[candidates[at]]
        if ev["conn"][row] == conn:
            out.append(anchored_space(int(ev["seq"][row]) + 1))
        else:
            out.append(handshake_space(FlowEvents(cap, order[lo:hi], sides[lo:hi]), LEVEL_TCP, conn, sender))
    return out


def anchored_space(first_serial) -> tuple:
    """A fresh space anchored at first_serial (its low 32 bits)."""
    return _native.unwrap(np.array([first_serial & 0xFFFFFFFF], np.uint64), None)[2]


def _compiled(call, level, events: "FlowEvents", protocol, conn, never_renege):
    """_levels.c's one pass over the flow's rows (call: _native.level_part, or a Board's feed_level that feeds it
    too) -> the call's first two results; carries the level's `space`, `nr_seen` and far serials."""
    if level.space is None:
        level.space = handshake_space(events, protocol, conn, level.sender)
    first, second, level.space, nr_seen, (far, far_frame) = call(
        events.cap.ev, events.blocks, events.rows, events.side, protocol, conn, level.sender, level.space, never_renege)
    level.nr_seen |= nr_seen
    level.far.add(far, far_frame)
    return first, second


def _compiled_part(level, events: "FlowEvents", protocol, conn, never_renege) -> ScoreboardInput:
    rows, blocks = _compiled(_native.level_part, level, events, protocol, conn, never_renege)
    row_arrays = [np.frombuffer(a, t) for a, t in zip(rows, _ROW_DTYPES)]
    return ScoreboardInput(*row_arrays, *(np.frombuffer(a, t) for a, t in zip(blocks, _BLOCK_DTYPES)), row_arrays[2])


def _part(events, pos, is_data, lo, hi, size, blocks, serial):
    bstart, bcount, blo, bhi, bnr = blocks
    return ScoreboardInput(pos, np.where(is_data, 0, 1).astype(np.int8), lo.astype(np.int64), hi.astype(np.int64),
                size.astype(np.int64), bstart.astype(np.int64), bcount.astype(np.int32), events["conn"][pos],
                events["time_ns"][pos], events["frame"][pos], blo.astype(np.int64), bhi.astype(np.int64),
                bnr.astype(np.int8), serial)


def _by_owner(events, pos, kinds):
    """Blocks of the given kinds belonging to the events at `pos` (in order) and per-row local start/count."""
    counts = events["blk_count"][pos].astype(np.int64)
    owner = np.repeat(np.arange(len(pos)), counts)
    index = expand_runs(events["blk_start"][pos], counts)
    keep = np.isin(events.blocks["kind"][index], kinds)
    index, owner = index[keep], owner[keep]
    bcount = np.bincount(owner, minlength=len(pos)).astype(np.int32)
    bstart = np.concatenate(([0], np.cumsum(bcount)[:-1])).astype(np.int64)
    return index, owner, bstart, bcount


def expand_runs(starts, counts) -> np.ndarray:
    """starts[i] .. starts[i] + counts[i] - 1 for every i, concatenated."""
    counts = np.asarray(counts, np.int64)
    offsets = np.cumsum(counts) - counts
    return (np.repeat(np.asarray(starts, np.int64) - offsets, counts) + np.arange(int(counts.sum()))).astype(np.int64)


class _SpaceLevel:
    """What every level with a sequence space of its own carries from chunk to chunk."""

    def __init__(self, sender):
        self.sender = sender
        self.space = None  # the sequence space's unwrapping state (flows.unwrap32)
        self.nr_seen = False
        self.far = FarSerials()


class TcpLevel(_SpaceLevel):
    """TCP level of one conn in direction `sender`: the sender's seq space, its data and the peer's acks."""

    units = False
    gap_from_sacked = False

    def __init__(self, conn, sender, flow=None):
        super().__init__(sender)
        # the peer's never-renege flag comes with the handshake, which may end in a later chunk
        self.conn, self.flow = conn, flow

    def build(self, events: FlowEvents) -> ScoreboardInput:
        never_renege = self.flow is not None and self.flow.never_renege[1 - self.sender]
        return _compiled_part(self, events, LEVEL_TCP, self.conn, never_renege)

    def feed_board(self, board, events: FlowEvents):
        """build() and the Board fed with it, in one compiled call: -> (ROW_DTYPE records as bytes, Board.feed's
        tallies)."""
        never_renege = self.flow is not None and self.flow.never_renege[1 - self.sender]
        return _compiled(board.feed_level, self, events, LEVEL_TCP, self.conn, never_renege)

    def feed_acks(self, board, events: FlowEvents, positions=False):
        """feed_board of a chunk that brings a direction without data only acks without blocks (Board.feed_acks:
        the receiver's direction of a bulk transfer) -> (the rows the level kept, with positions their pos and
        serial arrays, else None), or None (not such a chunk: nothing done)."""
        if self.space is None:
            self.space = handshake_space(events, LEVEL_TCP, self.conn, self.sender)
        quiet = board.feed_acks(events.cap.ev, events.blocks, events.rows, events.side, LEVEL_TCP, self.conn,
                                self.sender, self.space, False, positions)
        if quiet is None:
            return None
        kept, self.space, (far, far_frame), pos, serial = quiet
        self.far.add(far, far_frame)
        if positions:
            pos, serial = np.frombuffer(pos, np.int64), np.frombuffer(serial, np.int64)
        return kept, pos, serial


_NO_PATHS = np.empty(0, np.int32)


class SctpLevel(_SpaceLevel):
    """One SCTP association direction. Positions are TSNs: data t covers [t, t + 1), a cum ack c ends
    at c + 1, a gap block covers cum + Start .. cum + End. For its paths (SctpPathLevel) it also
    tells, per data row, the path of the TSN's first transmission, from a table kept from the cum
    ack up."""

    units = True
    gap_from_sacked = False

    def __init__(self, sender):
        super().__init__(sender)
        self.cum_tsn = np.iinfo(np.int64).min
        self.first_tsn = np.empty(0, np.int64)  # sorted
        self.first_conn = np.empty(0, np.int32)
        # While every data chunk came on one path (its conn; None: no data yet), the table is that path's alone:
        # the data TSNs above the cum ack, unsorted and with repeats, made into first_tsn when a second path
        # sends data (_one_path). A sort per flow and chunk cost a tenth of a capture of single-path associations.
        self.one_conn = None
        self.one_path_tsn = np.empty(0, np.int64)
        self.part = self.path_of = None        # the last chunk's ScoreboardInput and per row the path it counts for

    def build(self, events: FlowEvents) -> ScoreboardInput:
        self.part = part = _compiled_part(self, events, LEVEL_SCTP, -1, False)
        # no rows (the receiver's direction of a one-way transfer, every chunk): nothing for the table to learn
        self.path_of = self._paths(part.conn, part.lo, part.kind == 0) if len(part.pos) else _NO_PATHS
        return part

    def _one_path(self, conn, u, is_data):
        """_paths while every data chunk so far came on one path: -> its result, or None once data comes on
        another (the table made whole then, as _paths would have kept it)."""
        data_conn = conn[is_data]
        if self.one_conn is not False and len(data_conn):
            low, high = int(data_conn.min()), int(data_conn.max())
            if low != high or (self.one_conn is not None and low != self.one_conn):
                # the table _paths keeps: each TSN above the cum ack sent so far, first sent on the one path
                kept = self.one_path_tsn
                self.first_tsn = np.unique(kept[kept > self.cum_tsn])
                self.first_conn = np.full(len(self.first_tsn), -1 if self.one_conn is None else self.one_conn, np.int32)
                self.one_conn, self.one_path_tsn = False, None
                return None
            self.one_conn = low
        if self.one_conn is False:
            return None
        acks = u[~is_data]
        if len(acks):
            self.cum_tsn = max(self.cum_tsn, int(acks.max()))
        # a TSN at or below the cum ack is never looked up again (the cum only grows): dropped now
        kept = np.concatenate((self.one_path_tsn, u[is_data]))
        self.one_path_tsn = kept[kept > self.cum_tsn]
        return np.where(is_data, conn, -1).astype(np.int32)

    def _paths(self, conn, u, is_data):
        """Per row: the path a data chunk counts for (-1 for acks): its TSN's first transmission's, or
        its own when the TSN was cum-acked before (decision 28: the first path is forgotten by then)."""
        path = self._one_path(conn, u, is_data)
        if path is not None:
            return path
        # TSNs cum-acked by the end of the previous chunk are done with
        cut = np.searchsorted(self.first_tsn, self.cum_tsn, "right")
        self.first_tsn, self.first_conn = self.first_tsn[cut:], self.first_conn[cut:]
        reached = np.maximum.accumulate(np.concatenate(([self.cum_tsn], np.where(is_data, np.iinfo(np.int64).min, u))))
        self.cum_tsn = int(reached[-1])
        fresh = is_data & (u > reached[:-1])
        fresh_pos = np.flatnonzero(fresh)
        tsn, first = np.unique(u[fresh_pos], return_index=True)
        i = np.minimum(np.searchsorted(self.first_tsn, tsn), max(len(self.first_tsn) - 1, 0))
        known = self.first_tsn[i] == tsn if len(self.first_tsn) else np.zeros(len(tsn), bool)
        all_tsn = np.concatenate((self.first_tsn, tsn[~known]))
        order = np.argsort(all_tsn, kind="stable")
        self.first_tsn = all_tsn[order]
        self.first_conn = np.concatenate((self.first_conn, conn[fresh_pos[first]][~known].astype(np.int32)))[order]
        path = np.where(is_data, conn, -1).astype(np.int32)
        path[fresh_pos] = self.first_conn[np.searchsorted(self.first_tsn, u[fresh_pos])]
        return path


class SctpPathLevel:
    """The part of an association direction that one path carries: data chunks that count for it
    (SctpLevel.path_of) sent on it, and every ack (gap blocks count only over data this path sent)."""

    units = True
    gap_from_sacked = False

    def __init__(self, association: SctpLevel, conn):
        self.association, self.conn = association, conn

    @property
    def nr_seen(self):
        return self.association.nr_seen

    def build(self, events: FlowEvents) -> ScoreboardInput:
        part, path = self.association.part, self.association.path_of
        return part.rows((part.kind == 1) | ((path == self.conn) & (part.conn == self.conn)))


class MptcpLevel(_SpaceLevel):
    """MPTCP data level of direction `sender`: the data-level bytes the sender's segments carry (their
    payload that their subflow's current DSS mapping covers: a mapping's length bounds them and never
    adds any, decisions 70), DATA ACKs of the peer with its NR blocks and, as renegable blocks, the DSNs
    its subflow acks cover (decision 12: `sacked` at the data level). Numbers of 4 and 8 octets share
    one space anchored on the key's IDSN + 1 as in the plugins (_levels.c's mptcp_part)."""

    units = False
    gap_from_sacked = True

    def __init__(self, sender, flow=None):
        super().__init__(sender)
        self.flow = flow
        self.subflows = {}  # conn -> _SubflowMap
        self.maps = {}      # conn -> the subflow's current mapping (mptcp_part's)
        self.state = (None, None, False, False, None)

    def _idsn_anchor(self):
        """IDSN + 1 of the sender's key (RFC 8684 3.1: SHA-1's last 64 bits in version 0, SHA-256's
        from version 1), the first data-level number, or None without the key."""
        key = self.flow.keys[self.sender] if self.flow is not None else None
        if key is None:
            return None
        import hashlib  # here, as in the token's function above: only MPTCP needs it

        digest = hashlib.new("sha1" if self.flow.mp_version == 0 else "sha256", key.to_bytes(8, "big")).digest()
        return (int.from_bytes(digest[-8:], "big") + 1) % (1 << 64)

    def build(self, events: FlowEvents) -> ScoreboardInput:
        space, offset, pending, data_seen, _ = self.state
        anchor = self._idsn_anchor() if space is None else None
        arrays, self.state, (far, far_frame) = _native.mptcp_part(
            events.cap.ev, events.rows, events.side, self.sender, (space, offset, pending, data_seen, anchor), self.maps)
        self.far.add(far, far_frame)
        pos, kind, lo, hi, skip = (np.frombuffer(a, t) for a, t in zip(arrays, (np.int64, np.int8, np.int64, np.int64, np.int64)))
        is_data = kind == 0
        length = hi - lo
        index, owner, _, _ = _by_owner(events, pos, [E.BK_MPTCP_NR])
        acking = ~is_data[owner]  # a data segment's NR blocks ack the other way
        index, owner = index[acking], owner[acking]
        blk = events.blocks[index]
        base = lo[owner]
        self.nr_seen |= bool(len(blk))
        parts = [(owner, base + blk["lo"].astype(np.int64), base + blk["hi"].astype(np.int64))]
        for conn in distinct(events["conn"]).tolist():
            sub = self.subflows.setdefault(conn, _SubflowMap(conn, self.sender))
            parts.append(sub.acked_dsns(events, pos, lo, is_data, skip, length))
        owners = np.concatenate([p[0] for p in parts])
        order = np.argsort(owners, kind="stable")  # per ack: its NR blocks, then its subflow-acked DSNs
        bcount = np.bincount(owners, minlength=len(pos))
        bstart = np.concatenate(([0], np.cumsum(bcount)[:-1]))
        blo = np.concatenate([p[1] for p in parts])[order]
        bhi = np.concatenate([p[2] for p in parts])[order]
        bnr = np.concatenate([np.ones(len(owner), np.int8)] + [np.zeros(len(p[0]), np.int8) for p in parts[1:]])[order]
        return _part(events, pos, is_data, lo, hi, length, (bstart, bcount, blo, bhi, bnr), lo)


class _SubflowMap:
    """One subflow's DSS mappings (subflow seq -> DSN) from its lowest unacked byte up, and the DSN
    ranges its acks cover: the bytes each cum ack newly covers (since that subflow's previous DATA
    ACK segment) and its SACK blocks, mapped byte for byte."""

    def __init__(self, conn, sender):
        self.tcp = TcpLevel(conn, sender)
        self.floor = None      # the lowest mapped byte ever seen
        self.acked_to = None   # the highest cum ack seen on a DATA ACK segment
        self.map_lo = self.map_hi = self.map_dsn = np.empty(0, np.int64)

    def acked_dsns(self, events, pos, dsn, is_data, skip, length):
        """-> (index into pos, DSN lo, DSN hi) of this chunk's data-level acks; pos, dsn, is_data, skip and
        length are the data level's rows (MptcpLevel.build), whose data rows of this subflow are its
        mapped bytes: [seq + skip, + length) in the subflow's numbers."""
        conn = self.tcp.conn
        sub = self.tcp.build(events)
        data = np.flatnonzero(is_data & (events["conn"][pos] == conn))
        at = np.searchsorted(sub.pos, pos[data])
        found = at < len(sub.pos)
        found[found] = (sub.pos[at[found]] == pos[data[found]]) & (sub.kind[at[found]] == 0)
        data, at = data[found], at[found]
        map_lo = sub.serial[at] + skip[data]
        all_lo = np.concatenate((self.map_lo, map_lo))
        all_lo, first = np.unique(all_lo, return_index=True)  # a retransmission repeats its bytes
        self.map_dsn = np.concatenate((self.map_dsn, dsn[data]))[first]
        self.map_hi = np.concatenate((self.map_hi, map_lo + length[data]))[first]
        self.map_lo = all_lo
        empty = (np.empty(0, np.int64),) * 3
        if not len(self.map_lo):
            return empty
        if self.floor is None or self.map_lo[0] < self.floor:
            self.floor = int(self.map_lo[0])
        # the subflow acks that ride on DATA ACKs, also those the data level leaves out (far, or before
        # its data): they move the subflow's cum as in the plugins; only the kept ones own ranges
        acks = (sub.kind == 1) & ((events["flags"][sub.pos] & E.DATA_ACK) != 0)
        ack_rows, cum = sub.pos[acks], sub.hi[acks]
        start = self.floor if self.acked_to is None else self.acked_to
        reached = np.maximum.accumulate(np.concatenate(([start], cum)))
        ranges = [(ack_rows, np.maximum(reached[:-1], self.floor), cum)]
        if len(cum):
            self.acked_to = int(reached[-1])
        count = sub.bcount[acks]
        pick = expand_runs(sub.bstart[acks], count)
        ranges.append((np.repeat(ack_rows, count), sub.blo[pick], sub.bhi[pick]))
        out = ([], [], [])
        for owner_rows, lo, hi in ranges:
            keep = (hi > lo) & np.isin(owner_rows, pos[~is_data])
            owner_rows, lo, hi = owner_rows[keep], lo[keep], hi[keep]
            i = np.searchsorted(self.map_hi, lo, "right")
            j = np.searchsorted(self.map_lo, hi, "left")
            n = np.maximum(j - i, 0)
            k = expand_runs(i, n)  # the mappings each range overlaps
            a = np.maximum(np.repeat(lo, n), self.map_lo[k])
            b = np.minimum(np.repeat(hi, n), self.map_hi[k])
            out[0].append(np.searchsorted(pos, np.repeat(owner_rows, n)))
            out[1].append(self.map_dsn[k] + (a - self.map_lo[k]))
            out[2].append(self.map_dsn[k] + (b - self.map_lo[k]))
        if self.acked_to is not None:  # mappings wholly below the cum ack map nothing any more
            cut = np.searchsorted(self.map_hi, self.acked_to, "right")
            self.map_lo, self.map_hi, self.map_dsn = self.map_lo[cut:], self.map_hi[cut:], self.map_dsn[cut:]
        return tuple(np.concatenate(part).astype(np.int64) for part in out)
