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

/* chunk_scan(events) -> (least time_ns, greatest time_ns, greatest frame, marks) of a chunk (None for the three
 * without events), in one pass over the records where numpy made one a figure: marks | 1 where an SCTP ABORT or
 * SHUTDOWN-COMPLETE chunk is among them, | 2 where a TCP segment with FIN or RST is (state/pipeline.py: whether
 * a flow may end in the chunk). */
PyObject *chunk_scan(PyObject *self, PyObject *args) {
    PyObject *o_ev;
    if (!PyArg_ParseTuple(args, "O:chunk_scan", &o_ev)) return NULL;
    buf_t ev = {0};
    if (get_buf(o_ev, &ev, sizeof(event_t), -1, 0, "chunk_scan") < 0) {
        if (ev.ok) PyBuffer_Release(&ev.b);
        return NULL;
    }
    const event_t *e = ev.b.buf;
    Py_ssize_t n = ev.b.len / (Py_ssize_t)sizeof(event_t);
    int64_t t_min = INT64_MAX, t_max = INT64_MIN;
    uint32_t frame_max = 0;
    int marks = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        t_min = e[i].time_ns < t_min ? e[i].time_ns : t_min;
        t_max = e[i].time_ns > t_max ? e[i].time_ns : t_max;
        frame_max = e[i].frame > frame_max ? e[i].frame : frame_max;
        if (e[i].proto == 132 && (e[i].chunk == 6 || e[i].chunk == 14)) marks |= 1;
        if (e[i].proto == 6 && (e[i].tcp_flags & (TCP_FLAG_FIN | TCP_FLAG_RST))) marks |= 2;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&ev.b);
    if (!n) return Py_BuildValue("(OOOi)", Py_None, Py_None, Py_None, marks);
    return Py_BuildValue("(LLki)", (long long)t_min, (long long)t_max, (unsigned long)frame_max, marks);
}

/* flow_groups(keys i4) -> (order, starts as int64 bytearrays), or None when the keys span too many values: the
 * rows with a key >= 0 grouped by key, in row order within a group (np.argsort(keys, kind="stable") without
 * the rows of negative keys), and where each group starts in that order. A counting sort over the keys'
 * span: two passes where numpy's sort and the gathers around it took ten. */
PyObject *flow_groups(PyObject *self, PyObject *args) {
    PyObject *o_keys, *order = NULL, *starts = NULL, *result = NULL;
    if (!PyArg_ParseTuple(args, "O:flow_groups", &o_keys)) return NULL;
    buf_t kb = {0};
    int64_t *count = NULL;
    if (get_buf(o_keys, &kb, 4, -1, 0, "flow_groups") < 0) goto out;
    const int32_t *key = kb.b.buf;
    Py_ssize_t n = kb.b.len / 4, kept = 0;
    int32_t lo = INT32_MAX, hi = -1;
    for (Py_ssize_t i = 0; i < n; i++)
        if (key[i] >= 0) {
            kept++;
            lo = key[i] < lo ? key[i] : lo;
            hi = key[i] > hi ? key[i] : hi;
        }
    size_t span = kept ? (size_t)hi - (size_t)lo + 1 : 0;
    if (span > (size_t)n + 65536) { result = Py_NewRef(Py_None); goto out; }  /* a count per value: not worth it */
    if (!(count = calloc(span + 1, sizeof *count))) { PyErr_NoMemory(); goto out; }
    for (Py_ssize_t i = 0; i < n; i++)
        if (key[i] >= 0) count[key[i] - lo + 1]++;
    Py_ssize_t groups = 0;
    for (size_t v = 1; v <= span; v++) groups += count[v] > 0;
    if (!(order = PyByteArray_FromStringAndSize(NULL, kept * 8)) || !(starts = PyByteArray_FromStringAndSize(NULL, groups * 8)))
        goto out;
    int64_t *o = (int64_t *)PyByteArray_AS_STRING(order), *s = (int64_t *)PyByteArray_AS_STRING(starts);
    /* count[v] becomes where value v - 1 + lo's group starts; the groups' starts in value order */
    for (size_t v = 1, g = 0; v <= span; v++) {
        if (count[v]) s[g++] = count[v - 1];
        count[v] += count[v - 1];
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (key[i] >= 0) o[count[key[i] - lo]++] = i;
    result = PyTuple_Pack(2, order, starts);
out:
    free(count);
    Py_XDECREF(order);
    Py_XDECREF(starts);
    if (kb.ok) PyBuffer_Release(&kb.b);
    return result;
}
