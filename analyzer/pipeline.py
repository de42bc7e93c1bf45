"""The pipeline under every analysis: chunks of events -> FlowTable (flows.py) -> one Sender per
sender direction, path and subflow (analysis.py, pass 1) -> Entries (pass 2). No pandas here: the
summary of a capture is made without it (model.py and stream.py turn results into DataFrames).
"""

import numpy as np

from nrsack.analyzer import analysis as A, events as E, flows as F


class Pipeline:
    """Feeds chunks of a capture to the flow table and to every entry's Sender; -> entries."""

    def __init__(self, store, keep_serials=False, on_part=None):
        self.table = F.FlowTable()
        self.store = store
        self.keep_serials = keep_serials
        self.senders = {}  # flow id -> {"main": [side 0, side 1], conn: [side 0, side 1] (paths, subflows)}
        self.end_ns = 0
        self.conns = []    # every conn seen so far (the reader's list, growing chunk by chunk)
        self.on_part = on_part  # the checker's hook: each level's rows of a chunk (Sender.on_part)
        self.on_chunk = None    # and after each chunk: on_chunk(cap, flow_of, side_of)

    def feed(self, cap: E.Capture):
        flow_of, side_of = self.table.assign(cap)
        self.conns = cap.conns
        if not len(cap.ev):
            if self.on_chunk is not None:
                self.on_chunk(cap, flow_of, side_of)
            return flow_of, side_of
        self.end_ns = max(self.end_ns, int(cap.ev["time_ns"].max()))
        # every flow's events in capture order, from one stable sort instead of a scan per flow
        order = np.argsort(flow_of, kind="stable")
        bounds = np.searchsorted(flow_of[order], np.arange(len(self.table.flows) + 1))
        for fid in np.flatnonzero(np.diff(bounds)).tolist():
            rows = order[bounds[fid]:bounds[fid + 1]]
            events = F.FlowEvents(cap, rows, side_of[rows])
            for sender in self._senders(self.table.flows[fid]):
                sender.feed(events)
        if self.on_chunk is not None:
            self.on_chunk(cap, flow_of, side_of)
        return flow_of, side_of

    def _senders(self, flow):
        mine = self.senders.setdefault(flow.id, {})
        if "main" not in mine:
            mine["main"] = [A.Sender((flow.id, side), self._level(flow, side), self.store, self.keep_serials)
                            for side in (0, 1)]
            for sender in mine["main"]:
                sender.on_part = self.on_part
        if flow.protocol == "mptcp":
            for conn in flow.conns:
                if conn not in mine:
                    mine[conn] = [A.Sender((flow.id, side, conn), F.TcpLevel(conn, side), self.store, self.keep_serials)
                                  for side in (0, 1)]
                    for sender in mine[conn]:
                        sender.on_part = self.on_part
        elif flow.protocol == "sctp" and len(flow.conns) > 1:
            for conn in flow.conns:
                if conn not in mine:
                    # until its second path showed up, an association's first path was all of it; a
                    # later path starts from the association's acks so far
                    mine[conn] = [main.fork((flow.id, side, conn), F.SctpPathLevel(main.level, conn),
                                            keep_data=conn == flow.conns[0]) for side, main in enumerate(mine["main"])]
        return [s for pair in mine.values() for s in pair]

    @staticmethod
    def _level(flow, side):
        if flow.protocol == "sctp":
            return F.SctpLevel(side)
        if flow.protocol == "tcp":
            return F.TcpLevel(flow.conns[0], side, flow)
        return F.MptcpLevel(side)

    def plan(self):
        """-> [(flow, side, entry id, main Sender, [(path id, conn, Sender)])] of every direction that sent data."""
        out = []
        for flow in self.table.flows:
            mine = self.senders.get(flow.id)
            if mine is None:
                continue
            for side in (0, 1):
                main = mine["main"][side]
                if not main.has_data:
                    continue
                entry_id = f"{flow.id}{'ab'[side]}"
                paths = []
                if flow.protocol == "mptcp" or len(flow.conns) > 1:
                    paths = [(f"{entry_id}.{k}", conn, mine[conn][side]) for k, conn in enumerate(flow.conns)
                             if mine[conn][side].has_data]
                out.append((flow, side, entry_id, main, paths))
        return out

    def entries(self, sndbuf, sinks=None):
        """Pass 2 of every Sender with data, in flow / side / path order; sinks(entry_id) -> (rtxq, blocking)."""
        entries = []
        for flow, side, entry_id, main, paths in self.plan():
            base = {"protocol": flow.protocol, "src": flow.endpoints[side], "dst": flow.endpoints[1 - side],
                    "flow": flow.id, "side": side, "level": "association" if flow.protocol == "sctp" else "connection",
                    "vantage": A.vantage(flow, side)}
            never_renege = flow.never_renege[1 - side]
            nr_sack = flow.negotiated_nr or main.level.nr_seen or never_renege
            entry = main.finish(entry_id, base, nr_sack, sndbuf, self.end_ns, *(sinks(entry_id) if sinks else ()))
            for path_id, conn, sender in paths:
                c = self.conns[conn]
                path_side = side ^ self.table.flip(conn)
                path_base = dict(base, src=c.endpoint(path_side), dst=c.endpoint(1 - path_side),
                                 level="path" if flow.protocol == "sctp" else "subflow", parent=entry_id)
                path_nr = nr_sack if flow.protocol == "sctp" else sender.level.nr_seen or never_renege
                entry.paths.append(sender.finish(path_id, path_base, path_nr, sndbuf, self.end_ns,
                                                 *(sinks(path_id) if sinks else ())))
            entries.append(entry)
        return entries
