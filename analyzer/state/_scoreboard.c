/* SPDX-License-Identifier: MIT */
/* nrsack.analyzer._native.Board: a thin Python wrapper over the scoreboard core (core/scoreboard.c,
 * docs/scoreboard.md), kept between calls so that a capture can be fed to it chunk by chunk (memory:
 * the window, not the capture). Positions are 64-bit serials unwrapped by the levels; SCTP boards
 * (units=True) count TSNs that weigh their first transmission's payload bytes.
 *
 * feed() consumes rows: kind 0 = data [lo, hi) of `size` payload bytes, kind 1 = ack with cum = hi,
 * blocks bstart .. bstart + bcount of (blo, bhi, bnr) and revoke mode `revoke` (REVOKE_NONE / ALL /
 * IN_SPAN, plus BOARD_RECEIVED: its renegable blocks are units known received, not SACK blocks:
 * the MPTCP data level, decisions 12). Per row it writes the RtxQ (bytes sent and not cum-acked), the
 * SACKed and NR-acked parts of it, the bytes this row NR-acked (freed), the bytes cum-acked since
 * the first data (acked), the same three sizes in units, and the flags (int32): the facts the rules
 * read, see FLAG_* below. An optional last array, paths (int64), names the path or subflow each row came
 * on (sb_ack's path; without it every row is path 0). revoked() gives the intervals each ack row of the
 * last feed revoked. */
#include "_analyzer.h"
#include "nrsack_core.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum {
    FLAG_CHANGED = 1, FLAG_GAP_OPEN = 2, FLAG_RETRANSMISSION = 4, FLAG_STALE = 8, FLAG_BEYOND_SENT = 16,
    FLAG_BELOW_CUM = 32, FLAG_WAS_NRACKED = 64, FLAG_R_AND_NR = 128, FLAG_OUT_OF_WINDOW = 256, FLAG_REVOKED = 512,
    FLAG_OLDER = 1024,
};
enum { BOARD_RECEIVED = 4 };  /* a revoke input bit beside the sb_revoke_t value */

typedef struct {
    PyObject_HEAD
    scoreboard_t sb;
    iset_t r, nr;         /* one ack's blocks, split by kind (plain vectors) */
    iset_t revoked;       /* plain vector: the intervals the last feed's acks revoked */
    int64_t *revoked_rows;  /* revoked_rows[k]: the row (of that feed) that revoked interval k */
    size_t revoked_cap;
    sbe_t estimate;         /* the send buffer from the waits for acks (core/sndbuf.c) */
} Board;

static int Board_init(Board *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"units", NULL};
    int units = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|p", names, &units)) return -1;
    sb_free(&self->sb);
    sb_init(&self->sb, units);
    sbe_free(&self->estimate);
    return 0;
}

static void Board_dealloc(Board *self) {
    sb_free(&self->sb);
    sbe_free(&self->estimate);
    iset_free(&self->r);
    iset_free(&self->nr);
    iset_free(&self->revoked);
    free(self->revoked_rows);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

int get_buf(PyObject *o, buf_t *b, size_t itemsize, Py_ssize_t n, int writable, const char *who) {
    if (PyObject_GetBuffer(o, &b->b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0) return -1;
    b->ok = 1;
    if ((size_t)b->b.itemsize != itemsize || (n >= 0 && b->b.len / (Py_ssize_t)itemsize != n)) {
        PyErr_Format(PyExc_ValueError, "%s: array of itemsize %zd / length %zd, expected %zu / %zd",
                     who, b->b.itemsize, b->b.len / b->b.itemsize, itemsize, n);
        return -1;
    }
    return 0;
}

/* Keeps the last ack's revoked intervals, tagged with the row of this feed. */
static int note_revoked(Board *b, Py_ssize_t row) {
    const iset_t *last = &b->sb.last_revoked;
    for (size_t k = 0; k < last->n; k++) {
        if (b->revoked.n == b->revoked_cap) {
            size_t cap = b->revoked_cap ? b->revoked_cap * 2 : 16;
            int64_t *rows = realloc(b->revoked_rows, cap * sizeof *rows);
            if (!rows) return -1;
            b->revoked_rows = rows;
            b->revoked_cap = cap;
        }
        b->revoked_rows[b->revoked.n] = row;
        if (iset_append(&b->revoked, last->v[k].lo, last->v[k].hi) < 0) return -1;
    }
    return 0;
}

static int feed_data(Board *b, int64_t lo, int64_t hi, int64_t size, int32_t *fl) {
    sb_data_facts_t f;
    uint32_t weight = size < 0 ? 0 : size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
    if (lo < 0 || hi < lo) return 0;  /* the levels never write these: nothing to feed */
    if (sb_data(&b->sb, (uint64_t)lo, (uint64_t)hi, weight, &f) < 0) return -1;
    if (f.out_of_window) *fl |= FLAG_OUT_OF_WINDOW;
    else *fl |= f.new_units ? FLAG_CHANGED : FLAG_RETRANSMISSION;
    if (f.below_cum) *fl |= FLAG_BELOW_CUM;
    if (f.was_nracked) *fl |= FLAG_WAS_NRACKED;
    return 0;
}

static int feed_ack(Board *b, Py_ssize_t row, int64_t cum, const int64_t *blo, const int64_t *bhi, const int8_t *bnr,
                    int32_t count, int8_t revoke, int64_t path, int32_t *fl, int64_t *freed) {
    sb_ack_facts_t f;
    b->r.n = b->nr.n = 0;
    for (int32_t j = 0; j < count; j++)
        if (blo[j] >= 0 && bhi[j] > blo[j] && iset_append(bnr[j] ? &b->nr : &b->r, blo[j], bhi[j]) < 0) return -1;
    int received = revoke & BOARD_RECEIVED;
    sb_revoke_t mode = (revoke & 3) == REVOKE_ALL ? REVOKE_ALL : (revoke & 3) == REVOKE_IN_SPAN ? REVOKE_IN_SPAN : REVOKE_NONE;
    if (cum < 0) cum = 0;
    if (b->sb.have_data) *fl |= FLAG_CHANGED;  /* an ack before any data of the direction (the SYN-ACK) changes nothing */
    if (sb_ack(&b->sb, (uint64_t)cum, b->r.v, received ? 0 : b->r.n, b->nr.v, b->nr.n, mode, (uint64_t)path, &f) < 0) return -1;
    if (received && sb_received(&b->sb, b->r.v, b->r.n) < 0) return -1;
    if (f.stale) *fl |= FLAG_STALE;
    if (f.beyond_sent) *fl |= FLAG_BEYOND_SENT;
    if (f.r_and_nr) *fl |= FLAG_R_AND_NR;
    if (f.older) *fl |= FLAG_OLDER;
    if (f.n_revoked) {
        *fl |= FLAG_REVOKED;
        if (note_revoked(b, row) < 0) return -1;
    }
    *freed = (int64_t)f.freed_bytes;
    return 0;
}

/* The send-buffer estimator's inputs after a row: new data (the RtxQ now), or an ack that freed room. */
static int note_estimate(Board *b, int is_data, int32_t fl, uint64_t acked_before, uint64_t data_before, int64_t freed,
                         int64_t time_ns) {
    const scoreboard_t *sb = &b->sb;
    if (is_data)
        return fl & FLAG_CHANGED ? sbe_new_data(&b->estimate, sb->sent.weight, sb->sent.weight - sb->nracked.weight,
                                                sb->data_bytes - data_before, time_ns) : 0;
    if (sb->acked_bytes > acked_before || freed > 0) sbe_freeing_ack(&b->estimate, sb->gap_open);
    return 0;
}

enum { IN_KIND, IN_LO, IN_HI, IN_SIZE, IN_BSTART, IN_BCOUNT, IN_BLO, IN_BHI, IN_BNR, IN_REVOKE,
       OUT_SACK, OUT_SACKED, OUT_NR, OUT_FREED, OUT_ACKED, OUT_USACK, OUT_USACKED, OUT_UNR, OUT_FLAGS, N_ARRAYS };

/* feed(...) -> the tallies scoreboard.DirectionAccumulator keeps, of this feed's rows (indices -1 where none):
 * (first data row, last data row, last row of new data, largest payload (0 floor), largest RtxQ sack,
 * sack - nr and sack - sacked (0 floor), retransmissions, first ack after the last data row that cum-acks
 * every byte sent so far). A dozen numpy calls a flow and chunk in Python, which a thousand flows paid
 * 60,000 times a capture. */
typedef struct {
    Py_ssize_t first_data, last_data, last_new, ending;
    int64_t max_payload, max_sack, max_nr, max_whatif, retransmissions;
} feed_tally_t;

static PyObject *Board_feed(Board *self, PyObject *args) {
    PyObject *o[N_ARRAYS], *paths = NULL, *times = NULL;
    if (!PyArg_UnpackTuple(args, "feed", N_ARRAYS, N_ARRAYS + 2, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                           &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &o[14], &o[15], &o[16], &o[17], &o[18], &paths,
                           &times))
        return NULL;
    buf_t pb, tb; memset(&pb, 0, sizeof pb); memset(&tb, 0, sizeof tb);
    static const size_t sizes[N_ARRAYS] = {1, 8, 8, 8, 8, 4, 8, 8, 1, 1, 8, 8, 8, 8, 8, 8, 8, 8, 4};
    buf_t b[N_ARRAYS]; memset(b, 0, sizeof b);
    PyObject *result = NULL;
    Py_ssize_t n = -1, nb = -1;
    feed_tally_t t = {-1, -1, -1, -1, 0, 0, 0, 0, 0};
    self->revoked.n = 0;
    for (int i = 0; i < N_ARRAYS; i++) {
        Py_ssize_t want = (i >= IN_BLO && i <= IN_BNR) ? nb : n;
        if (get_buf(o[i], &b[i], sizes[i], want, i >= OUT_SACK, "Board.feed") < 0) goto out;
        if (i == IN_KIND) n = b[i].b.len;
        if (i == IN_BLO) nb = b[i].b.len / 8;
    }
    if (paths && paths != Py_None && get_buf(paths, &pb, 8, n, 0, "Board.feed") < 0) goto out;
    if (times && times != Py_None && get_buf(times, &tb, 8, n, 0, "Board.feed") < 0) goto out;
    {
        const int8_t *kind = b[IN_KIND].b.buf, *bnr = b[IN_BNR].b.buf, *revoke = b[IN_REVOKE].b.buf;
        const int64_t *lo = b[IN_LO].b.buf, *hi = b[IN_HI].b.buf, *size = b[IN_SIZE].b.buf, *bs = b[IN_BSTART].b.buf;
        const int64_t *blo = b[IN_BLO].b.buf, *bhi = b[IN_BHI].b.buf;
        const int32_t *bc = b[IN_BCOUNT].b.buf;
        int64_t *out[OUT_FLAGS];
        for (int i = OUT_SACK; i < OUT_FLAGS; i++) out[i] = b[i].b.buf;
        int32_t *o_fl = b[OUT_FLAGS].b.buf;
        const scoreboard_t *sb = &self->sb;
        for (Py_ssize_t i = 0; i < n; i++) {
            int32_t fl = 0; int64_t freed = 0; int rc;
            uint64_t acked_before = sb->acked_bytes, data_before = sb->data_bytes;
            if (kind[i] == 0) rc = feed_data(self, lo[i], hi[i], size[i], &fl);
            else {
                if (bc[i] < 0 || bs[i] < 0 || bs[i] + bc[i] > nb) {
                    PyErr_SetString(PyExc_ValueError, "Board.feed: block index out of range");
                    goto out;
                }
                rc = feed_ack(self, i, hi[i], blo + bs[i], bhi + bs[i], bnr + bs[i], bc[i], revoke[i],
                              pb.ok ? ((const int64_t *)pb.b.buf)[i] : 0, &fl, &freed);
            }
            if (rc < 0 || note_estimate(self, kind[i] == 0, fl, acked_before, data_before, freed,
                                        tb.ok ? ((const int64_t *)tb.b.buf)[i] : 0) < 0) { PyErr_NoMemory(); goto out; }
            if (sb->gap_open) fl |= FLAG_GAP_OPEN;
            out[OUT_SACK][i] = (int64_t)sb->sent.weight; out[OUT_SACKED][i] = (int64_t)sb->sacked.weight;
            out[OUT_NR][i] = (int64_t)sb->nracked.weight; out[OUT_FREED][i] = freed;
            out[OUT_ACKED][i] = (int64_t)sb->acked_bytes;
            out[OUT_USACK][i] = (int64_t)sb->sent.units; out[OUT_USACKED][i] = (int64_t)sb->sacked.units;
            out[OUT_UNR][i] = (int64_t)sb->nracked.units;
            o_fl[i] = fl;
            if (kind[i] == 0) {
                if (t.first_data < 0) t.first_data = i;
                t.last_data = i;
                if (fl & FLAG_CHANGED) t.last_new = i;
                if (size[i] > t.max_payload) t.max_payload = size[i];
            }
            int64_t sack = out[OUT_SACK][i];
            if (sack > t.max_sack) t.max_sack = sack;
            if (sack - out[OUT_NR][i] > t.max_nr) t.max_nr = sack - out[OUT_NR][i];
            if (sack - out[OUT_SACKED][i] > t.max_whatif) t.max_whatif = sack - out[OUT_SACKED][i];
            t.retransmissions += (fl & FLAG_RETRANSMISSION) != 0;
        }
        for (Py_ssize_t i = t.last_data + 1; i < n; i++)
            if (kind[i] != 0 && out[OUT_ACKED][i] >= (int64_t)sb->data_bytes) { t.ending = i; break; }
    }
    result = Py_BuildValue("(nnnLLLLLn)", t.first_data, t.last_data, t.last_new, (long long)t.max_payload,
                           (long long)t.max_sack, (long long)t.max_nr, (long long)t.max_whatif,
                           (long long)t.retransmissions, t.ending);
out:
    for (int i = 0; i < N_ARRAYS; i++) if (b[i].ok) PyBuffer_Release(&b[i].b);
    if (pb.ok) PyBuffer_Release(&pb.b);
    if (tb.ok) PyBuffer_Release(&tb.b);
    return result;
}

/* revoked() -> flat int64 memoryview of (row, lo, hi) triples: np.asarray(...).reshape(-1, 3). */
static PyObject *Board_revoked(Board *self, PyObject *unused) {
    size_t n = self->revoked.n;
    PyObject *bytes = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(n * 3 * sizeof(int64_t)));
    if (!bytes) return NULL;
    int64_t *t = (int64_t *)PyByteArray_AS_STRING(bytes);
    for (size_t k = 0; k < n; k++) {
        t[3 * k] = self->revoked_rows[k];
        t[3 * k + 1] = (int64_t)self->revoked.v[k].lo;
        t[3 * k + 2] = (int64_t)self->revoked.v[k].hi;
    }
    PyObject *view = PyMemoryView_FromObject(bytes);
    Py_DECREF(bytes);
    if (!view) return NULL;
    PyObject *cast = PyObject_CallMethod(view, "cast", "s", "q");
    Py_DECREF(view);
    return cast;
}

/* Bytes of data the direction sent: the first transmissions' payloads. */
static PyObject *Board_data_bytes(Board *self, void *unused) {
    return PyLong_FromUnsignedLongLong(self->sb.data_bytes);
}

static PyTypeObject BoardType;

/* fork(keep_data) -> a new Board in the same state; without keep_data, only the acks' part of it
 * (cum ack, gap_open): the state of a path that has not sent yet. */
static PyObject *Board_fork(Board *self, PyObject *args) {
    int keep_data;
    if (!PyArg_ParseTuple(args, "p", &keep_data)) return NULL;
    Board *copy = (Board *)PyType_GenericNew(&BoardType, NULL, NULL);
    if (!copy) return NULL;
    if (sb_copy(&copy->sb, &self->sb, keep_data) < 0 || (keep_data && sbe_copy(&copy->estimate, &self->estimate) < 0)) {
        Py_DECREF(copy);
        return PyErr_NoMemory();
    }
    return (PyObject *)copy;
}

/* sndbuf_estimate(nr, paths) -> sbe_decide_paths's (verdict, why, sndbuf, low, high, waits, long_waits,
 * at_ceiling, above, packet, deep_waits); paths: sbe_paths_t. */
static PyObject *Board_sndbuf_estimate(Board *self, PyObject *args) {
    int nr, paths;
    if (!PyArg_ParseTuple(args, "pi", &nr, &paths)) return NULL;
    if (paths < SBE_ONE_PATH || paths > SBE_CMT_ASSOCIATION) {
        PyErr_Format(PyExc_ValueError, "paths %d is no sbe_paths_t", paths);
        return NULL;
    }
    sbe_result_t r;
    sbe_decide_paths(&self->estimate, nr, (sbe_paths_t)paths, &r);
    return Py_BuildValue("(iiKKKKKKKKK)", (int)r.verdict, (int)r.why, (unsigned long long)r.sndbuf,
                         (unsigned long long)r.low, (unsigned long long)r.high, (unsigned long long)r.waits,
                         (unsigned long long)r.long_waits, (unsigned long long)r.at_ceiling,
                         (unsigned long long)r.above, (unsigned long long)r.packet, (unsigned long long)r.deep_waits);
}

/* An sbe_decide_paths result back from Board.sndbuf_estimate's tuple. */
static int estimate_of(PyObject *t, sbe_result_t *r) {
    int verdict, why;
    unsigned long long v[9];
    if (!PyArg_ParseTuple(t, "iiKKKKKKKKK", &verdict, &why, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
                          &v[8]))
        return -1;
    if (verdict < SBE_HELD_BACK || verdict > SBE_CANNOT_TELL || why < SBE_CEILING || why > SBE_PATHS_UNTIMED) {
        PyErr_SetString(PyExc_ValueError, "sndbuf estimate: verdict or reason out of range");
        return -1;
    }
    *r = (sbe_result_t){(sbe_verdict_t)verdict, (sbe_why_t)why, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]};
    return 0;
}

/* sndbuf_verdict(estimate, vantage) -> (estimate, reason): core/sndbuf.c's sbe_vantage (a capture not by the
 * sender, or by no known end, "unknown" counting as by it) and sbe_reason, the words the plugins show. */
PyObject *sndbuf_verdict(PyObject *self, PyObject *args) {
    PyObject *t;
    const char *vantage;
    sbe_result_t r;
    if (!PyArg_ParseTuple(args, "Os", &t, &vantage) || estimate_of(t, &r) < 0) return NULL;
    sbe_vantage(&r, !strcmp(vantage, "sender") || !strcmp(vantage, "unknown"));
    char reason[256];
    sbe_reason(&r, vantage, reason, sizeof reason);
    return Py_BuildValue("(iiKKKKKKKKK)s", (int)r.verdict, (int)r.why, (unsigned long long)r.sndbuf,
                         (unsigned long long)r.low, (unsigned long long)r.high, (unsigned long long)r.waits,
                         (unsigned long long)r.long_waits, (unsigned long long)r.at_ceiling,
                         (unsigned long long)r.above, (unsigned long long)r.packet, (unsigned long long)r.deep_waits,
                         reason);
}

/* sndbuf_blocked(estimate, new b1, rtxq i8, gap_open b1, out b1, start, after_new, last_new) -> after_new:
 * core/sndbuf.c sbe_blocked over a batch of rows that starts at row `start` (pass 2's batches): out[i], the
 * row's blocked; after_new, the RtxQ after the last new data before the batch and, returned, at its end. */
PyObject *sndbuf_blocked(PyObject *self, PyObject *args) {
    PyObject *t, *o_new, *o_rtxq, *o_gap, *o_out;
    long long start, after_new, last_new;
    sbe_result_t r;
    if (!PyArg_ParseTuple(args, "OOOOOLLL", &t, &o_new, &o_rtxq, &o_gap, &o_out, &start, &after_new, &last_new) ||
        estimate_of(t, &r) < 0)
        return NULL;
    buf_t nb = {0}, qb = {0}, gb = {0}, ob = {0};
    PyObject *result = NULL;
    if (get_buf(o_rtxq, &qb, 8, -1, 0, "sndbuf_blocked") < 0) goto out;
    Py_ssize_t n = qb.b.len / 8;
    if (get_buf(o_new, &nb, 1, n, 0, "sndbuf_blocked") < 0 || get_buf(o_gap, &gb, 1, n, 0, "sndbuf_blocked") < 0 ||
        get_buf(o_out, &ob, 1, n, 1, "sndbuf_blocked") < 0)
        goto out;
    const int8_t *is_new = nb.b.buf, *gap = gb.b.buf;
    const int64_t *rtxq = qb.b.buf;
    int8_t *blocked = ob.b.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (is_new[i]) after_new = rtxq[i];
        blocked[i] = (int8_t)sbe_blocked(&r, after_new < 0 ? 0 : (uint64_t)after_new, gap[i] != 0, start + i < last_new);
    }
    result = PyLong_FromLongLong(after_new);
out:
    if (nb.ok) PyBuffer_Release(&nb.b);
    if (qb.ok) PyBuffer_Release(&qb.b);
    if (gb.ok) PyBuffer_Release(&gb.b);
    if (ob.ok) PyBuffer_Release(&ob.b);
    return result;
}

static PyMethodDef Board_methods[] = {
    {"sndbuf_estimate", (PyCFunction)Board_sndbuf_estimate, METH_VARARGS,
     "sndbuf_estimate(nr, paths) -> (verdict, why, sndbuf, low, high, waits, long_waits, at_ceiling, above, "
     "packet, deep_waits) (core/sndbuf.c sbe_decide_paths; paths: 0 one path, 1 a path of several, 2 an MPTCP "
     "data level, 3 a CMT association)"},
    {"fork", (PyCFunction)Board_fork, METH_VARARGS, "fork(keep_data) -> a copy (keep_data False: the acks' state only)"},
    {"feed", (PyCFunction)Board_feed, METH_VARARGS,
     "feed(kind i1, lo i8, hi i8, size i8, bstart i8, bcount i4, blo i8, bhi i8, bnr i1, revoke i1, out_sack, "
     "out_sacked, out_nr, out_freed, out_acked, out_units_sack, out_units_sacked, out_units_nr (i8), out_flags i4[, "
     "paths i8[, time_ns i8]]): paths, the path each ack came on; time_ns, each row's capture time (the estimator's waits)"},
    {"revoked", (PyCFunction)Board_revoked, METH_NOARGS,
     "revoked() -> int64 (row, lo, hi) triples, flat: the intervals each ack row of the last feed revoked"},
    {NULL}
};

static PyGetSetDef Board_getset[] = {
    {"data_bytes", (getter)Board_data_bytes, NULL, "bytes of data sent so far (first transmissions)", NULL},
    {NULL}
};

static PyTypeObject BoardType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "nrsack.analyzer._native.Board",
    .tp_basicsize = sizeof(Board),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Board_init,
    .tp_dealloc = (destructor)Board_dealloc,
    .tp_methods = Board_methods,
    .tp_getset = Board_getset,
    .tp_doc = "Board(units=False): one sender direction's scoreboard (the core), fed chunk by chunk",
};

/* ---- NrLedger: the checker's NR-acked pieces of one direction, each with the frame that first NR-acked it ----
 * The rules name that frame (NR-03 / TN-03 / MN-03 revocation, NR-04 / TN-04 / MN-04 retransmission), which the
 * scoreboard's merged nracked set does not keep. Pieces are sorted and disjoint but may touch: the blocks of one
 * ack stay pieces as sent (only overlapping ones join), so a finding counts the ranges its reader sees. NR blocks
 * are clipped to [cum, snd_max) of the rows the checker saw (the handshake's first unit included), not to the
 * units seen sent as the scoreboard clips them: a capture may miss data. Built on the core's interval vectors
 * (ival_t, iset_append, ivals_normalize); feed() takes a lane's rows in order and writes per row the facts
 * the rules read (docs/scoreboard.md "The checker's ledger"). */

typedef struct { iset_t s; int64_t *frame; size_t cap; } tagged_t;  /* s used as a plain vector */

static int tagged_append(tagged_t *t, uint64_t lo, uint64_t hi, int64_t frame) {
    if (t->s.n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        int64_t *f = realloc(t->frame, cap * sizeof *f);
        if (!f) return -1;
        t->frame = f;
        t->cap = cap;
    }
    t->frame[t->s.n] = frame;
    return iset_append(&t->s, lo, hi);
}

static void tagged_free(tagged_t *t) {
    iset_free(&t->s);
    free(t->frame);
    memset(t, 0, sizeof *t);
}

typedef struct {
    uint64_t count;  /* ranges found */
    ival_t first;
    int64_t frame;
} found_t;

static int found_add(found_t *f, tagged_t *out, uint64_t lo, uint64_t hi, int64_t frame) {
    if (!f->count++) { f->first = (ival_t){lo, hi}; f->frame = frame; }
    return out ? tagged_append(out, lo, hi, frame) : 0;
}

/* The parts of in[k] (trimmed below cut) that no interval of cover (sorted, disjoint) holds, in order, each with
 * its frame (frames NULL: `frame`); into *f and, when out is not NULL, out. A merge walk. */
static int minus_walk(const ival_t *in, size_t n, const int64_t *frames, int64_t frame, uint64_t cut,
                      const ival_t *cover, size_t nc, found_t *f, tagged_t *out) {
    size_t j = 0;
    for (size_t k = 0; k < n; k++) {
        uint64_t lo = in[k].lo > cut ? in[k].lo : cut, hi = in[k].hi, x = lo;
        int64_t tag = frames ? frames[k] : frame;
        if (hi <= lo) continue;
        while (j < nc && cover[j].hi <= lo) j++;
        for (size_t m = j; m < nc && cover[m].lo < hi; m++) {
            if (cover[m].lo > x && found_add(f, out, x, cover[m].lo, tag) < 0) return -1;
            if (cover[m].hi > x) x = cover[m].hi;
        }
        if (x < hi && found_add(f, out, x, hi, tag) < 0) return -1;
    }
    return 0;
}

/* The parts of the pieces (trimmed below cut) inside cover (sorted, disjoint), with their frames, into out. */
static int within_walk(const tagged_t *pieces, uint64_t cut, const ival_t *cover, size_t nc, tagged_t *out) {
    size_t j = 0;
    for (size_t k = 0; k < pieces->s.n; k++) {
        uint64_t lo = pieces->s.v[k].lo > cut ? pieces->s.v[k].lo : cut, hi = pieces->s.v[k].hi;
        if (hi <= lo) continue;
        while (j < nc && cover[j].hi <= lo) j++;
        for (size_t m = j; m < nc && cover[m].lo < hi; m++)
            if (tagged_append(out, cover[m].lo > lo ? cover[m].lo : lo, cover[m].hi < hi ? cover[m].hi : hi,
                              pieces->frame[k]) < 0) return -1;
    }
    return 0;
}

typedef struct {
    PyObject_HEAD
    tagged_t pieces;
    tagged_t work, joined;       /* scratch: an ack's in-span pieces; the pieces after an add */
    iset_t r, nr, reported, cover, claimed;  /* scratch vectors of one ack */
    int cum_known, sent_known;
    uint64_t cum, snd_max;
} NrLedger;

/* The scratch vectors go after each feed: a capture of a million flows keeps a ledger per direction. */
static void ledger_free_scratch(NrLedger *l) {
    tagged_free(&l->work);
    tagged_free(&l->joined);
    iset_free(&l->r); iset_free(&l->nr); iset_free(&l->reported);
    iset_free(&l->cover); iset_free(&l->claimed);
}

static void NrLedger_dealloc(NrLedger *self) {
    tagged_free(&self->pieces);
    ledger_free_scratch(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int copy_ivals(iset_t *dst, const iset_t *src) {
    dst->n = 0;
    for (size_t k = 0; k < src->n; k++)
        if (iset_append(dst, src->v[k].lo, src->v[k].hi) < 0) return -1;
    return 0;
}

static int by_lo_hi(const void *a, const void *b) {
    const ival_t *x = a, *y = b;
    return x->lo != y->lo ? (x->lo < y->lo ? -1 : 1) : (x->hi < y->hi ? -1 : x->hi > y->hi);
}

/* Drops the pieces below cut (the cum ack moved). */
static void ledger_trim(NrLedger *l, uint64_t cut) {
    tagged_t *p = &l->pieces;
    size_t k = 0;
    while (k < p->s.n && p->s.v[k].hi <= cut) k++;
    if (k) {
        memmove(p->s.v, p->s.v + k, (p->s.n - k) * sizeof *p->s.v);
        memmove(p->frame, p->frame + k, (p->s.n - k) * sizeof *p->frame);
        p->s.n -= k;
    }
    if (p->s.n && p->s.v[0].lo < cut) p->s.v[0].lo = cut;
}

/* Adds the blocks in l->claimed (any order; clipped already) as pieces of `frame` where no piece lies yet. */
static int ledger_add(NrLedger *l, int64_t frame) {
    iset_t *b = &l->claimed;
    if (b->n > 1) qsort(b->v, b->n, sizeof *b->v, by_lo_hi);  /* none yet: v may be NULL */
    size_t m = 0;  /* join overlapping blocks; touching ones stay apart, as sent */
    for (size_t k = 0; k < b->n; k++) {
        if (b->v[k].hi <= b->v[k].lo) continue;
        if (m && b->v[k].lo < b->v[m - 1].hi) {
            if (b->v[k].hi > b->v[m - 1].hi) b->v[m - 1].hi = b->v[k].hi;
        } else {
            b->v[m++] = b->v[k];
        }
    }
    b->n = m;
    if (!m) return 0;
    tagged_t *fresh = &l->work, *p = &l->pieces, *out = &l->joined;
    found_t f = {0};
    fresh->s.n = 0;
    if (minus_walk(b->v, b->n, NULL, frame, 0, p->s.v, p->s.n, &f, fresh) < 0) return -1;
    if (!fresh->s.n) return 0;
    out->s.n = 0;
    size_t i = 0, j = 0;
    while (i < p->s.n || j < fresh->s.n) {
        int old = j >= fresh->s.n || (i < p->s.n && p->s.v[i].lo < fresh->s.v[j].lo);
        const tagged_t *src = old ? p : fresh;
        size_t k = old ? i++ : j++;
        if (tagged_append(out, src->s.v[k].lo, src->s.v[k].hi, src->frame[k]) < 0) return -1;
    }
    tagged_t swap = *p;
    *p = *out;
    *out = swap;
    return 0;
}

/* Whether two normalized vectors share a unit. */
static int ivals_meet(const iset_t *a, const iset_t *b) {
    size_t i = 0, j = 0;
    while (i < a->n && j < b->n) {
        if (a->v[i].hi <= b->v[j].lo) i++;
        else if (b->v[j].hi <= a->v[i].lo) j++;
        else return 1;
    }
    return 0;
}

enum { LEDGER_DATA, LEDGER_ACK, LEDGER_START };
enum { FACT_COUNT, FACT_LO, FACT_HI, FACT_FRAME, FACT_R_AND_NR, N_FACTS };

/* One ack: its facts on the state before it (ranges it leaves out: every NR-acked unit above its cum for
 * SCTP, those inside its R blocks or its NR blocks' span for TCP / MPTCP; a unit in an R and an NR block),
 * then the state after it. */
static int ledger_ack(NrLedger *l, uint64_t cum, int64_t frame, int never_renege, int in_span, int64_t *facts) {
    iset_t *rep = &l->reported, *cover = &l->cover, *claimed = &l->claimed;
    if (copy_ivals(rep, &l->nr) < 0) return -1;
    if (never_renege)
        for (size_t k = 0; k < l->r.n; k++)
            if (iset_append(rep, l->r.v[k].lo, l->r.v[k].hi) < 0) return -1;
    found_t f = {0};
    if (l->pieces.s.n) {
        if (copy_ivals(cover, rep) < 0) return -1;
        cover->n = ivals_normalize(cover->v, cover->n);
        if (!in_span) {
            if (minus_walk(l->pieces.s.v, l->pieces.s.n, l->pieces.frame, 0, cum, cover->v, cover->n, &f, NULL) < 0)
                return -1;
        } else {
            /* claimed: the R blocks (renegable ones) and the span of the reported blocks, inverted ones included */
            claimed->n = 0;
            if (!never_renege && copy_ivals(claimed, &l->r) < 0) return -1;
            if (rep->n) {
                uint64_t lo = rep->v[0].lo, hi = rep->v[0].hi;
                for (size_t k = 1; k < rep->n; k++) {
                    if (rep->v[k].lo < lo) lo = rep->v[k].lo;
                    if (rep->v[k].hi > hi) hi = rep->v[k].hi;
                }
                if (iset_append(claimed, lo, hi) < 0) return -1;
            }
            claimed->n = ivals_normalize(claimed->v, claimed->n);
            l->work.s.n = 0;
            if (within_walk(&l->pieces, cum, claimed->v, claimed->n, &l->work) < 0 ||
                minus_walk(l->work.s.v, l->work.s.n, l->work.frame, 0, 0, cover->v, cover->n, &f, NULL) < 0)
                return -1;
        }
    }
    facts[FACT_COUNT] = (int64_t)f.count;
    facts[FACT_LO] = (int64_t)f.first.lo;
    facts[FACT_HI] = (int64_t)f.first.hi;
    facts[FACT_FRAME] = f.count ? f.frame : -1;
    if (l->r.n && l->nr.n) {
        if (copy_ivals(cover, &l->r) < 0 || copy_ivals(claimed, &l->nr) < 0) return -1;
        cover->n = ivals_normalize(cover->v, cover->n);
        claimed->n = ivals_normalize(claimed->v, claimed->n);
        facts[FACT_R_AND_NR] = ivals_meet(cover, claimed);
    }
    if (!l->cum_known || cum > l->cum) {
        l->cum = cum;
        l->cum_known = 1;
        ledger_trim(l, cum);
    }
    /* the reported blocks over [cum, snd_max) join the pieces (blocks over unsent data are NR-09's) */
    claimed->n = 0;
    for (size_t k = 0; k < rep->n; k++) {
        uint64_t lo = rep->v[k].lo > l->cum ? rep->v[k].lo : l->cum;
        uint64_t hi = l->sent_known && rep->v[k].hi > l->snd_max ? l->snd_max : rep->v[k].hi;
        if (iset_append(claimed, lo, hi) < 0) return -1;
    }
    return ledger_add(l, frame);
}

/* Data [lo, hi): the first piece it overlaps, clipped to it (what NR-04 / TN-04 / MN-04 name). */
static void ledger_data(NrLedger *l, uint64_t lo, uint64_t hi, int64_t *facts) {
    const tagged_t *p = &l->pieces;
    size_t a = 0, b = p->s.n;
    while (a < b) {  /* the first piece ending after lo */
        size_t m = a + (b - a) / 2;
        if (p->s.v[m].hi <= lo) a = m + 1; else b = m;
    }
    if (a < p->s.n && p->s.v[a].lo < hi) {
        facts[FACT_COUNT] = 1;
        facts[FACT_LO] = (int64_t)(p->s.v[a].lo > lo ? p->s.v[a].lo : lo);
        facts[FACT_HI] = (int64_t)(p->s.v[a].hi < hi ? p->s.v[a].hi : hi);
        facts[FACT_FRAME] = p->frame[a];
    }
    if (!l->sent_known || hi > l->snd_max) {
        l->snd_max = hi;
        l->sent_known = 1;
    }
}

enum { L_KIND, L_LO, L_HI, L_CUM, L_FRAME, L_BSTART, L_BCOUNT, L_BLO, L_BHI, L_BNR, L_FACTS, L_ARRAYS };

static PyObject *NrLedger_feed(NrLedger *self, PyObject *args) {
    PyObject *o[L_ARRAYS];
    int never_renege, in_span;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOpp", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8],
                          &o[9], &o[10], &never_renege, &in_span))
        return NULL;
    static const size_t sizes[L_ARRAYS] = {1, 8, 8, 8, 8, 8, 8, 8, 8, 1, 8};
    buf_t b[L_ARRAYS]; memset(b, 0, sizeof b);
    PyObject *result = NULL;
    Py_ssize_t n = -1, nb = -1;
    for (int i = 0; i < L_ARRAYS; i++) {
        Py_ssize_t want = (i >= L_BLO && i <= L_BNR) ? nb : i == L_FACTS ? n * N_FACTS : n;
        if (get_buf(o[i], &b[i], sizes[i], want, i == L_FACTS, "NrLedger.feed") < 0) goto out;
        if (i == L_KIND) n = b[i].b.len;
        if (i == L_BLO) nb = b[i].b.len / 8;
    }
    {
        const int8_t *kind = b[L_KIND].b.buf, *bnr = b[L_BNR].b.buf;
        const int64_t *lo = b[L_LO].b.buf, *hi = b[L_HI].b.buf, *cum = b[L_CUM].b.buf, *frame = b[L_FRAME].b.buf;
        const int64_t *bs = b[L_BSTART].b.buf, *bc = b[L_BCOUNT].b.buf, *blo = b[L_BLO].b.buf, *bhi = b[L_BHI].b.buf;
        int64_t *facts = b[L_FACTS].b.buf;
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t *fact = facts + i * N_FACTS;
            for (int k = 0; k < N_FACTS; k++) fact[k] = 0;
            fact[FACT_FRAME] = -1;
            if (lo[i] < 0 || hi[i] < 0 || cum[i] < 0) continue;  /* the levels never write these */
            if (kind[i] == LEDGER_DATA) {
                ledger_data(self, (uint64_t)lo[i], (uint64_t)hi[i], fact);
            } else if (kind[i] == LEDGER_START) {
                if (!self->sent_known) {
                    self->snd_max = (uint64_t)hi[i];
                    self->sent_known = 1;
                    if (!self->cum_known) { self->cum = (uint64_t)cum[i]; self->cum_known = 1; }
                }
            } else {
                if (bc[i] < 0 || bs[i] < 0 || bs[i] > nb || bc[i] > nb - bs[i]) {
                    PyErr_SetString(PyExc_ValueError, "NrLedger.feed: block index out of range");
                    goto out;
                }
                self->r.n = self->nr.n = 0;
                for (int64_t j = bs[i]; j < bs[i] + bc[i]; j++)
                    if (blo[j] >= 0 && bhi[j] >= 0 &&
                        iset_append(bnr[j] ? &self->nr : &self->r, (uint64_t)blo[j], (uint64_t)bhi[j]) < 0) {
                        PyErr_NoMemory();
                        goto out;
                    }
                if (ledger_ack(self, (uint64_t)cum[i], frame[i], never_renege, in_span, fact) < 0) {
                    PyErr_NoMemory();
                    goto out;
                }
            }
        }
    }
    result = Py_None; Py_INCREF(result);
out:
    ledger_free_scratch(self);
    for (int i = 0; i < L_ARRAYS; i++) if (b[i].ok) PyBuffer_Release(&b[i].b);
    return result;
}

/* pieces() -> [(lo, hi, frame), ...]: the ledger as it stands (tests, debugging). */
static PyObject *NrLedger_pieces(NrLedger *self, PyObject *unused) {
    PyObject *list = PyList_New((Py_ssize_t)self->pieces.s.n);
    if (!list) return NULL;
    for (size_t k = 0; k < self->pieces.s.n; k++) {
        PyObject *t = Py_BuildValue("(KKL)", (unsigned long long)self->pieces.s.v[k].lo,
                                    (unsigned long long)self->pieces.s.v[k].hi, (long long)self->pieces.frame[k]);
        if (!t) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, (Py_ssize_t)k, t);
    }
    return list;
}

static PyMethodDef NrLedger_methods[] = {
    {"feed", (PyCFunction)NrLedger_feed, METH_VARARGS,
     "feed(kind i1 (0 data, 1 ack, 2 start), lo i8, hi i8, cum i8, frame i8, bstart i8, bcount i8, blo i8, bhi i8, "
     "bnr i1, facts i8 (rows x 5: count, lo, hi, frame, r_and_nr), never_renege, in_span)"},
    {"pieces", (PyCFunction)NrLedger_pieces, METH_NOARGS, "pieces() -> [(lo, hi, frame)]: the NR-acked pieces"},
    {NULL}
};

static PyTypeObject NrLedgerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "nrsack.analyzer._native.NrLedger",
    .tp_basicsize = sizeof(NrLedger),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)NrLedger_dealloc,
    .tp_methods = NrLedger_methods,
    .tp_doc = "NrLedger(): one direction's NR-acked pieces with the frame that first NR-acked each (the checker's)",
};

int add_board_type(PyObject *module) {
    if (PyType_Ready(&BoardType) < 0 || PyType_Ready(&NrLedgerType) < 0) return -1;
    Py_INCREF(&BoardType);
    if (PyModule_AddObject(module, "Board", (PyObject *)&BoardType) < 0) return -1;
    Py_INCREF(&NrLedgerType);
    return PyModule_AddObject(module, "NrLedger", (PyObject *)&NrLedgerType);
}

/* ---- short TCP connections, many in one call ----
 * short_tcp_entries(events, blocks, rows, side, group_lo, group_hi, conn, flow_flags, sndbuf) -> int64
 * records, ENTRY_FIELDS per sender direction (side 0 then side 1 of each group): what DirectionAccumulator.feed
 * and DirectionAccumulator.finish (state/scoreboard.py) make of a TCP connection whose every event is rows[group_lo[g] ..
 * group_hi[g]) (in capture order, `side` per row), fed to a fresh level and Board in one go. The
 * pipeline sends here the connections that begin and end in one chunk: a call per flow direction of
 * the general path cost more than the work. flow_flags: FLOW_NEGOTIATED_NR | FLOW_NEVER_RENEGE_0 |
 * FLOW_NEVER_RENEGE_1 (Flow.negotiated_nr, never_renege); sndbuf < 0: estimated. */
enum { FLOW_NEGOTIATED_NR = 1, FLOW_NEVER_RENEGE_0 = 2, FLOW_NEVER_RENEGE_1 = 4 };
enum {
    ENTRY_HAS_DATA, ENTRY_COMPLETE, ENTRY_NR_SACK, ENTRY_FIRST_FRAME, ENTRY_T_START, ENTRY_Q_NS, ENTRY_P_NS,
    ENTRY_B_NS, ENTRY_DATA_BYTES, ENTRY_CAPACITY, ENTRY_MAX_SACK, ENTRY_MAX_NR, ENTRY_MAX_WHATIF, ENTRY_ACKED,
    ENTRY_INTERVALS, ENTRY_MAX_PAYLOAD, ENTRY_RETRANSMISSIONS, ENTRY_FAR, ENTRY_FAR_FRAME,
    ENTRY_VERDICT, ENTRY_WHY, ENTRY_SNDBUF, ENTRY_LOW, ENTRY_HIGH, ENTRY_WAITS, ENTRY_LONG_WAITS, ENTRY_AT_CEILING,
    ENTRY_ABOVE, ENTRY_PACKET, ENTRY_DEEP_WAITS,  /* sbe_result_t, as Board.sndbuf_estimate gives it */
    ENTRY_FIELDS
};

typedef struct {  /* one direction's Board outputs per row (Board.feed's) */
    int64_t *sack, *sacked, *nr, *acked;
    int32_t *flags;
} board_rows_t;

/* The level's rows in `o` (n of them) through a fresh scoreboard in b: the figures per row in r. */
static int feed_fresh(Board *b, const part_out_t *o, Py_ssize_t n, const board_rows_t *r) {
    sb_free(&b->sb);
    sb_init(&b->sb, 0);
    sbe_free(&b->estimate);
    b->revoked.n = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t fl = 0; int64_t freed = 0;
        uint64_t acked_before = b->sb.acked_bytes, data_before = b->sb.data_bytes;
        int rc = o->kind[i] == 0 ? feed_data(b, o->lo[i], o->hi[i], o->size[i], &fl)
                                 : feed_ack(b, i, o->hi[i], o->blo + o->bstart[i], o->bhi + o->bstart[i],
                                            o->bnr + o->bstart[i], o->bcount[i], REVOKE_IN_SPAN, o->conn[i], &fl, &freed);
        if (rc < 0 || note_estimate(b, o->kind[i] == 0, fl, acked_before, data_before, freed, o->time_ns[i]) < 0) return -1;
        if (b->sb.gap_open) fl |= FLAG_GAP_OPEN;
        r->sack[i] = (int64_t)b->sb.sent.weight; r->sacked[i] = (int64_t)b->sb.sacked.weight;
        r->nr[i] = (int64_t)b->sb.nracked.weight; r->acked[i] = (int64_t)b->sb.acked_bytes;
        r->flags[i] = fl;
    }
    return 0;
}

/* DirectionAccumulator.feed's tallies and DirectionAccumulator.finish's window (p, b, blocking runs) over one direction's rows. */
static void summarize(const Board *b, const part_out_t *o, Py_ssize_t n, const board_rows_t *r, int nr_known,
                      long long sndbuf, int64_t *e) {
    Py_ssize_t first = -1, last_data = -1, last_new = -1, done = -1;
    int64_t max_sack = 0, max_nr = 0, max_whatif = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (o->kind[i] == 0) {
            if (first < 0) first = i;
            last_data = i;
            if (r->flags[i] & FLAG_CHANGED) last_new = i;
            if (o->size[i] > e[ENTRY_MAX_PAYLOAD]) e[ENTRY_MAX_PAYLOAD] = o->size[i];
        }
        if (r->sack[i] > max_sack) max_sack = r->sack[i];
        if (r->sack[i] - r->nr[i] > max_nr) max_nr = r->sack[i] - r->nr[i];
        if (r->sack[i] - r->sacked[i] > max_whatif) max_whatif = r->sack[i] - r->sacked[i];
        e[ENTRY_RETRANSMISSIONS] += (r->flags[i] & FLAG_RETRANSMISSION) != 0;
    }
    e[ENTRY_MAX_SACK] = max_sack; e[ENTRY_MAX_NR] = max_nr; e[ENTRY_MAX_WHATIF] = max_whatif;
    e[ENTRY_DATA_BYTES] = (int64_t)b->sb.data_bytes;
    if (first < 0) return;
    e[ENTRY_HAS_DATA] = 1;
    e[ENTRY_FIRST_FRAME] = o->frame[first];
    e[ENTRY_T_START] = o->time_ns[first];
    /* the first ack after the last data that cum-acks all of it ends the transfer */
    for (Py_ssize_t i = last_data + 1; i < n && done < 0; i++)
        if (o->kind[i] != 0 && r->acked[i] >= e[ENTRY_DATA_BYTES]) done = i;
    if (done < 0) return;  /* incomplete: q runs to the end of the capture (the general path) */
    e[ENTRY_COMPLETE] = 1;
    int nr_sack = e[ENTRY_NR_SACK] = nr_known;
    sbe_result_t estimate;
    sbe_decide(&b->estimate, nr_sack, 0, &estimate);
    const uint64_t fields[] = {estimate.verdict, estimate.why, estimate.sndbuf, estimate.low, estimate.high,
                               estimate.waits, estimate.long_waits, estimate.at_ceiling, estimate.above, estimate.packet,
                               estimate.deep_waits};
    for (int k = 0; k < ENTRY_FIELDS - ENTRY_VERDICT; k++) e[ENTRY_VERDICT + k] = (int64_t)fields[k];
    int64_t capacity = e[ENTRY_CAPACITY] = sndbuf >= 0 ? sndbuf : (int64_t)estimate.sndbuf;
    int was_blocked = 0, was_gap = 0;
    int64_t after_new = 0;  /* the RtxQ after the last new data (estimated B) */
    for (Py_ssize_t i = first; i <= done; i++) {
        int64_t rtxq = nr_sack ? r->sack[i] - r->nr[i] : r->sack[i];
        if (o->kind[i] == 0 && (r->flags[i] & FLAG_CHANGED)) after_new = rtxq;
        int gap = (r->flags[i] & FLAG_GAP_OPEN) != 0;
        int blocked = sndbuf >= 0 ? capacity - rtxq < e[ENTRY_MAX_PAYLOAD]
                                  : sbe_blocked(&estimate, (uint64_t)after_new, gap, i < last_new);
        if (was_blocked) {  /* a row's time counts until the next row */
            int64_t dt = o->time_ns[i] - o->time_ns[i - 1];
            e[ENTRY_B_NS] += dt;
            if (was_gap) e[ENTRY_P_NS] += dt;
        }
        e[ENTRY_INTERVALS] += blocked && !was_blocked;
        was_blocked = blocked; was_gap = gap;
    }
    e[ENTRY_ACKED] = r->acked[done];
    e[ENTRY_Q_NS] = o->time_ns[done] - o->time_ns[first];
}

PyObject *short_tcp_entries(PyObject *self, PyObject *args) {
    PyObject *o_ev, *o_bk, *o_rows, *o_side, *o_lo, *o_hi, *o_conn, *o_flags;
    long long sndbuf;
    if (!PyArg_ParseTuple(args, "OOOOOOOOL", &o_ev, &o_bk, &o_rows, &o_side, &o_lo, &o_hi, &o_conn, &o_flags, &sndbuf))
        return NULL;
    buf_t ev = {0}, bk = {0}, rows = {0}, side = {0}, glo = {0}, ghi = {0}, gconn = {0}, gflags = {0};
    PyObject *records = NULL, *result = NULL;
    Board b;
    memset(&b, 0, sizeof b);
    sb_init(&b.sb, 0);
    int64_t *scratch = NULL;
    if (get_buf(o_ev, &ev, sizeof(event_t), -1, 0, "short_tcp_entries") < 0 ||
        get_buf(o_bk, &bk, sizeof(block_t), -1, 0, "short_tcp_entries") < 0 ||
        get_buf(o_rows, &rows, 8, -1, 0, "short_tcp_entries") < 0 ||
        get_buf(o_side, &side, 1, rows.b.len / 8, 0, "short_tcp_entries") < 0 ||
        get_buf(o_lo, &glo, 8, -1, 0, "short_tcp_entries") < 0 ||
        get_buf(o_hi, &ghi, 8, glo.b.len / 8, 0, "short_tcp_entries") < 0 ||
        get_buf(o_conn, &gconn, 4, glo.b.len / 8, 0, "short_tcp_entries") < 0 ||
        get_buf(o_flags, &gflags, 1, glo.b.len / 8, 0, "short_tcp_entries") < 0)
        goto out;
    const event_t *e = ev.b.buf;
    const block_t *blocks = bk.b.buf;
    const int64_t *row = rows.b.buf, *lo = glo.b.buf, *hi = ghi.b.buf;
    const int8_t *sides = side.b.buf, *flow_flags = gflags.b.buf;
    const int32_t *conn = gconn.b.buf;
    Py_ssize_t n_rows = rows.b.len / 8, n_groups = glo.b.len / 8, n_events = ev.b.len / (Py_ssize_t)sizeof(event_t);
    Py_ssize_t n_blocks = bk.b.len / (Py_ssize_t)sizeof(block_t), longest = 0;
    for (Py_ssize_t g = 0; g < n_groups; g++) {
        if (lo[g] < 0 || hi[g] < lo[g] || hi[g] > n_rows) {
            PyErr_SetString(PyExc_IndexError, "short_tcp_entries: group out of range");
            goto out;
        }
        if (hi[g] - lo[g] > longest) longest = hi[g] - lo[g];
    }
    for (Py_ssize_t i = 0; i < n_rows; i++)
        if (row[i] < 0 || row[i] >= n_events) {
            PyErr_SetString(PyExc_IndexError, "short_tcp_entries: row out of range");
            goto out;
        }
    /* per row: pos lo hi size bstart time_ns, sack sacked nr acked (int64), kind, bcount conn frame flags;
     * per block of the chunk: blo bhi bnr */
    size_t L = (size_t)longest + 1, B = (size_t)n_blocks + 1;
    scratch = malloc(L * (10 * 8 + 1 + 4 * 4) + B * (2 * 8 + 1));
    if (!scratch) { PyErr_NoMemory(); goto out; }
    int64_t *p64 = scratch;
    part_out_t o = {p64, p64 + L, p64 + 2 * L, p64 + 3 * L, p64 + 4 * L, p64 + 5 * L};
    board_rows_t r = {p64 + 6 * L, p64 + 7 * L, p64 + 8 * L, p64 + 9 * L};
    o.blo = p64 + 10 * L; o.bhi = o.blo + B;
    int32_t *p32 = (int32_t *)(o.bhi + B);
    o.bcount = p32; o.conn = p32 + L; o.frame = (uint32_t *)(p32 + 2 * L); r.flags = p32 + 3 * L;
    o.kind = (int8_t *)(p32 + 4 * L); o.bnr = o.kind + L;
    char *out;
    if (!(records = PyByteArray_FromStringAndSize(NULL, n_groups * 2 * ENTRY_FIELDS * 8))) goto out;
    out = PyByteArray_AS_STRING(records);
    memset(out, 0, (size_t)n_groups * 2 * ENTRY_FIELDS * 8);
    for (Py_ssize_t g = 0; g < n_groups; g++) {
        for (int sender = 0; sender < 2; sender++) {
            int64_t *entry = (int64_t *)out + (2 * g + sender) * ENTRY_FIELDS;
            int peer_never_renege = (flow_flags[g] & (sender ? FLOW_NEVER_RENEGE_0 : FLOW_NEVER_RENEGE_1)) != 0;
            level_t lv = {LEVEL_TCP, sender, peer_never_renege, conn[g]};
            serial_space_t space;
            memset(&space, 0, sizeof space);
            Py_ssize_t j = 0, jb = 0;
            int nr_seen = 0;
            for (Py_ssize_t i = lo[g]; i < hi[g]; i++) {
                const event_t *x = e + row[i];
                int kept = level_row(&lv, &space, x, sides[i] == sender, i - lo[g], blocks, n_blocks, &o, j, &jb,
                                     &nr_seen);
                if (kept < 0) goto out;
                if (kept == LEVEL_ROW_FAR && !entry[ENTRY_FAR]++) entry[ENTRY_FAR_FRAME] = x->frame;
                j += kept == LEVEL_ROW_KEPT;
            }
            if (feed_fresh(&b, &o, j, &r) < 0) { PyErr_NoMemory(); goto out; }
            summarize(&b, &o, j, &r, nr_seen || peer_never_renege || (flow_flags[g] & FLOW_NEGOTIATED_NR), sndbuf,
                      entry);
        }
    }
    result = records;
    records = NULL;
out:
    Py_XDECREF(records);
    free(scratch);
    sb_free(&b.sb);
    iset_free(&b.r);
    iset_free(&b.nr);
    iset_free(&b.revoked);
    free(b.revoked_rows);
    buf_t *held[] = {&ev, &bk, &rows, &side, &glo, &ghi, &gconn, &gflags};
    for (size_t k = 0; k < sizeof held / sizeof *held; k++)
        if (held[k]->ok) PyBuffer_Release(&held[k]->b);
    return result;
}
