/* SPDX-License-Identifier: MIT */
/* nrsack.analyzer._native.conn_present / conn_flows: a chunk's events to their flows (state/flows.py
 * FlowTable.assign) in one pass over the event records each, where numpy's bincount and gathers of the
 * records' strided conn and dir fields took ten passes (a twentieth of a long transfer's summary). */
#include "_analyzer.h"

/* a chunk's records are read once each (a pass over them costs what the work in it does): an event naming a
 * conn outside the tables, or a dir other than 0 or 1, is found in the same pass and raised after it */
static PyObject *bad_event(const event_t *e, Py_ssize_t i, Py_ssize_t n_conns, const char *who) {
    PyErr_Format(PyExc_IndexError, "%s: event %zd names conn %d, dir %d (%zd conns)", who, i, (int)e[i].conn,
                 (int)e[i].dir, n_conns);
    return NULL;
}

/* conn_present(events, n_conns) -> bytearray of n_conns bools: whether each conn has an event here */
PyObject *conn_present(PyObject *self, PyObject *args) {
    PyObject *o_ev, *out = NULL;
    Py_ssize_t n_conns;
    if (!PyArg_ParseTuple(args, "On:conn_present", &o_ev, &n_conns)) return NULL;
    buf_t ev = {0};
    if (get_buf(o_ev, &ev, sizeof(event_t), -1, 0, "conn_present") == 0 &&
        (out = PyByteArray_FromStringAndSize(NULL, n_conns))) {
        uint8_t *present = (uint8_t *)PyByteArray_AS_STRING(out);
        const event_t *e = ev.b.buf;
        Py_ssize_t n = ev.b.len / (Py_ssize_t)sizeof(event_t), i = 0;
        Py_BEGIN_ALLOW_THREADS
        memset(present, 0, (size_t)n_conns);
        for (; i < n && e[i].conn >= 0 && e[i].conn < n_conns && e[i].dir <= 1; i++) present[e[i].conn] = 1;
        Py_END_ALLOW_THREADS
        if (i < n) {
            Py_CLEAR(out);
            bad_event(e, i, n_conns, "conn_present");
        }
    }
    if (ev.ok) PyBuffer_Release(&ev.b);
    return out;
}

/* conn_flows(events, conn_flow i4, conn_flip i1) -> (flow i4, side i1 as bytearrays): per event, its conn's flow
 * and its side, the event's dir flipped where its conn's is (conn_flip 1) */
PyObject *conn_flows(PyObject *self, PyObject *args) {
    PyObject *o_ev, *o_flow, *o_flip, *flows = NULL, *sides = NULL, *result = NULL;
    if (!PyArg_ParseTuple(args, "OOO:conn_flows", &o_ev, &o_flow, &o_flip)) return NULL;
    buf_t ev = {0}, flow = {0}, flip = {0};
    if (get_buf(o_flow, &flow, 4, -1, 0, "conn_flows") < 0 ||
        get_buf(o_flip, &flip, 1, flow.b.len / 4, 0, "conn_flows") < 0 ||
        get_buf(o_ev, &ev, sizeof(event_t), -1, 0, "conn_flows") < 0)
        goto out;
    Py_ssize_t n = ev.b.len / (Py_ssize_t)sizeof(event_t), n_conns = flow.b.len / 4, i = 0;
    if (!(flows = PyByteArray_FromStringAndSize(NULL, n * 4)) || !(sides = PyByteArray_FromStringAndSize(NULL, n)))
        goto out;
    int32_t *flow_of = (int32_t *)PyByteArray_AS_STRING(flows);
    int8_t *side_of = (int8_t *)PyByteArray_AS_STRING(sides);
    const event_t *e = ev.b.buf;
    const int32_t *conn_flow = flow.b.buf;
    const int8_t *conn_flip = flip.b.buf;
    Py_BEGIN_ALLOW_THREADS
    for (; i < n && e[i].conn >= 0 && e[i].conn < n_conns && e[i].dir <= 1; i++) {
        flow_of[i] = conn_flow[e[i].conn];
        side_of[i] = (int8_t)(e[i].dir ^ conn_flip[e[i].conn]);
    }
    Py_END_ALLOW_THREADS
    if (i < n) {
        bad_event(e, i, n_conns, "conn_flows");
        goto out;
    }
    result = PyTuple_Pack(2, flows, sides);
out:
    Py_XDECREF(flows);
    Py_XDECREF(sides);
    buf_t *held[] = {&ev, &flow, &flip};
    for (size_t k = 0; k < sizeof held / sizeof *held; k++)
        if (held[k]->ok) PyBuffer_Release(&held[k]->b);
    return result;
}

/* handshake_rows(events) -> int64 rows (bytearray): the events a handshake's parts can be among (FlowTable._refine):
 * SCTP INIT, INIT-ACK and COOKIE-ECHO chunks, TCP SYNs, MP_CAPABLE options; one pass where numpy made five */
PyObject *handshake_rows(PyObject *self, PyObject *args) {
    PyObject *o_ev, *out = NULL;
    if (!PyArg_ParseTuple(args, "O:handshake_rows", &o_ev)) return NULL;
    buf_t ev = {0};
    if (get_buf(o_ev, &ev, sizeof(event_t), -1, 0, "handshake_rows") == 0) {
        const event_t *e = ev.b.buf;
        Py_ssize_t n = ev.b.len / (Py_ssize_t)sizeof(event_t), found = 0;
        int64_t *rows = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *rows);
        if (!rows) {
            PyErr_NoMemory();
        } else {
            Py_BEGIN_ALLOW_THREADS
            for (Py_ssize_t i = 0; i < n; i++)
                if (e[i].chunk == 1 || e[i].chunk == 2 || e[i].chunk == 10 || (e[i].tcp_flags & TCP_FLAG_SYN)
                    || (e[i].flags & EV_MP_CAPABLE))
                    rows[found++] = i;
            Py_END_ALLOW_THREADS
            out = PyByteArray_FromStringAndSize((const char *)rows, found * (Py_ssize_t)sizeof *rows);
            PyMem_Free(rows);
        }
    }
    if (ev.ok) PyBuffer_Release(&ev.b);
    return out;
}
