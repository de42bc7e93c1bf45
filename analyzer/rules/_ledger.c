/* SPDX-License-Identifier: MIT */
/* nrsack.analyzer._native.NrLedger: the checker's (rules/checker.py) record of which units each direction
 * NR-acked and in which frame, beside the scoreboard the state stage keeps (state/_scoreboard.c). */
#include "_analyzer.h"
#include "nrsack_core.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

int add_ledger_type(PyObject *module) {
    if (PyType_Ready(&NrLedgerType) < 0) return -1;
    Py_INCREF(&NrLedgerType);
    return PyModule_AddObject(module, "NrLedger", (PyObject *)&NrLedgerType);
}
