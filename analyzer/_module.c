/* SPDX-License-Identifier: MIT */
/* nrsack.analyzer._native: the module, its functions gathered from the stages' files (read/_reader.c,
 * state/_levels.c, state/_scoreboard.c, state/_fin_closes.c, state/_flows.c, rules/_ledger.c, views/_layout.c), and malloc's options. */
#include "_analyzer.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

/* glibc hands freed blocks above its mmap threshold back to the kernel, and the next chunk's arrays
 * of the same size are faulted in again page by page: on a 10M-packet capture that was a quarter of
 * the run, all in system time. Keeping freed memory in the heap (up to a bound) reuses it instead. */
static PyObject *keep_freed_memory(PyObject *self, PyObject *unused) {
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  /* glibc's maximum: chunk-sized arrays come from the heap */
    mallopt(M_TRIM_THRESHOLD, 1 << 30);   /* and stay there when freed, up to 1 GB */
    mallopt(M_TOP_PAD, 64 << 20);
#endif
    Py_RETURN_NONE;
}

/* Between the phases of a run, the heap's freed pages go back to the kernel (malloc_trim): the in-memory
 * analysis frees pass 1's rows entry by entry while it writes the tables' capture-wide columns, and a streamed
 * run's pass 1 and spill replay free hundreds of MB of small blocks at a million flows; glibc keeps those for
 * later small blocks, not for the large columns (each its own mapping), so they stayed counted beside them. */
static PyObject *release_freed_memory(PyObject *self, PyObject *unused) {
#ifdef __GLIBC__
    malloc_trim(0);
#endif
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"keep_freed_memory", keep_freed_memory, METH_NOARGS, "keep freed memory for reuse (glibc malloc options)"},
    {"release_freed_memory", release_freed_memory, METH_NOARGS, "hand the heap's free pages back (glibc malloc_trim)"},
    {"level_part", level_part, METH_VARARGS,
     "level_part(events, blocks, rows, side, protocol (0 TCP, 1 SCTP), conn, sender, state, never_renege) -> "
     "(row arrays, block arrays, state, nr_seen, (far rows left out, first frame)): one sender direction's "
     "scoreboard input (see _levels.c)"},
    {"feed_levels", feed_levels, METH_VARARGS,
     "Board.feed_level of many TCP levels of one chunk in one call (see _scoreboard.c)"},
    {"plain_tcp_flows", plain_tcp_flows, METH_VARARGS,
     "plain_tcp_flows(events, blocks, order, sides, group_lo, group_hi) -> i1 per group: which connections' rows "
     "the checker finds quiet, which sent data (see _levels.c)"},
    {"short_tcp_entries", short_tcp_entries, METH_VARARGS,
     "short_tcp_entries(events, blocks, rows, side, group_lo, group_hi, conn, flow_flags, sndbuf[, end_ns[, by_sender]]) -> int64 "
     "records: Sender.feed and finish of TCP connections given whole, in one call (see _scoreboard.c)"},
    {"sndbuf_verdict", sndbuf_verdict, METH_VARARGS,
     "sndbuf_verdict(estimate, vantage) -> (estimate, reason): core/sndbuf.c's sbe_vantage and sbe_reason"},
    {"sndbuf_blocked", sndbuf_blocked, METH_VARARGS,
     "sndbuf_blocked(estimate, new b1, rtxq i8, gap_open b1, out b1, start, after_new, last_new) -> after_new: "
     "core/sndbuf.c's sbe_blocked per row (see _scoreboard.c)"},
    {"window_add", window_add, METH_VARARGS,
     "window_add(state, time_ns i8, blocked b1, gap_open b1) -> state: the p/b/q window over a batch of rows "
     "(state: p_ns, b_ns, intervals, last time, have_last, was_blocked, was_gap; see _scoreboard.c)"},
    {"window_close", window_close_py, METH_VARARGS,
     "window_close(state, end_ns, complete) -> (state, end of q): the last row's time counted until the end of q"},
    {"conn_present", conn_present, METH_VARARGS,
     "conn_present(events, n_conns) -> bytearray of bools: the conns with an event in the chunk (state/flows.py)"},
    {"conn_flows", conn_flows, METH_VARARGS,
     "conn_flows(events, conn_flow i4, conn_flip i1) -> (flow i4, side i1 bytearrays): each event's flow and side "
     "(state/flows.py FlowTable.assign)"},
    {"chunk_scan", chunk_scan, METH_VARARGS,
     "chunk_scan(events) -> (least time, greatest time, greatest frame, marks 1: SCTP end chunk, 2: TCP FIN or RST) "
     "(state/pipeline.py)"},
    {"flow_groups", flow_groups, METH_VARARGS,
     "flow_groups(keys i4) -> (order, starts as int64 bytearrays) of the rows with keys >= 0 grouped stably by key, or "
     "None (state/pipeline.py)"},
    {"handshake_rows", handshake_rows, METH_VARARGS,
     "handshake_rows(events) -> int64 rows: SCTP INIT, INIT-ACK, COOKIE-ECHO, TCP SYNs, MP_CAPABLE (state/flows.py)"},
    {"summary_pack", summary_pack, METH_VARARGS,
     "summary_pack(pieces) -> (packed bytes, bases, wide): a chunk's pass-1 rows as SummaryStore writes them "
     "(state/stores.py)"},
    {"summary_unpack", summary_unpack, METH_VARARGS,
     "summary_unpack(packed, wide, bases, counts) -> (int64 columns, bits) bytearrays: summary_pack's rows read back "
     "(state/stores.py)"},
    {"fill_layout", fill_layout, METH_VARARGS,
     "fill_layout(pieces, values, fallback) -> str: the values' JSON text between the pieces, len(pieces) - 1 "
     "values a run (views/formats.py)"},
    {"tcp_fin_closes", tcp_fin_closes, METH_VARARGS,
     "tcp_fin_closes(events, rows, fin_end, fin_acked, closed) -> int64 rows where a TCP connection closed "
     "(state/pipeline.py)"},
    {"mptcp_part", mptcp_part, METH_VARARGS,
     "mptcp_part(events, rows, side, sender, state, maps) -> ((pos, kind, lo, hi, skip), state, (far rows left out, "
     "first frame)): one chunk of an MPTCP data level, the bytes its mappings cover of the payload carried (see _levels.c)"},
    {"unwrap", unwrap_serials, METH_VARARGS,
     "unwrap(values u8, state) -> (serials i8, kept b1, state, (far rows left out, first index)): core/serial.c's rule"},
    {NULL}
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_native", "the compiled half of nrsack.analyzer: reader, levels, scoreboard", -1, module_methods};

PyMODINIT_FUNC PyInit__native(void) {
    PyObject *m = PyModule_Create(&moduledef);
    if (!m) return NULL;
    if (add_reader_type(m) < 0 || add_board_type(m) < 0 || add_ledger_type(m) < 0) { Py_DECREF(m); return NULL; }
    PyModule_AddIntConstant(m, "EVENT_SIZE", sizeof(event_t));
    PyModule_AddIntConstant(m, "BLOCK_SIZE", sizeof(block_t));
    return m;
}
