/* nrsack.analyzer._reader.Board: a thin Python wrapper over the scoreboard core (core/scoreboard.c,
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
} Board;

static int Board_init(Board *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"units", NULL};
    int units = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|p", names, &units)) return -1;
    sb_free(&self->sb);
    sb_init(&self->sb, units);
    return 0;
}

static void Board_dealloc(Board *self) {
    sb_free(&self->sb);
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

enum { IN_KIND, IN_LO, IN_HI, IN_SIZE, IN_BSTART, IN_BCOUNT, IN_BLO, IN_BHI, IN_BNR, IN_REVOKE,
       OUT_SACK, OUT_SACKED, OUT_NR, OUT_FREED, OUT_ACKED, OUT_USACK, OUT_USACKED, OUT_UNR, OUT_FLAGS, N_ARRAYS };

static PyObject *Board_feed(Board *self, PyObject *args) {
    PyObject *o[N_ARRAYS], *paths = NULL;
    if (!PyArg_UnpackTuple(args, "feed", N_ARRAYS, N_ARRAYS + 1, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                           &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &o[14], &o[15], &o[16], &o[17], &o[18], &paths))
        return NULL;
    buf_t pb; memset(&pb, 0, sizeof pb);
    static const size_t sizes[N_ARRAYS] = {1, 8, 8, 8, 8, 4, 8, 8, 1, 1, 8, 8, 8, 8, 8, 8, 8, 8, 4};
    buf_t b[N_ARRAYS]; memset(b, 0, sizeof b);
    PyObject *result = NULL;
    Py_ssize_t n = -1, nb = -1;
    self->revoked.n = 0;
    for (int i = 0; i < N_ARRAYS; i++) {
        Py_ssize_t want = (i >= IN_BLO && i <= IN_BNR) ? nb : n;
        if (get_buf(o[i], &b[i], sizes[i], want, i >= OUT_SACK, "Board.feed") < 0) goto out;
        if (i == IN_KIND) n = b[i].b.len;
        if (i == IN_BLO) nb = b[i].b.len / 8;
    }
    if (paths && paths != Py_None && get_buf(paths, &pb, 8, n, 0, "Board.feed") < 0) goto out;
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
            if (kind[i] == 0) rc = feed_data(self, lo[i], hi[i], size[i], &fl);
            else {
                if (bc[i] < 0 || bs[i] < 0 || bs[i] + bc[i] > nb) {
                    PyErr_SetString(PyExc_ValueError, "Board.feed: block index out of range");
                    goto out;
                }
                rc = feed_ack(self, i, hi[i], blo + bs[i], bhi + bs[i], bnr + bs[i], bc[i], revoke[i],
                              pb.ok ? ((const int64_t *)pb.b.buf)[i] : 0, &fl, &freed);
            }
            if (rc < 0) { PyErr_NoMemory(); goto out; }
            if (sb->gap_open) fl |= FLAG_GAP_OPEN;
            out[OUT_SACK][i] = (int64_t)sb->sent.weight; out[OUT_SACKED][i] = (int64_t)sb->sacked.weight;
            out[OUT_NR][i] = (int64_t)sb->nracked.weight; out[OUT_FREED][i] = freed;
            out[OUT_ACKED][i] = (int64_t)sb->acked_bytes;
            out[OUT_USACK][i] = (int64_t)sb->sent.units; out[OUT_USACKED][i] = (int64_t)sb->sacked.units;
            out[OUT_UNR][i] = (int64_t)sb->nracked.units;
            o_fl[i] = fl;
        }
    }
    result = Py_None; Py_INCREF(result);
out:
    for (int i = 0; i < N_ARRAYS; i++) if (b[i].ok) PyBuffer_Release(&b[i].b);
    if (pb.ok) PyBuffer_Release(&pb.b);
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
    if (sb_copy(&copy->sb, &self->sb, keep_data) < 0) {
        Py_DECREF(copy);
        return PyErr_NoMemory();
    }
    return (PyObject *)copy;
}

static PyMethodDef Board_methods[] = {
    {"fork", (PyCFunction)Board_fork, METH_VARARGS, "fork(keep_data) -> a copy (keep_data False: the acks' state only)"},
    {"feed", (PyCFunction)Board_feed, METH_VARARGS,
     "feed(kind i1, lo i8, hi i8, size i8, bstart i8, bcount i4, blo i8, bhi i8, bnr i1, revoke i1, out_sack, "
     "out_sacked, out_nr, out_freed, out_acked, out_units_sack, out_units_sacked, out_units_nr (i8), out_flags i4)"},
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
    .tp_name = "nrsack.analyzer._reader.Board",
    .tp_basicsize = sizeof(Board),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Board_init,
    .tp_dealloc = (destructor)Board_dealloc,
    .tp_methods = Board_methods,
    .tp_getset = Board_getset,
    .tp_doc = "Board(units=False): one sender direction's scoreboard (the core), fed chunk by chunk",
};

int add_board_type(PyObject *module) {
    if (PyType_Ready(&BoardType) < 0) return -1;
    Py_INCREF(&BoardType);
    return PyModule_AddObject(module, "Board", (PyObject *)&BoardType);
}
