"""The ladder view's rows: the packets of a time window in the papers' notation.

Labels come from the analyzer's events and blocks tables, in the notation of the sample timelines
(generator/timelines/notation_*.py): SCTP `DATA 11`, `DATA 11 rtx`, `S:10;2-3`, `N:10;2-4`, `N:10;R:2-3;NR:5-6`,
`INIT ext=0x10`, `FSACK-INIT ts=...` (chunks of one packet joined with " + "); TCP `SYN nrsack=0x01`,
`DATA 3`, `ACK 1 SACK 3-4 NR 5-5` (PDUs numbered from 1); MPTCP `S:7001 DSN:14001`,
`A:7001 DA:14001 SACK:8401-9801 NR:5600-7000` (bytes relative to the ISN and IDSN). Retransmissions and lost data come from the
entry's rows as its level unwrapped them (the analyzer's DirectionResult.serials, with the acks' blocks the
Board was fed): a DATA is lost when the same data leaves again later and no ack between the two
transmissions covered it (cumulatively or by a gap / NR block).
"""

import hashlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from nrsack.analyzer.read import events as E
from nrsack.analyzer.state.scoreboard import Serials

MAX_ROWS = 120
TCP_FLAG_NAMES = ((0x02, "SYN"), (0x01, "FIN"), (0x04, "RST"))


@dataclass
class Transmissions:
    """Per data event of one sender direction (the analyzer's DirectionResult.serials): retransmission or not,
    and where the same data leaves next. Positions index the entry's serial rows."""

    kept: Serials           # the entry's rows and its acks' blocks, in its level's units
    data_pos: np.ndarray    # positions of the data rows
    is_rtx: np.ndarray      # per data row
    next_pos: np.ndarray    # per data row: position of the next transmission of the same data, -1 if none
    acked_to: np.ndarray    # per position: the furthest cumulative ack so far (its level's end)


_cache = {}


def transmissions(entry) -> Transmissions:
    """Made once per entry (a sort of all its data events), then reused by every ladder window."""
    cached = _cache.get(id(entry))
    if cached is not None and cached[0] is entry:
        return cached[1]
    if len(_cache) > 32:
        _cache.clear()
    kept = entry.serials
    data = np.flatnonzero(kept.is_data)
    first = kept.serial[data]
    order = np.lexsort((data, first))
    repeat = first[order][1:] == first[order][:-1]
    is_rtx = np.zeros(len(data), bool)
    is_rtx[order[1:][repeat]] = True
    next_pos = np.full(len(data), -1, np.int64)
    next_pos[order[:-1][repeat]] = data[order[1:][repeat]]
    acks = np.where(kept.is_data, np.iinfo(np.int64).min, kept.end)
    made = Transmissions(kept, data, is_rtx, next_pos, np.maximum.accumulate(acks) if len(acks) else acks)
    _cache[id(entry)] = (entry, made)
    return made


def is_lost(tx: Transmissions, k: int) -> bool:
    """Data row k (index into tx.data_pos) left again later with no ack covering it in between: the
    level's data [serial, end) against the cum acks and the acks' gap / NR blocks, all unwrapped by
    the analyzer's level (SCTP: TSNs, a DATA is [tsn, tsn + 1); TCP: bytes; MPTCP: data-level bytes,
    its DATA ACKs' NR blocks and the DSNs their subflow acks cover)."""
    here, again = int(tx.data_pos[k]), int(tx.next_pos[k])
    if again < 0:
        return False
    kept = tx.kept
    start, end = int(kept.serial[here]), int(kept.end[here])
    if tx.acked_to[again] >= end:
        return False
    # the blocks of the acks between the two transmissions
    lo = np.searchsorted(kept.block_rows, kept.rows[here], "right")
    hi = np.searchsorted(kept.block_rows, kept.rows[again], "left")
    return not np.any((kept.block_lo[lo:hi] <= start) & (kept.block_hi[lo:hi] >= end))


def _given(value) -> bool:
    return value is not None and value is not pd.NA


def _blocks_text(blocks, kind, base=0):
    part = blocks[blocks["kind"] == kind]
    return ",".join(f"{int(lo) - base}-{int(hi) - base}" for lo, hi in zip(part["lo"], part["hi"]))


def sctp_label(event, blocks) -> str:
    kind = str(event["kind"])
    if kind == "DATA":
        return f"DATA {event['tsn']}"
    if kind in ("SACK", "NR-SACK"):
        r, nr, dup = (_blocks_text(blocks, k) for k in ("r", "nr", "dup"))
        dup = ";D:" + ",".join(str(int(lo)) for lo in blocks.loc[blocks["kind"] == "dup", "lo"]) if dup else ""
        head = f"{'S' if kind == 'SACK' else 'N'}:{event['cum_ack']}"
        if kind == "SACK":
            return head + (f";{r}" if r else "") + dup
        if r:
            return head + f";R:{r}" + (f";NR:{nr}" if nr else "") + dup
        return head + (f";{nr}" if nr else "") + dup
    if kind in ("INIT", "INIT-ACK"):
        extensions = [name for flag, name in ((E.EXT_NRSACK, "0x10"), (E.EXT_FSACK, "0xA0")) if event["flags"] & flag]
        return kind + (f" ext={','.join(extensions)}" if extensions else "")
    if kind in ("FSACK-INIT", "FSACK-ACK"):
        return f"{kind} ts={event['fsack_timestamp']}"
    if kind == "FSACK-COMPLETE":
        addresses = blocks[blocks["kind"] == "address"]
        return " ".join([kind] + [E.block_address(lo, hi) for lo, hi in zip(addresses["lo"], addresses["hi"])])
    return kind


def idsn(key) -> int:
    """MPTCP initial data sequence number of a key (RFC 8684 3.1: low 64 bits of SHA-256)."""
    return int.from_bytes(hashlib.sha256(int(key).to_bytes(8, "big")).digest()[-8:], "big")


@dataclass
class TcpNumbering:
    """What makes TCP / MPTCP numbers relative: per (path, side) ISNs, per side IDSNs, the PDU size."""

    isn: dict
    idsn: dict
    unit: int
    mptcp: bool


def tcp_numbering(analysis, summary, flow_rows) -> TcpNumbering:
    syn = analysis.events.iloc[flow_rows[:64]]
    syn = syn[syn["tcp_flags"].fillna(0).astype(int) & 0x02 != 0]
    flow = analysis.flows.set_index("flow").loc[summary["flow"]]
    keys = {side: flow[f"key_{side}"] for side in (0, 1) if _given(flow[f"key_{side}"])}
    return TcpNumbering({(path, side): int(seq) for path, side, seq in zip(syn["path"], syn["side"], syn["seq"])},
                        {side: idsn(key) for side, key in keys.items()}, max(int(summary["max_payload_bytes"]), 1),
                        summary["protocol"] == "mptcp")


def tcp_label(event, blocks, n: TcpNumbering) -> str:
    """TCP: PDUs numbered from 1 (DATA k, ACK k SACK a-b NR a-b); MPTCP: bytes relative to the
    subflow ISN and the IDSN (S:seq DSN:dsn, A:ack DA:data_ack SACK:l-r NR:start-end), as
    generator/timelines/notation_tcp.py writes them."""
    flags = int(event["tcp_flags"]) if _given(event["tcp_flags"]) else 0
    side = int(event["side"])
    own = n.isn.get((event["path"], side), 0)
    peer = n.isn.get((event["path"], 1 - side), 0)
    if flags & 0x02:
        words = ["SYN-ACK" if flags & 0x10 else "SYN"]
        if event["flags"] & E.MP_CAPABLE:
            words.append("MPC")
        elif event["flags"] & E.MP_JOIN:
            words.append("JOIN")
        if event["flags"] & E.NR_PERM:
            value = (1 if event["flags"] & E.NEVER_RENEGE else 0) | (2 if event["flags"] & E.MPTCP_NR_CAP else 0)
            words.append(f"nrsack=0x{value:02x}")
        return " ".join(words)
    words = [name for bit, name in TCP_FLAG_NAMES[1:] if flags & bit]
    rel_seq = (int(event["seq"]) - own) & 0xFFFFFFFF
    rel_ack = (int(event["tcp_ack"]) - peer) & 0xFFFFFFFF if _given(event["tcp_ack"]) else 0
    if n.mptcp:
        if event["length"]:
            dsn = (int(event["dsn"]) - n.idsn.get(side, 0)) % (1 << 64) if _given(event["dsn"]) else "?"
            return " ".join(words + [f"S:{rel_seq} DSN:{dsn}"])
        if not _given(event["data_ack"]):
            return " ".join(words + ["ACK MPC" if event["flags"] & E.MP_CAPABLE else
                                     "ACK JOIN" if event["flags"] & E.MP_JOIN else f"A:{rel_ack}"])
        words.append(f"A:{rel_ack} DA:{(int(event['data_ack']) - n.idsn.get(1 - side, 0)) % (1 << 64)}")
        sack = _blocks_text(blocks, "sack", peer)
        nr = _blocks_text(blocks, "mptcp_nr")
        return " ".join(words + ([f"SACK:{sack}"] if sack else []) + ([f"NR:{nr}"] if nr else []))
    if event["length"]:
        return " ".join(words + [f"DATA {(rel_seq - 1) // n.unit + 1}"])
    acked = (rel_ack - 1) // n.unit
    words.append(f"ACK {acked}" if acked else "ACK")
    for kind, name in (("sack", "SACK"), ("tcp_nr", "NR")):
        part = blocks[blocks["kind"] == kind]
        if len(part):
            pdus = [f"{(int(lo) - peer - 1) // n.unit + 1}-{(int(hi) - peer - 1) // n.unit}"
                    for lo, hi in zip(part["lo"], part["hi"])]
            words.append(f"{name} {','.join(pdus)}")
    return " ".join(words)


def _path_name(paths, src, dst) -> str:
    """The entry's id of the path a packet took; a path that carried no data (an FSACK return path)
    by its addresses; "" for single-path flows."""
    if not paths:
        return ""
    known = paths.get(frozenset((src, dst)))
    return known or f"{src.rpartition(':')[0]}→{dst.rpartition(':')[0]}"


def _data_row(tx: Transmissions, event: int):
    """Index of `event` among the direction's data rows, or None if it is not one."""
    rows = tx.kept.rows
    position = int(np.searchsorted(rows, event))
    if position == len(rows) or rows[position] != event:
        return None
    k = int(np.searchsorted(tx.data_pos, position))
    return k if k < len(tx.data_pos) and tx.data_pos[k] == position else None


def ladder_rows(analysis, entry, t0, t1, limit=MAX_ROWS) -> tuple:
    """(rows, total): the packets of the entry's flow with capture time in [t0, t1] (seconds since
    the epoch), at most `limit` of them, one row per frame with columns frame, time_s,
    from_sender, label, style (data, rtx, lost, ack, control), path (the entry's path / subflow id
    the packet took, "" for single-path flows); `total` counts the frames in the window."""
    summary = entry.summary
    flow_rows = np.flatnonzero(analysis.flow_of == summary["flow"])
    times = analysis.capture.ev["time_ns"][flow_rows] / 1e9
    window = flow_rows[np.searchsorted(times, t0, "left"):np.searchsorted(times, t1, "right")]
    frames_in_window = analysis.capture.ev["frame"][window]
    total = len(np.unique(frames_in_window))
    keep_frames = np.unique(frames_in_window)[:limit]
    window = window[np.isin(frames_in_window, keep_frames)]
    events = analysis.events.iloc[window]
    blocks = analysis.blocks
    block_events = blocks["event"].to_numpy()  # (the labels show the blocks as on the wire)
    tx = transmissions(entry)
    # CMT paths / MPTCP subflows: each packet names the one it took (the entry's path ids)
    paths = {frozenset((p.summary["src"], p.summary["dst"])): p.summary["id"] for p in entry.paths}
    numbering = tcp_numbering(analysis, summary, flow_rows) if summary["protocol"] != "sctp" else None
    rows = []
    for index, event in zip(window, events.to_dict("records")):
        own = blocks.iloc[np.searchsorted(block_events, index, "left"):np.searchsorted(block_events, index, "right")]
        label = sctp_label(event, own) if event["protocol"] == "sctp" else tcp_label(event, own, numbering)
        k = _data_row(tx, index)
        style = "control"
        if k is not None:
            style = "lost" if is_lost(tx, k) else "rtx" if tx.is_rtx[k] else "data"
            if tx.is_rtx[k]:
                label += " rtx"
        elif event["ack"]:
            style = "ack"
        rows.append({"frame": int(event["frame"]), "time_s": event["time_s"],
                     "from_sender": int(event["side"]) == int(summary["side"]), "label": label, "style": style,
                     "path": _path_name(paths, str(event["src"]), str(event["dst"]))})
    table = pd.DataFrame(rows, columns=["frame", "time_s", "from_sender", "label", "style", "path"])
    order = ["lost", "rtx", "data", "ack", "control"]
    merged = table.groupby("frame", sort=True).agg(
        time_s=("time_s", "first"), from_sender=("from_sender", "first"), label=("label", " + ".join),
        style=("style", lambda s: min(s, key=order.index)), path=("path", "first")).reset_index()
    return merged, total
