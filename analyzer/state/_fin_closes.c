/* SPDX-License-Identifier: MIT */
/* nrsack.analyzer._native.tcp_fin_closes: where TCP connections close, for the pipeline's release of flows. */
#include "_analyzer.h"

/* ---- where TCP connections close (state/pipeline.py Pipeline._ending_rows) ----
 * tcp_fin_closes(events, rows, fin_end, fin_acked, closed) -> int64 rows: follows the events
 * rows[...] (in order, TCP) through each connection's FIN state and returns the rows at which one
 * closed: both FINs acked, or a RST. Per conn c: fin_end[2c + dir] the sequence number after dir's FIN
 * (-1: none yet), fin_acked[2c + dir] whether the other side acked it, closed[c] (rows of a closed conn
 * are passed over); all three updated in place. */
PyObject *tcp_fin_closes(PyObject *self, PyObject *args) {
    PyObject *o_ev, *o_rows, *o_end, *o_acked, *o_closed;
    if (!PyArg_ParseTuple(args, "OOOOO:tcp_fin_closes", &o_ev, &o_rows, &o_end, &o_acked, &o_closed))
        return NULL;
    buf_t ev = {0}, rows = {0}, end = {0}, acked = {0}, closed = {0};
    PyObject *out = NULL, *result = NULL;
    if (get_buf(o_ev, &ev, sizeof(event_t), -1, 0, "tcp_fin_closes") < 0 ||
        get_buf(o_rows, &rows, 8, -1, 0, "tcp_fin_closes") < 0 ||
        get_buf(o_closed, &closed, 1, -1, 1, "tcp_fin_closes") < 0 ||
        get_buf(o_end, &end, 8, 2 * closed.b.len, 1, "tcp_fin_closes") < 0 ||
        get_buf(o_acked, &acked, 1, 2 * closed.b.len, 1, "tcp_fin_closes") < 0)
        goto out;
    const event_t *e = ev.b.buf;
    const int64_t *row = rows.b.buf;
    int64_t *fin_end = end.b.buf;
    uint8_t *fin_acked = acked.b.buf, *is_closed = closed.b.buf;
    Py_ssize_t n_rows = rows.b.len / 8, n_events = ev.b.len / (Py_ssize_t)sizeof(event_t), n_conns = closed.b.len;
    if (!(out = PyByteArray_FromStringAndSize(NULL, n_rows * 8))) goto out;
    int64_t *closes = (int64_t *)PyByteArray_AS_STRING(out);
    Py_ssize_t n_closes = 0;
    for (Py_ssize_t i = 0; i < n_rows; i++) {
        if (row[i] < 0 || row[i] >= n_events || e[row[i]].conn < 0 || e[row[i]].conn >= n_conns || e[row[i]].dir > 1) {
            PyErr_SetString(PyExc_IndexError, "tcp_fin_closes: row or conn out of range");
            goto out;
        }
        const event_t *x = e + row[i];
        Py_ssize_t c = x->conn;
        int d = x->dir;
        if (is_closed[c]) continue;
        if (!(x->tcp_flags & TCP_FLAG_RST)) {
            int64_t other = fin_end[2 * c + 1 - d];
            if ((x->tcp_flags & TCP_FLAG_ACK) && other >= 0 && (((int64_t)x->ack - other) & 0xFFFFFFFF) < ((int64_t)1 << 31))
                fin_acked[2 * c + 1 - d] = 1;
            if (x->tcp_flags & TCP_FLAG_FIN)  /* the FIN takes one sequence number after the segment's data */
                fin_end[2 * c + d] = ((int64_t)x->seq + x->len + 1 + ((x->tcp_flags & TCP_FLAG_SYN) != 0)) & 0xFFFFFFFF;
            if (!(fin_acked[2 * c] && fin_acked[2 * c + 1])) continue;
        }
        fin_end[2 * c] = fin_end[2 * c + 1] = -1;
        fin_acked[2 * c] = fin_acked[2 * c + 1] = 0;
        is_closed[c] = 1;
        closes[n_closes++] = row[i];
    }
    if (PyByteArray_Resize(out, n_closes * 8) < 0) goto out;
    result = out;
    out = NULL;
out:
    Py_XDECREF(out);
    buf_t *held[] = {&ev, &rows, &end, &acked, &closed};
    for (size_t k = 0; k < sizeof held / sizeof *held; k++)
        if (held[k]->ok) PyBuffer_Release(&held[k]->b);
    return result;
}
