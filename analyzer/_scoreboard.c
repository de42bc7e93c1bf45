/* nrsack.analyzer._reader.Board: the per-direction scoreboard of metrics.md / decisions.md, kept
 * between calls so that a capture can be fed to it chunk by chunk (memory: the window, not the
 * capture).
 *
 * Positions are 64-bit serial numbers already unwrapped by flows.py. In byte mode (TCP, MPTCP) a
 * position is a byte and weighs 1. In unit mode (SCTP) a position is a TSN and weighs the payload
 * bytes of its first captured transmission, so every figure exists both in bytes and in TSNs; the
 * sizes of outstanding TSNs sit in a hash map that is emptied as the cumulative ack passes them.
 *
 * feed() consumes rows: kind 0 = data [lo, hi), kind 1 = ack with cum = hi and blocks
 * bstart .. bstart + bcount of (blo, bhi, bnr). Per row it writes the RtxQ (bytes sent and not
 * cum-acked), the SACKed and NR-acked parts of it, the bytes this row NR-acked (freed), the bytes
 * cum-acked since the first data (acked), the same three sizes in units, and flags:
 * 1 scoreboard changed, 2 gap_open, 4 retransmission, 8 stale ack.
 */
#include "_analyzer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- sorted disjoint interval set of [lo, hi) ---- */
typedef struct { int64_t *lo, *hi; size_t n, cap; } iset_t;

static int iset_reserve(iset_t *s, size_t n) {
    if (n <= s->cap) return 0;
    size_t cap = s->cap ? s->cap * 2 : 16;
    while (cap < n) cap *= 2;
    int64_t *a = realloc(s->lo, cap * 8), *b;
    if (!a) return -1;
    s->lo = a;
    b = realloc(s->hi, cap * 8);
    if (!b) return -1;
    s->hi = b; s->cap = cap;
    return 0;
}

static void iset_free(iset_t *s) { free(s->lo); free(s->hi); memset(s, 0, sizeof *s); }

/* ---- TSN -> first transmission's payload bytes: open addressing, deletion by backward shift ---- */
typedef struct { int64_t *key; int64_t *val; uint8_t *used; size_t cap, n; } sizemap_t;

static size_t slot_of(int64_t key, size_t cap) { return (size_t)((uint64_t)key * 0x9E3779B97F4A7C15ULL >> 20) & (cap - 1); }

static int sizemap_put(sizemap_t *m, int64_t key, int64_t val);

static int sizemap_grow(sizemap_t *m) {
    sizemap_t bigger = {0};
    bigger.cap = m->cap ? m->cap * 2 : 1024;
    bigger.key = malloc(bigger.cap * 8); bigger.val = malloc(bigger.cap * 8); bigger.used = calloc(bigger.cap, 1);
    if (!bigger.key || !bigger.val || !bigger.used) { free(bigger.key); free(bigger.val); free(bigger.used); return -1; }
    for (size_t i = 0; i < m->cap; i++)
        if (m->used[i]) sizemap_put(&bigger, m->key[i], m->val[i]);
    free(m->key); free(m->val); free(m->used);
    *m = bigger;
    return 0;
}

static int sizemap_put(sizemap_t *m, int64_t key, int64_t val) {
    if ((m->n + 1) * 2 > m->cap && sizemap_grow(m) < 0) return -1;
    size_t i = slot_of(key, m->cap);
    while (m->used[i] && m->key[i] != key) i = (i + 1) & (m->cap - 1);
    if (!m->used[i]) { m->used[i] = 1; m->key[i] = key; m->n++; }
    m->val[i] = val;
    return 0;
}

static int64_t sizemap_get(const sizemap_t *m, int64_t key) {
    if (!m->cap) return 0;
    size_t i = slot_of(key, m->cap);
    while (m->used[i]) {
        if (m->key[i] == key) return m->val[i];
        i = (i + 1) & (m->cap - 1);
    }
    return 0;
}

static void sizemap_del(sizemap_t *m, int64_t key) {
    if (!m->cap) return;
    size_t mask = m->cap - 1, i = slot_of(key, m->cap);
    while (m->used[i] && m->key[i] != key) i = (i + 1) & mask;
    if (!m->used[i]) return;
    /* backward shift: move later members of the probe run into the hole, so lookups need no tombstones */
    size_t hole = i;
    for (size_t j = (i + 1) & mask; m->used[j]; j = (j + 1) & mask) {
        size_t home = slot_of(m->key[j], m->cap);
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            m->key[hole] = m->key[j]; m->val[hole] = m->val[j]; hole = j;
        }
    }
    m->used[hole] = 0;
    m->n--;
}

static void sizemap_free(sizemap_t *m) { free(m->key); free(m->val); free(m->used); memset(m, 0, sizeof *m); }

typedef struct {
    PyObject_HEAD
    int units;
    iset_t sent, sacked, nr, seen;    /* seen: every position ever captured as data */
    sizemap_t size;
    int have_data, have_cum, gap;
    int64_t cum, snd_lo, max_hi;
    int64_t m_sent, m_sacked, m_nr;   /* bytes */
    int64_t u_sent, u_sacked, u_nr;   /* units: TSNs in unit mode, bytes otherwise */
    int64_t data_weight, cum_weight;  /* bytes of every position seen; unit mode: of those below cum */
} Board;

static int64_t weigh(const Board *b, int64_t lo, int64_t hi) {
    if (!b->units) return hi - lo;
    int64_t w = 0;
    for (int64_t t = lo; t < hi; t++) w += sizemap_get(&b->size, t);
    return w;
}

/* Inserts [lo, hi) into s; adds the newly covered units to *units and their weight to *bytes. */
static int iset_add(const Board *b, iset_t *s, int64_t lo, int64_t hi, int64_t *units, int64_t *bytes) {
    if (hi <= lo) return 0;
    size_t i = 0;
    while (i < s->n && s->hi[i] < lo) i++;           /* first interval touching or after lo */
    size_t j = i;
    int64_t nlo = lo, nhi = hi, next = lo;            /* next: start of the part not yet looked at */
    while (j < s->n && s->lo[j] <= hi) {             /* intervals merging with [lo, hi) */
        if (s->lo[j] > next) { *units += s->lo[j] - next; if (bytes) *bytes += weigh(b, next, s->lo[j]); }
        if (s->hi[j] > next) next = s->hi[j];
        if (s->lo[j] < nlo) nlo = s->lo[j];
        if (s->hi[j] > nhi) nhi = s->hi[j];
        j++;
    }
    if (next < hi) { *units += hi - next; if (bytes) *bytes += weigh(b, next, hi); }
    if (j == i) {
        if (iset_reserve(s, s->n + 1) < 0) return -1;
        memmove(s->lo + i + 1, s->lo + i, (s->n - i) * 8);
        memmove(s->hi + i + 1, s->hi + i, (s->n - i) * 8);
        s->n++;
    } else if (j > i + 1) {
        memmove(s->lo + i + 1, s->lo + j, (s->n - j) * 8);
        memmove(s->hi + i + 1, s->hi + j, (s->n - j) * 8);
        s->n -= j - i - 1;
    }
    s->lo[i] = nlo; s->hi[i] = nhi;
    return 0;
}

/* Drops everything below cut, subtracting its units and weight; forget (the sent set): the TSNs
 * leave the size map and their weight moves to cum_weight. */
static void iset_trim(Board *b, iset_t *s, int64_t cut, int64_t *units, int64_t *bytes, int forget) {
    size_t whole = 0;  /* intervals sorted: the ones wholly below cut are a prefix */
    for (size_t k = 0; k < s->n && s->lo[k] < cut; k++) {
        int64_t hi = s->hi[k] < cut ? s->hi[k] : cut;
        int64_t w = weigh(b, s->lo[k], hi);
        *units -= hi - s->lo[k];
        *bytes -= w;
        if (forget && b->units) {
            b->cum_weight += w;
            for (int64_t t = s->lo[k]; t < hi; t++) sizemap_del(&b->size, t);
        }
        if (s->hi[k] > cut) s->lo[k] = cut; else whole++;
    }
    if (whole) {
        memmove(s->lo, s->lo + whole, (s->n - whole) * 8); memmove(s->hi, s->hi + whole, (s->n - whole) * 8);
        s->n -= whole;
    }
}

static int Board_init(Board *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"units", NULL};
    int units = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|p", names, &units)) return -1;
    self->units = units;
    return 0;
}

static void Board_dealloc(Board *self) {
    iset_free(&self->sent); iset_free(&self->sacked); iset_free(&self->nr); iset_free(&self->seen);
    sizemap_free(&self->size);
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

enum { IN_KIND, IN_LO, IN_HI, IN_SIZE, IN_BSTART, IN_BCOUNT, IN_BLO, IN_BHI, IN_BNR,
       OUT_SACK, OUT_SACKED, OUT_NR, OUT_FREED, OUT_ACKED, OUT_USACK, OUT_USACKED, OUT_UNR, OUT_FLAGS, N_ARRAYS };

static int64_t acked_now(const Board *b) {
    if (!b->have_cum || !b->have_data) return 0;
    if (b->units) return b->cum_weight;
    /* byte mode: the bytes seen as data below the cum ack (the tail above it is short: the window) */
    int64_t above = 0;
    for (size_t k = b->seen.n; k-- > 0 && b->seen.hi[k] > b->cum;)
        above += b->seen.hi[k] - (b->seen.lo[k] > b->cum ? b->seen.lo[k] : b->cum);
    return b->data_weight - above;
}

static int feed_data(Board *b, int64_t lo, int64_t hi, int64_t size, int8_t *fl) {
    if (!b->have_data) {
        b->have_data = 1;
        if (!b->have_cum) b->cum = lo;
        b->snd_lo = lo; b->max_hi = hi;
    }
    if (lo < b->snd_lo) b->snd_lo = lo;
    if (hi > b->max_hi) b->max_hi = hi;
    if (!b->units) {
        /* data_bytes counts each byte seen as data once: a sequence space that jumps (a capture that
         * missed data, a damaged DSS) never makes it more than the capture's data segments carry */
        int64_t fresh = 0;
        if (iset_add(b, &b->seen, lo, hi, &fresh, NULL) < 0) return -1;
        b->data_weight += fresh;
    } else {
        int64_t fresh = 0;
        if (iset_add(b, &b->seen, lo, hi, &fresh, NULL) < 0) return -1;
        if (fresh) { /* the first capture of this TSN fixes its size */
            b->data_weight += size;
            if (lo < b->cum) b->cum_weight += size;
            else if (sizemap_put(&b->size, lo, size) < 0) return -1;
        }
    }
    /* sent is a set, not a range: MPTCP sends DSNs out of order over its subflows */
    int64_t units = 0;
    if (iset_add(b, &b->sent, lo > b->cum ? lo : b->cum, hi, &units, &b->m_sent) < 0) return -1;
    b->u_sent += units;
    *fl |= units > 0 ? 1 : 4;
    return 0;
}

static int feed_ack(Board *b, int64_t c, const int64_t *blo, const int64_t *bhi, const int8_t *bnr, int32_t count,
                    int8_t *fl, int64_t *freed) {
    if (b->have_data) *fl |= 1; /* an ack before any data of the direction (the SYN-ACK) changes nothing */
    if (!b->have_cum || c >= b->cum) {
        if (!b->have_cum || c > b->cum) {
            b->cum = c; b->have_cum = 1;
            iset_trim(b, &b->sacked, c, &b->u_sacked, &b->m_sacked, 0);
            iset_trim(b, &b->nr, c, &b->u_nr, &b->m_nr, 0);
            iset_trim(b, &b->sent, c, &b->u_sent, &b->m_sent, 1); /* last: the others still weigh their TSNs */
        }
        b->gap = 0;
        for (int32_t j = 0; j < count; j++) if (bhi[j] > c) { b->gap = 1; break; }
    } else *fl |= 8;
    /* blocks count only over data sent and not cum-acked (above: NR-09, never sent) */
    for (int32_t j = 0; j < count; j++) {
        for (size_t k = 0; k < b->sent.n; k++) {
            int64_t x = b->sent.lo[k] > blo[j] ? b->sent.lo[k] : blo[j];
            int64_t y = b->sent.hi[k] < bhi[j] ? b->sent.hi[k] : bhi[j];
            if (y <= x) continue;
            if (iset_add(b, &b->sacked, x, y, &b->u_sacked, &b->m_sacked) < 0) return -1;
            if (bnr[j]) {
                int64_t before = b->m_nr;
                if (iset_add(b, &b->nr, x, y, &b->u_nr, &b->m_nr) < 0) return -1;
                *freed += b->m_nr - before;
            }
        }
    }
    return 0;
}

static PyObject *Board_feed(Board *self, PyObject *args) {
    PyObject *o[N_ARRAYS];
    if (!PyArg_UnpackTuple(args, "feed", N_ARRAYS, N_ARRAYS, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                           &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &o[14], &o[15], &o[16], &o[17]))
        return NULL;
    static const size_t sizes[N_ARRAYS] = {1, 8, 8, 8, 8, 4, 8, 8, 1, 8, 8, 8, 8, 8, 8, 8, 8, 1};
    buf_t b[N_ARRAYS]; memset(b, 0, sizeof b);
    PyObject *result = NULL;
    Py_ssize_t n = -1, nb = -1;
    for (int i = 0; i < N_ARRAYS; i++) {
        Py_ssize_t want = (i >= IN_BLO && i <= IN_BNR) ? nb : n;
        if (get_buf(o[i], &b[i], sizes[i], want, i >= OUT_SACK, "Board.feed") < 0) goto out;
        if (i == IN_KIND) n = b[i].b.len;
        if (i == IN_BLO) nb = b[i].b.len / 8;
    }
    {
        const int8_t *kind = b[IN_KIND].b.buf, *bnr = b[IN_BNR].b.buf;
        const int64_t *lo = b[IN_LO].b.buf, *hi = b[IN_HI].b.buf, *size = b[IN_SIZE].b.buf, *bs = b[IN_BSTART].b.buf;
        const int64_t *blo = b[IN_BLO].b.buf, *bhi = b[IN_BHI].b.buf;
        const int32_t *bc = b[IN_BCOUNT].b.buf;
        int64_t *out[OUT_FLAGS];
        for (int i = OUT_SACK; i < OUT_FLAGS; i++) out[i] = b[i].b.buf;
        int8_t *o_fl = b[OUT_FLAGS].b.buf;
        for (Py_ssize_t i = 0; i < n; i++) {
            int8_t fl = 0; int64_t freed = 0; int rc;
            if (kind[i] == 0) rc = feed_data(self, lo[i], hi[i], size[i], &fl);
            else {
                if (bc[i] < 0 || bs[i] < 0 || bs[i] + bc[i] > nb) {
                    PyErr_SetString(PyExc_ValueError, "Board.feed: block index out of range");
                    goto out;
                }
                rc = feed_ack(self, hi[i], blo + bs[i], bhi + bs[i], bnr + bs[i], bc[i], &fl, &freed);
            }
            if (rc < 0) { PyErr_NoMemory(); goto out; }
            if (self->gap) fl |= 2;
            out[OUT_SACK][i] = self->m_sent; out[OUT_SACKED][i] = self->m_sacked; out[OUT_NR][i] = self->m_nr;
            out[OUT_FREED][i] = freed; out[OUT_ACKED][i] = acked_now(self);
            out[OUT_USACK][i] = self->u_sent; out[OUT_USACKED][i] = self->u_sacked; out[OUT_UNR][i] = self->u_nr;
            o_fl[i] = fl;
        }
    }
    result = Py_None; Py_INCREF(result);
out:
    for (int i = 0; i < N_ARRAYS; i++) if (b[i].ok) PyBuffer_Release(&b[i].b);
    return result;
}

/* Bytes of data the direction sent: byte mode, every position seen as data once; unit mode, the
 * first transmissions' payloads. */
static PyObject *Board_data_bytes(Board *self, void *unused) {
    if (!self->have_data) return PyLong_FromLong(0);
    return PyLong_FromLongLong(self->data_weight);
}

static int iset_copy(iset_t *dst, const iset_t *src) {
    memset(dst, 0, sizeof *dst);
    if (iset_reserve(dst, src->n) < 0) return -1;
    if (src->n) { memcpy(dst->lo, src->lo, src->n * 8); memcpy(dst->hi, src->hi, src->n * 8); }
    dst->n = src->n;
    return 0;
}

static PyTypeObject BoardType;

/* fork(keep_data) -> a new Board in the same state; without keep_data, only the acks' part of it
 * (cum ack, gap_open): the state of a path that has not sent yet. */
static PyObject *Board_fork(Board *self, PyObject *args) {
    int keep_data;
    if (!PyArg_ParseTuple(args, "p", &keep_data)) return NULL;
    Board *copy = (Board *)PyType_GenericNew(&BoardType, NULL, NULL);
    if (!copy) return NULL;
    copy->units = self->units;
    copy->have_cum = self->have_cum; copy->cum = self->cum; copy->gap = self->gap;
    if (keep_data) {
        if (iset_copy(&copy->sent, &self->sent) < 0 || iset_copy(&copy->sacked, &self->sacked) < 0 ||
            iset_copy(&copy->nr, &self->nr) < 0 || iset_copy(&copy->seen, &self->seen) < 0) goto nomem;
        for (size_t i = 0; i < self->size.cap; i++)
            if (self->size.used[i] && sizemap_put(&copy->size, self->size.key[i], self->size.val[i]) < 0) goto nomem;
        copy->have_data = self->have_data; copy->snd_lo = self->snd_lo; copy->max_hi = self->max_hi;
        copy->m_sent = self->m_sent; copy->m_sacked = self->m_sacked; copy->m_nr = self->m_nr;
        copy->u_sent = self->u_sent; copy->u_sacked = self->u_sacked; copy->u_nr = self->u_nr;
        copy->data_weight = self->data_weight; copy->cum_weight = self->cum_weight;
    }
    return (PyObject *)copy;
nomem:
    Py_DECREF(copy);
    return PyErr_NoMemory();
}

static PyMethodDef Board_methods[] = {
    {"fork", (PyCFunction)Board_fork, METH_VARARGS, "fork(keep_data) -> a copy (keep_data False: the acks' state only)"},
    {"feed", (PyCFunction)Board_feed, METH_VARARGS,
     "feed(kind i1, lo i8, hi i8, size i8, bstart i8, bcount i4, blo i8, bhi i8, bnr i1, out_sack, out_sacked, "
     "out_nr, out_freed, out_acked, out_units_sack, out_units_sacked, out_units_nr (i8), out_flags i1)"},
    {NULL}
};

static PyGetSetDef Board_getset[] = {
    {"data_bytes", (getter)Board_data_bytes, NULL, "bytes of data sent so far", NULL},
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
    .tp_doc = "Board(units=False): one sender direction's scoreboard, fed chunk by chunk",
};

int add_board_type(PyObject *module) {
    if (PyType_Ready(&BoardType) < 0) return -1;
    Py_INCREF(&BoardType);
    return PyModule_AddObject(module, "Board", (PyObject *)&BoardType);
}
