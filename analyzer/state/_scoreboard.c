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
enum { BOARD_RECEIVED = 4 };
enum { SCTP_NR_SACK_CHUNK = 16 };  /* a revoke input bit beside the sb_revoke_t value */

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
    if (sb->acked_bytes > acked_before || freed > 0) sbe_freeing_ack(&b->estimate, sb->gap_open, time_ns);
    return 0;
}

enum { IN_KIND, IN_LO, IN_HI, IN_SIZE, IN_BSTART, IN_BCOUNT, IN_BLO, IN_BHI, IN_BNR, IN_REVOKE,
       OUT_SACK, OUT_SACKED, OUT_NR, OUT_FREED, OUT_ACKED, OUT_USACK, OUT_USACKED, OUT_UNR, OUT_FLAGS, N_ARRAYS };

/* What one row leaves in the Board's outputs (Board.feed's out_* arrays, a row of scoreboard.ROW_DTYPE). */
typedef struct {
    int64_t sack, sacked, nr, freed, acked, usack, usacked, unr;
    int32_t flags;
} row_figures_t;

/* One row of a level (kind 0: data [lo, hi) of size bytes; else an ack with cum = hi and its blocks) through
 * the Board: the one place Board.feed, Board.feed_level and the short-TCP pass feed it. -1: out of memory. */
static int feed_row(Board *b, Py_ssize_t row, int8_t kind, int64_t lo, int64_t hi, int64_t size, const int64_t *blo,
                    const int64_t *bhi, const int8_t *bnr, int32_t count, int8_t revoke, int64_t path,
                    int64_t time_ns, row_figures_t *f) {
    int32_t fl = 0; int64_t freed = 0;
    const scoreboard_t *sb = &b->sb;
    uint64_t acked_before = sb->acked_bytes, data_before = sb->data_bytes;
    int rc = kind == 0 ? feed_data(b, lo, hi, size, &fl)
                       : feed_ack(b, row, hi, blo, bhi, bnr, count, revoke, path, &fl, &freed);
    if (rc < 0 || note_estimate(b, kind == 0, fl, acked_before, data_before, freed, time_ns) < 0) return -1;
    if (sb->gap_open) fl |= FLAG_GAP_OPEN;
    *f = (row_figures_t){(int64_t)sb->sent.weight, (int64_t)sb->sacked.weight, (int64_t)sb->nracked.weight, freed,
                         (int64_t)sb->acked_bytes, (int64_t)sb->sent.units, (int64_t)sb->sacked.units,
                         (int64_t)sb->nracked.units, fl};
    return 0;
}

/* feed(...) -> the tallies scoreboard.DirectionAccumulator keeps, of this feed's rows (indices -1 where none):
 * (first data row, last data row, last row of new data, largest payload (0 floor), largest RtxQ sack,
 * sack - nr and sack - sacked (0 floor), retransmissions, first ack after the last data row that cum-acks
 * every byte sent so far). A dozen numpy calls a flow and chunk in Python, which a thousand flows paid
 * 60,000 times a capture. */
typedef struct {
    Py_ssize_t first_data, last_data, last_new, ending;
    int64_t max_payload, max_sack, max_nr, max_whatif, retransmissions;
} feed_tally_t;

static void tally_row(feed_tally_t *t, Py_ssize_t i, int8_t kind, int64_t size, const row_figures_t *f) {
    if (kind == 0) {
        if (t->first_data < 0) t->first_data = i;
        t->last_data = i;
        if (f->flags & FLAG_CHANGED) t->last_new = i;
        if (size > t->max_payload) t->max_payload = size;
    }
    if (f->sack > t->max_sack) t->max_sack = f->sack;
    if (f->sack - f->nr > t->max_nr) t->max_nr = f->sack - f->nr;
    if (f->sack - f->sacked > t->max_whatif) t->max_whatif = f->sack - f->sacked;
    t->retransmissions += (f->flags & FLAG_RETRANSMISSION) != 0;
}

static PyObject *tally_to_py(const feed_tally_t *t) {
    return Py_BuildValue("(nnnLLLLLn)", t->first_data, t->last_data, t->last_new, (long long)t->max_payload,
                         (long long)t->max_sack, (long long)t->max_nr, (long long)t->max_whatif,
                         (long long)t->retransmissions, t->ending);
}

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
        if (i >= OUT_SACK && i < OUT_FLAGS && i != OUT_ACKED && o[i] == Py_None) continue;  /* an output not read */
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
        /* an output given as None is written to one scratch word (stride 0): no branch per row */
        int64_t *out[OUT_FLAGS], scratch = 0;
        Py_ssize_t step[OUT_FLAGS];
        for (int i = OUT_SACK; i < OUT_FLAGS; i++) {
            out[i] = b[i].ok ? b[i].b.buf : &scratch;
            step[i] = b[i].ok;
        }
        int32_t *o_fl = b[OUT_FLAGS].b.buf;
        int failed = 0;  /* 1: a block index out of range, 2: no memory (raised once the GIL is back) */
        Py_BEGIN_ALLOW_THREADS  /* plain C over this Board and buffers held: other flows' threads run meanwhile */
        for (Py_ssize_t i = 0; i < n; i++) {
            row_figures_t f;
            if (kind[i] != 0 && (bc[i] < 0 || bs[i] < 0 || bs[i] > nb || bc[i] > nb - bs[i])) {  /* no sum: it could wrap */
                failed = 1;
                break;
            }
            if (feed_row(self, i, kind[i], lo[i], hi[i], size[i], blo + bs[i], bhi + bs[i], bnr + bs[i], bc[i],
                         revoke[i], pb.ok ? ((const int64_t *)pb.b.buf)[i] : 0,
                         tb.ok ? ((const int64_t *)tb.b.buf)[i] : 0, &f) < 0) { failed = 2; break; }
            out[OUT_SACK][i * step[OUT_SACK]] = f.sack; out[OUT_SACKED][i * step[OUT_SACKED]] = f.sacked;
            out[OUT_NR][i * step[OUT_NR]] = f.nr; out[OUT_FREED][i * step[OUT_FREED]] = f.freed;
            out[OUT_ACKED][i] = f.acked; out[OUT_USACK][i * step[OUT_USACK]] = f.usack;
            out[OUT_USACKED][i * step[OUT_USACKED]] = f.usacked; out[OUT_UNR][i * step[OUT_UNR]] = f.unr;
            o_fl[i] = f.flags;
            tally_row(&t, i, kind[i], size[i], &f);
        }
        for (Py_ssize_t i = t.last_data + 1; !failed && i < n; i++)
            if (kind[i] != 0 && out[OUT_ACKED][i] >= (int64_t)self->sb.data_bytes) { t.ending = i; break; }
        Py_END_ALLOW_THREADS
        if (failed == 1) { PyErr_SetString(PyExc_ValueError, "Board.feed: block index out of range"); goto out; }
        if (failed == 2) { PyErr_NoMemory(); goto out; }
    }
    result = tally_to_py(&t);
out:
    for (int i = 0; i < N_ARRAYS; i++) if (b[i].ok) PyBuffer_Release(&b[i].b);
    if (pb.ok) PyBuffer_Release(&pb.b);
    if (tb.ok) PyBuffer_Release(&tb.b);
    return result;
}

static PyTypeObject BoardType;

/* A row of scoreboard.ROW_DTYPE (numpy packs it: no padding), what Board.feed_level writes per row. */
typedef struct __attribute__((packed)) {
    int64_t sack, sacked, nr, freed, acked, usack, usacked, unr, time_ns;
    uint32_t frame;
    int32_t flags;
    uint8_t is_data;
} board_row_t;
_Static_assert(sizeof(board_row_t) == 81, "board_row_t must match scoreboard.ROW_DTYPE");

/* The level's rows of one feed_level call: grown to the largest flow and chunk seen, never freed (a buffer per
 * call was a malloc of the chunk's every block per flow and chunk); one per thread (`--jobs` feeds flows from
 * several threads, with the GIL released). */
static _Thread_local struct { char *mem; size_t rows, blocks; part_out_t o; } level_scratch;

static int scratch_fit(Py_ssize_t rows, Py_ssize_t blocks) {
    if ((size_t)rows <= level_scratch.rows && (size_t)blocks <= level_scratch.blocks) return 0;
    size_t L = (size_t)rows + 1, B = (size_t)blocks + 1;
    if (L < 2 * level_scratch.rows) L = 2 * level_scratch.rows;
    if (B < 2 * level_scratch.blocks) B = 2 * level_scratch.blocks;
    char *mem = malloc(part_out_bytes(L, B));
    if (!mem) return -1;
    free(level_scratch.mem);
    part_out_place(&level_scratch.o, mem, L, B);
    level_scratch.mem = mem; level_scratch.rows = L; level_scratch.blocks = B;
    return 0;
}

/* feed_level(events, blocks, rows, side, protocol, conn, sender, state, never_renege)
 *   -> (ROW_DTYPE records, Board.feed's tallies, state, nr_seen, (rows left out as far, first such frame)):
 * level_part and Board.feed in one call, for a level whose ScoreboardInput nobody else reads (the summary and
 * the streamed tables of a TCP connection): no arrays per flow and chunk but the rows the store keeps. TCP:
 * every ack reports what it revokes within its span (REVOKE_IN_SPAN); SCTP: an NR-SACK revokes every
 * NR-acked TSN it leaves out (REVOKE_ALL), a SACK none. Each ack counts for the path it came on. */
/* One level's rows of a chunk (rows: event indices in order, sides per row) built and fed to the Board, a
 * ROW_DTYPE record per row kept into out (room for n_rows): -> the rows kept, -1 with an exception set
 * (level_rows raises holding the GIL it takes back), or FEED_NO_MEMORY, raised by the caller once it holds
 * the GIL; *t: Board.feed's tallies of them. The one loop of feed_level and feed_levels, run without the GIL
 * (`--jobs`: other flows' threads run meanwhile; the scratch is per thread). */
enum { FEED_NO_MEMORY = -2 };

static Py_ssize_t feed_level_rows(Board *self, const level_t *lv, serial_space_t *space, const event_t *e,
                                  Py_ssize_t n_events, const int64_t *row, const int8_t *sides, Py_ssize_t n_rows,
                                  const block_t *blocks, Py_ssize_t n_blocks, board_row_t *out, feed_tally_t *t,
                                  int *nr_seen, Py_ssize_t *far, uint32_t *far_frame, int64_t *lanes) {
    if (scratch_fit(n_rows, n_blocks) < 0) return FEED_NO_MEMORY;
    const part_out_t *o = &level_scratch.o;
    Py_ssize_t jb = 0;
    Py_ssize_t j = level_rows(lv, space, e, n_events, row, sides, n_rows, blocks, n_blocks, o, &jb, nr_seen, far,
                              far_frame);
    if (j < 0) return -1;
    *t = (feed_tally_t){-1, -1, -1, -1, 0, 0, 0, 0, 0};
    self->revoked.n = 0;
    for (Py_ssize_t i = 0; i < j; i++) {
        int8_t revoke = lv->protocol == LEVEL_TCP ? REVOKE_IN_SPAN
                        : e[row[o->pos[i]]].chunk == SCTP_NR_SACK_CHUNK ? REVOKE_ALL : REVOKE_NONE;
        row_figures_t f;
        int64_t bs = o->bstart[i];
        if (feed_row(self, i, o->kind[i], o->lo[i], o->hi[i], o->size[i], o->blo + bs, o->bhi + bs, o->bnr + bs,
                     o->bcount[i], revoke, o->conn[i], o->time_ns[i], &f) < 0) return FEED_NO_MEMORY;
        out[i] = (board_row_t){f.sack, f.sacked, f.nr, f.freed, f.acked, f.usack, f.usacked, f.unr, o->time_ns[i],
                               o->frame[i], f.flags, o->kind[i] == 0};
        tally_row(t, i, o->kind[i], o->size[i], &f);
        if (lanes) {
            int64_t *lane = lanes + 4 * i;
            lane[0] = o->pos[i]; lane[1] = o->kind[i]; lane[2] = o->lo[i]; lane[3] = o->hi[i];
        }
    }
    for (Py_ssize_t i = t->last_data + 1; i < j; i++)
        if (o->kind[i] != 0 && out[i].acked >= (int64_t)self->sb.data_bytes) { t->ending = i; break; }
    return j;
}

/* feed_level(events, blocks, rows, side, protocol, conn, sender, state, never_renege)
 *   -> (ROW_DTYPE records, Board.feed's tallies, state, nr_seen, (rows left out as far, first such frame)):
 * level_part and Board.feed in one call, for a level whose ScoreboardInput nobody else reads (the summary and
 * the streamed tables of a TCP connection): no arrays per flow and chunk but the rows the store keeps. TCP:
 * every ack reports what it revokes within its span (REVOKE_IN_SPAN); SCTP: an NR-SACK revokes every
 * NR-acked TSN it leaves out (REVOKE_ALL), a SACK none. Each ack counts for the path it came on. */
static PyObject *Board_feed_level(Board *self, PyObject *args) {
    level_args_t a;
    PyObject *records = NULL, *result = NULL;
    if (level_args(args, "feed_level", &a) < 0) goto out;
    if (!(records = PyByteArray_FromStringAndSize(NULL, a.n_rows * (Py_ssize_t)sizeof(board_row_t)))) goto out;
    int nr_seen = 0;
    Py_ssize_t far = 0, j;
    uint32_t far_frame = 0;
    feed_tally_t t;
    board_row_t *rows_out = (board_row_t *)PyByteArray_AS_STRING(records);
    Py_BEGIN_ALLOW_THREADS
    j = feed_level_rows(self, &a.lv, &a.space, a.e, a.n_events, a.row, a.sides, a.n_rows, a.blocks, a.n_blocks,
                        rows_out, &t, &nr_seen, &far, &far_frame, NULL);
    Py_END_ALLOW_THREADS
    if (j == FEED_NO_MEMORY) PyErr_NoMemory();
    if (j < 0 || PyByteArray_Resize(records, j * (Py_ssize_t)sizeof(board_row_t)) < 0) goto out;
    PyObject *tally = tally_to_py(&t), *state = space_to_py(&a.space);
    if (tally && state)
        result = Py_BuildValue("ONNO(nI)", records, tally, state, nr_seen ? Py_True : Py_False, far, far_frame);
    else {
        Py_XDECREF(tally);
        Py_XDECREF(state);
    }
out:
    Py_XDECREF(records);
    level_args_release(&a);
    return result;
}

/* feed_acks(events, blocks, rows, side, protocol, conn, sender, state, never_renege[, positions])
 *   -> None, nothing done; or (rows the level kept, state, (rows left out as far, first such frame), pos, serial):
 * feed_level of a TCP direction without data whose chunk brings it only acks without blocks (quiet_rows),
 * the receiver's direction of a bulk transfer, half of the rows. On a Board without data such an ack changes
 * nothing but the cum ack and the path of the last ack that raised it (sb_ack), so the first row of the highest
 * ack alone leaves the Board as all of them would; their records (before the first data, nobody stores them)
 * and tallies (nothing but their count) are not made. With positions, pos and serial are the kept rows' (i8
 * bytes: their index in the flow's rows, their ack unwrapped; the in-memory analysis keeps them), else None.
 * None where the Board has data or the chunk is not such. */
static PyObject *Board_feed_acks(Board *self, PyObject *args) {
    level_args_t a;
    memset(&a, 0, sizeof a);
    PyObject *result = NULL, *level = NULL, *pos = NULL, *serials = NULL;
    int positions = 0;
    Py_ssize_t n_args = PyTuple_GET_SIZE(args);
    if (n_args == 10 && (positions = PyObject_IsTrue(PyTuple_GET_ITEM(args, 9))) < 0) goto out;
    if (!(level = PyTuple_GetSlice(args, 0, 9)) || level_args(level, "feed_acks", &a) < 0) goto out;
    if (positions && (!(pos = PyByteArray_FromStringAndSize(NULL, a.n_rows * 8)) ||
                      !(serials = PyByteArray_FromStringAndSize(NULL, a.n_rows * 8))))
        goto out;
    int64_t *pos_out = pos ? (int64_t *)PyByteArray_AS_STRING(pos) : NULL;
    int64_t *serials_out = serials ? (int64_t *)PyByteArray_AS_STRING(serials) : NULL;
    Py_ssize_t far = 0, kept = -1;
    uint32_t far_frame = 0;
    int failed = 0;
    if (!self->sb.have_data) {
        Py_BEGIN_ALLOW_THREADS  /* plain C over this Board and buffers held: other flows' threads run meanwhile */
        const event_t *best;
        uint64_t serial = 0;
        kept = quiet_rows(&a.lv, &a.space, a.e, a.n_events, a.row, a.sides, a.n_rows, a.blocks, a.n_blocks, &far,
                          &far_frame, &best, &serial, pos_out, serials_out);
        row_figures_t f;
        self->revoked.n = 0;
        if (kept > 0 && feed_row(self, 0, 1, (int64_t)serial, (int64_t)serial, 0, NULL, NULL, NULL, 0, REVOKE_IN_SPAN,
                                 best->conn, best->time_ns, &f) < 0)
            failed = 1;
        Py_END_ALLOW_THREADS
    }
    if (failed) {
        PyErr_NoMemory();
    } else if (kept < 0) {
        result = Py_NewRef(Py_None);
    } else if (!pos || (PyByteArray_Resize(pos, kept * 8) == 0 && PyByteArray_Resize(serials, kept * 8) == 0)) {
        PyObject *state = space_to_py(&a.space);
        if (state)
            result = Py_BuildValue("nN(nI)OO", kept, state, far, far_frame, pos ? pos : Py_None,
                                   serials ? serials : Py_None);
    }
out:
    level_args_release(&a);
    Py_XDECREF(level);
    Py_XDECREF(pos);
    Py_XDECREF(serials);
    return result;
}

/* feed_levels(events, blocks, order, sides, group_lo, group_hi, boards, conns, senders, never_renege, states[, lanes])
 *   -> (ROW_DTYPE records of every group one after the other, rows kept per group (i8), tallies per group (i8,
 *   FEED_TALLIES: Board.feed's, then the first data row's time and frame, -1 where none), states, nr_seen per
 *   group (i1), far rows per group (i8), their first frames (i8)[, with lanes: per record its level row's
 *   (pos, kind, lo, hi) as i8, what the checker reads of a plain chunk (rules/checker.py _plain_chunk)]):
 * feed_level of many TCP levels of one chunk in one call: group g is the level of conn conns[g] in direction
 * senders[g] over rows order[group_lo[g]:group_hi[g]] (sides[] per row, the same slice), fed to boards[g] from
 * states[g]. A thousand flows made 60,000 feed_level calls a capture, each with its Python around it. */
enum { FEED_TALLIES = 11 };

PyObject *feed_levels(PyObject *self, PyObject *args) {
    PyObject *o_ev, *o_bk, *o_order, *o_sides, *o_lo, *o_hi, *boards, *o_conn, *o_sender, *o_never, *states;
    int want_lanes = 0;
    if (!PyArg_ParseTuple(args, "OOOOOOO!OOOO!|p", &o_ev, &o_bk, &o_order, &o_sides, &o_lo, &o_hi, &PyList_Type, &boards,
                          &o_conn, &o_sender, &o_never, &PyList_Type, &states, &want_lanes))
        return NULL;
    buf_t ev = {0}, bk = {0}, order = {0}, sides = {0}, glo = {0}, ghi = {0}, gconn = {0}, gsender = {0}, gnever = {0};
    PyObject *records = NULL, *counts = NULL, *tallies = NULL, *new_states = NULL, *seen = NULL, *fars = NULL,
             *far_frames = NULL, *lanes = NULL, *result = NULL;
    Py_ssize_t G = PyList_GET_SIZE(boards);
    if (get_buf(o_ev, &ev, sizeof(event_t), -1, 0, "feed_levels") < 0 ||
        get_buf(o_bk, &bk, sizeof(block_t), -1, 0, "feed_levels") < 0 ||
        get_buf(o_order, &order, 8, -1, 0, "feed_levels") < 0 ||
        get_buf(o_sides, &sides, 1, order.b.len / 8, 0, "feed_levels") < 0 ||
        get_buf(o_lo, &glo, 8, G, 0, "feed_levels") < 0 || get_buf(o_hi, &ghi, 8, G, 0, "feed_levels") < 0 ||
        get_buf(o_conn, &gconn, 4, G, 0, "feed_levels") < 0 || get_buf(o_sender, &gsender, 1, G, 0, "feed_levels") < 0 ||
        get_buf(o_never, &gnever, 1, G, 0, "feed_levels") < 0)
        goto out;
    if (PyList_GET_SIZE(states) != G) { PyErr_SetString(PyExc_ValueError, "feed_levels: a state per group"); goto out; }
    const int64_t *lo = glo.b.buf, *hi = ghi.b.buf;
    Py_ssize_t n_order = order.b.len / 8, total = 0;
    for (Py_ssize_t g = 0; g < G; g++) {
        if (lo[g] < 0 || hi[g] < lo[g] || hi[g] > n_order) {
            PyErr_SetString(PyExc_IndexError, "feed_levels: group out of range");
            goto out;
        }
        if (!PyObject_TypeCheck(PyList_GET_ITEM(boards, g), &BoardType)) {
            PyErr_SetString(PyExc_TypeError, "feed_levels: boards must be Boards");
            goto out;
        }
        total += hi[g] - lo[g];
    }
    char *cp, *tp, *sp, *fp, *ffp;
    if (!(records = PyByteArray_FromStringAndSize(NULL, total * (Py_ssize_t)sizeof(board_row_t))) ||
        !(counts = PyByteArray_FromStringAndSize(NULL, G * 8)) ||
        !(tallies = PyByteArray_FromStringAndSize(NULL, G * FEED_TALLIES * 8)) ||
        !(seen = PyByteArray_FromStringAndSize(NULL, G)) || !(fars = PyByteArray_FromStringAndSize(NULL, G * 8)) ||
        !(far_frames = PyByteArray_FromStringAndSize(NULL, G * 8)) || !(new_states = PyList_New(G)) ||
        (want_lanes && !(lanes = PyByteArray_FromStringAndSize(NULL, total * 4 * 8))))
        goto out;
    int64_t *lanes_out = lanes ? (int64_t *)PyByteArray_AS_STRING(lanes) : NULL;
    cp = PyByteArray_AS_STRING(counts); tp = PyByteArray_AS_STRING(tallies); sp = PyByteArray_AS_STRING(seen);
    fp = PyByteArray_AS_STRING(fars); ffp = PyByteArray_AS_STRING(far_frames);
    board_row_t *out = (board_row_t *)PyByteArray_AS_STRING(records);
    const int64_t *row = order.b.buf;
    const int8_t *side = sides.b.buf, *sender = gsender.b.buf, *never = gnever.b.buf;
    const int32_t *conn = gconn.b.buf;
    Py_ssize_t at = 0;
    for (Py_ssize_t g = 0; g < G; g++) {
        level_t lv = {LEVEL_TCP, sender[g], never[g] != 0, conn[g]};
        serial_space_t space;
        if (space_from_py(PyList_GET_ITEM(states, g), &space) < 0) goto out;
        int nr_seen = 0;
        Py_ssize_t far = 0;
        uint32_t far_frame = 0;
        feed_tally_t t;
        Board *board = (Board *)PyList_GET_ITEM(boards, g);
        Py_ssize_t j;
        Py_BEGIN_ALLOW_THREADS
        j = feed_level_rows(board, &lv, &space, ev.b.buf, ev.b.len / (Py_ssize_t)sizeof(event_t), row + lo[g],
                            side + lo[g], hi[g] - lo[g], bk.b.buf, bk.b.len / (Py_ssize_t)sizeof(block_t), out + at, &t,
                            &nr_seen, &far, &far_frame, lanes_out ? lanes_out + 4 * at : NULL);
        Py_END_ALLOW_THREADS
        if (j == FEED_NO_MEMORY) PyErr_NoMemory();
        if (j < 0) goto out;
        PyObject *state = space_to_py(&space);
        if (!state) goto out;
        PyList_SET_ITEM(new_states, g, state);
        int64_t *tally = (int64_t *)tp + g * FEED_TALLIES;
        const int64_t values[FEED_TALLIES] = {
            t.first_data, t.last_data, t.last_new, t.max_payload, t.max_sack, t.max_nr, t.max_whatif,
            t.retransmissions, t.ending, t.first_data >= 0 ? out[at + t.first_data].time_ns : -1,
            t.first_data >= 0 ? (int64_t)out[at + t.first_data].frame : -1};
        memcpy(tally, values, sizeof values);
        ((int64_t *)cp)[g] = j;
        sp[g] = (char)nr_seen;
        ((int64_t *)fp)[g] = far;
        ((int64_t *)ffp)[g] = far_frame;
        at += j;
    }
    if (PyByteArray_Resize(records, at * (Py_ssize_t)sizeof(board_row_t)) < 0 ||
        (lanes && PyByteArray_Resize(lanes, at * 4 * 8) < 0))
        goto out;
    result = lanes ? Py_BuildValue("OOOOOOOO", records, counts, tallies, new_states, seen, fars, far_frames, lanes)
                   : Py_BuildValue("OOOOOOO", records, counts, tallies, new_states, seen, fars, far_frames);
out:
    Py_XDECREF(records); Py_XDECREF(counts); Py_XDECREF(tallies); Py_XDECREF(new_states); Py_XDECREF(seen);
    Py_XDECREF(fars); Py_XDECREF(far_frames); Py_XDECREF(lanes);
    buf_t *held[] = {&ev, &bk, &order, &sides, &glo, &ghi, &gconn, &gsender, &gnever};
    for (size_t k = 0; k < sizeof held / sizeof *held; k++)
        if (held[k]->ok) PyBuffer_Release(&held[k]->b);
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
 * at_ceiling, above, packet, deep_waits, level); paths: sbe_paths_t; level: sbe_level_t. */
static PyObject *Board_sndbuf_estimate(Board *self, PyObject *args) {
    int nr, paths;
    if (!PyArg_ParseTuple(args, "pi", &nr, &paths)) return NULL;
    if (paths < SBE_ONE_PATH || paths > SBE_TCP_CONNECTION) {
        PyErr_Format(PyExc_ValueError, "paths %d is no sbe_paths_t", paths);
        return NULL;
    }
    sbe_result_t r;
    sbe_decide_paths(&self->estimate, nr, (sbe_paths_t)paths, &r);
    return Py_BuildValue("(iiKKKKKKKKKi)", (int)r.verdict, (int)r.why, (unsigned long long)r.sndbuf,
                         (unsigned long long)r.low, (unsigned long long)r.high, (unsigned long long)r.waits,
                         (unsigned long long)r.long_waits, (unsigned long long)r.at_ceiling,
                         (unsigned long long)r.above, (unsigned long long)r.packet, (unsigned long long)r.deep_waits,
                         (int)r.level);
}

/* An sbe_decide_paths result back from Board.sndbuf_estimate's tuple. */
static int estimate_of(PyObject *t, sbe_result_t *r) {
    int verdict, why, level;
    unsigned long long v[9];
    if (!PyArg_ParseTuple(t, "iiKKKKKKKKKi", &verdict, &why, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
                          &v[8], &level))
        return -1;
    if (verdict < SBE_HELD_BACK || verdict > SBE_CANNOT_TELL || why < SBE_CEILING || why > SBE_LEFT_CEILING ||
        level < SBE_LEVEL_PATH || level > SBE_LEVEL_PACED) {
        PyErr_SetString(PyExc_ValueError, "sndbuf estimate: verdict, reason or level out of range");
        return -1;
    }
    *r = (sbe_result_t){(sbe_verdict_t)verdict, (sbe_why_t)why, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8],
                        (sbe_level_t)level};
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
    return Py_BuildValue("(iiKKKKKKKKKi)s", (int)r.verdict, (int)r.why, (unsigned long long)r.sndbuf,
                         (unsigned long long)r.low, (unsigned long long)r.high, (unsigned long long)r.waits,
                         (unsigned long long)r.long_waits, (unsigned long long)r.at_ceiling,
                         (unsigned long long)r.above, (unsigned long long)r.packet, (unsigned long long)r.deep_waits,
                         (int)r.level,
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
        blocked[i] = (int8_t)sbe_blocked(&r, after_new < 0 ? 0 : (uint64_t)after_new, rtxq[i] < 0 ? 0 : (uint64_t)rtxq[i],
                                         gap[i] != 0, start + i < last_new);
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
     "data level, 3 a CMT association, 4 one TCP connection)"},
    {"fork", (PyCFunction)Board_fork, METH_VARARGS, "fork(keep_data) -> a copy (keep_data False: the acks' state only)"},
    {"feed", (PyCFunction)Board_feed, METH_VARARGS,
     "feed(kind i1, lo i8, hi i8, size i8, bstart i8, bcount i4, blo i8, bhi i8, bnr i1, revoke i1, out_sack, "
     "out_sacked, out_nr, out_freed, out_acked, out_units_sack, out_units_sacked, out_units_nr (i8), out_flags i4[, "
     "paths i8[, time_ns i8]]): paths, the path each ack came on; time_ns, each row's capture time (the estimator's waits)"},
    {"feed_level", (PyCFunction)Board_feed_level, METH_VARARGS,
     "feed_level(events, blocks, rows, side, protocol, conn, sender, state, never_renege) -> (ROW_DTYPE records, "
     "feed's tallies, state, nr_seen, (far rows left out, first frame)): level_part and feed in one call"},
    {"feed_acks", (PyCFunction)Board_feed_acks, METH_VARARGS,
     "feed_acks(events, blocks, rows, side, protocol, conn, sender, state, never_renege[, positions]) -> None (nothing "
     "done) or (rows kept, state, (far rows left out, first frame), pos, serial): feed_level of a chunk of acks alone "
     "to a Board without data"},
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

int add_board_type(PyObject *module) {
    if (PyType_Ready(&BoardType) < 0) return -1;
    Py_INCREF(&BoardType);
    return PyModule_AddObject(module, "Board", (PyObject *)&BoardType);
}

/* ---- short TCP connections, many in one call ----
 * short_tcp_entries(events, blocks, rows, side, group_lo, group_hi, conn, flow_flags, sndbuf[, end_ns[, by_sender]]) -> int64
 * records, ENTRY_FIELDS per sender direction (side 0 then side 1 of each group): what DirectionAccumulator.feed
 * and DirectionAccumulator.finish (state/scoreboard.py) make of a TCP connection whose every event is rows[group_lo[g] ..
 * group_hi[g]) (in capture order, `side` per row), fed to a fresh level and Board in one go. The
 * pipeline sends here the connections that begin and end in one chunk: a call per flow direction of
 * the general path cost more than the work. flow_flags: FLOW_NEGOTIATED_NR | FLOW_NEVER_RENEGE_0 |
 * FLOW_NEVER_RENEGE_1 (Flow.negotiated_nr, never_renege); sndbuf < 0: estimated. end_ns (int64 per group, -1:
 * none): where q ends for a direction that did not complete (DirectionAccumulator.finish's end_ns: the pipeline's
 * parked connections, finished at their last event or the capture's end); without it such a direction is left
 * unsummed (ENTRY_COMPLETE 0, no figures). by_sender (int8 per sender direction, 2 a group: whether the capture is by
 * that sender or by no known end, sndbuf_verdict's vantage), when given, asks for the tables as well: -> (records,
 * RtxQ rows, blocking runs), RTXQ_ROW and BLOCKING_ROW int64 each (table_rows), the streamed files' parked connections. */
enum { FLOW_NEGOTIATED_NR = 1, FLOW_NEVER_RENEGE_0 = 2, FLOW_NEVER_RENEGE_1 = 4 };
enum {
    ENTRY_HAS_DATA, ENTRY_COMPLETE, ENTRY_NR_SACK, ENTRY_FIRST_FRAME, ENTRY_T_START, ENTRY_Q_NS, ENTRY_P_NS,
    ENTRY_B_NS, ENTRY_DATA_BYTES, ENTRY_CAPACITY, ENTRY_MAX_SACK, ENTRY_MAX_NR, ENTRY_MAX_WHATIF, ENTRY_ACKED,
    ENTRY_INTERVALS, ENTRY_MAX_PAYLOAD, ENTRY_RETRANSMISSIONS, ENTRY_FAR, ENTRY_FAR_FRAME,
    ENTRY_VERDICT, ENTRY_WHY, ENTRY_SNDBUF, ENTRY_LOW, ENTRY_HIGH, ENTRY_WAITS, ENTRY_LONG_WAITS, ENTRY_AT_CEILING,
    ENTRY_ABOVE, ENTRY_PACKET, ENTRY_DEEP_WAITS, ENTRY_LEVEL,  /* sbe_result_t, as Board.sndbuf_estimate gives it */
    ENTRY_FIELDS
};

typedef struct {  /* one direction's Board outputs per row (Board.feed's) */
    int64_t *sack, *sacked, *nr, *acked, *freed;
    int32_t *flags;
} board_rows_t;

/* The level's rows in `o` (n of them) through a fresh scoreboard in b: the figures per row in r. */
static int feed_fresh(Board *b, const part_out_t *o, Py_ssize_t n, const board_rows_t *r) {
    sb_free(&b->sb);
    sb_init(&b->sb, 0);
    sbe_free(&b->estimate);
    b->revoked.n = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        row_figures_t f;
        int64_t bs = o->bstart[i];
        if (feed_row(b, i, o->kind[i], o->lo[i], o->hi[i], o->size[i], o->blo + bs, o->bhi + bs, o->bnr + bs,
                     o->bcount[i], REVOKE_IN_SPAN, o->conn[i], o->time_ns[i], &f) < 0) return -1;
        r->sack[i] = f.sack; r->sacked[i] = f.sacked; r->nr[i] = f.nr; r->acked[i] = f.acked; r->freed[i] = f.freed;
        r->flags[i] = f.flags;
    }
    return 0;
}

/* ---- the p/b/q window (docs/metrics.md): over the rows from the first data to the end of the transfer, a
 * row's time counts until the next row's (the last row's until the end of q) toward b when the row is
 * blocked and toward p when it is blocked with a gap open; a run of blocked rows is one blocking interval.
 * The one place it is summed: summarize() below and scoreboard._Window (pass 2, batch by batch, through
 * window_add and window_close). ---- */
typedef struct {
    int64_t p_ns, b_ns, intervals, last_t;
    int have_last, was_blocked, was_gap;
} window_t;

static inline void window_row(window_t *w, int64_t t, int blocked, int gap) {
    if (w->have_last && w->was_blocked) {
        int64_t dt = t - w->last_t;
        w->b_ns += dt;
        if (w->was_gap) w->p_ns += dt;
    }
    w->intervals += blocked && !w->was_blocked;
    w->last_t = t; w->have_last = 1; w->was_blocked = blocked; w->was_gap = gap;
}

/* The end of q (complete: the last row; else end_ns, never before the last row), the last row's time counted
 * until then. -> that end, 0 when no row came. */
static int64_t window_close(window_t *w, int64_t end_ns, int complete) {
    if (!w->have_last) return 0;
    int64_t t_end = complete || end_ns < w->last_t ? w->last_t : end_ns;
    window_row(w, t_end, 0, 0);
    return t_end;
}

static int window_from_py(PyObject *o, window_t *w) {
    long long v[4];
    if (!PyArg_ParseTuple(o, "LLLLppp", &v[0], &v[1], &v[2], &v[3], &w->have_last, &w->was_blocked, &w->was_gap))
        return -1;
    w->p_ns = v[0]; w->b_ns = v[1]; w->intervals = v[2]; w->last_t = v[3];
    return 0;
}

static PyObject *window_to_py(const window_t *w) {
    return Py_BuildValue("(LLLLOOO)", (long long)w->p_ns, (long long)w->b_ns, (long long)w->intervals,
                         (long long)w->last_t, w->have_last ? Py_True : Py_False, w->was_blocked ? Py_True : Py_False,
                         w->was_gap ? Py_True : Py_False);
}

/* window_add(state, time_ns i8, blocked b1, gap_open b1) -> state: a batch of the window's rows, in order;
 * state: (p_ns, b_ns, intervals, last time, have_last, was_blocked, was_gap), WINDOW_START at first. */
PyObject *window_add(PyObject *self, PyObject *args) {
    PyObject *o_state, *o_t, *o_b, *o_g;
    window_t w;
    if (!PyArg_ParseTuple(args, "OOOO", &o_state, &o_t, &o_b, &o_g) || window_from_py(o_state, &w) < 0) return NULL;
    buf_t tb = {0}, bb = {0}, gb = {0};
    PyObject *result = NULL;
    if (get_buf(o_t, &tb, 8, -1, 0, "window_add") < 0) goto out;
    Py_ssize_t n = tb.b.len / 8;
    if (get_buf(o_b, &bb, 1, n, 0, "window_add") < 0 || get_buf(o_g, &gb, 1, n, 0, "window_add") < 0) goto out;
    const int64_t *t = tb.b.buf;
    const int8_t *blocked = bb.b.buf, *gap = gb.b.buf;
    for (Py_ssize_t i = 0; i < n; i++) window_row(&w, t[i], blocked[i] != 0, gap[i] != 0);
    result = window_to_py(&w);
out:
    if (tb.ok) PyBuffer_Release(&tb.b);
    if (bb.ok) PyBuffer_Release(&bb.b);
    if (gb.ok) PyBuffer_Release(&gb.b);
    return result;
}

/* window_close(state, end_ns, complete) -> (state, the end of q) */
PyObject *window_close_py(PyObject *self, PyObject *args) {
    PyObject *o_state;
    long long end_ns;
    int complete;
    window_t w;
    if (!PyArg_ParseTuple(args, "OLp", &o_state, &end_ns, &complete) || window_from_py(o_state, &w) < 0) return NULL;
    int64_t t_end = window_close(&w, end_ns, complete);
    PyObject *state = window_to_py(&w);
    return state ? Py_BuildValue("(NL)", state, (long long)t_end) : NULL;
}

/* The RtxQ and blocking tables of short directions (short_tcp_entries with tables): rows of int64, RTXQ_ROW
 * and BLOCKING_ROW fields each, the entry's index (2 * group + sender) first, appended as made. */
enum { RTXQ_ENTRY, RTXQ_TIME, RTXQ_SACK, RTXQ_SACKED, RTXQ_NR, RTXQ_FREED, RTXQ_RTXQ, RTXQ_FRAME, RTXQ_BLOCKED, RTXQ_GAP,
       RTXQ_IS_DATA, RTXQ_ROW };
enum { RUN_ENTRY, RUN_START_NS, RUN_START_FRAME, RUN_RTXQ, RUN_GAP, RUN_END_NS, RUN_END_FRAME, BLOCKING_ROW };
typedef struct { int64_t *v; size_t n, cap; } rows_t;

static int64_t *rows_add(rows_t *t, size_t width) {
    if (t->n + width > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 1024 * width;
        int64_t *v = realloc(t->v, cap * sizeof *v);
        if (!v) return NULL;
        t->v = v; t->cap = cap;
    }
    int64_t *row = t->v + t->n;
    t->n += width;
    return row;
}

/* DirectionAccumulator.finish's RtxQ rows (those that changed the scoreboard) and blocking runs (scoreboard._Window:
 * a run starts at a blocked row and ends at the next row not blocked, or at the end of q, end frame -1) of one
 * direction summarized in e; blocked as pass 2 reads it, the estimate judged for the capture's vantage. -1: no memory. */
static int table_rows(const Board *b, const part_out_t *o, Py_ssize_t n, const board_rows_t *r, long long sndbuf,
                      int by_sender, int64_t entry_index, const int64_t *e, int64_t t_end, Py_ssize_t first,
                      Py_ssize_t last, Py_ssize_t last_new, rows_t *rtxq_rows, rows_t *runs) {
    sbe_result_t judged;
    sbe_decide_paths(&b->estimate, (int)e[ENTRY_NR_SACK], SBE_TCP_CONNECTION, &judged);
    sbe_vantage(&judged, by_sender);
    int64_t after_new = 0, *run = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t rtxq = e[ENTRY_NR_SACK] ? r->sack[i] - r->nr[i] : r->sack[i];
        int gap = (r->flags[i] & FLAG_GAP_OPEN) != 0, changed = (r->flags[i] & FLAG_CHANGED) != 0;
        if (o->kind[i] == 0 && changed) after_new = rtxq;
        int blocked = sndbuf >= 0 ? e[ENTRY_CAPACITY] - rtxq < e[ENTRY_MAX_PAYLOAD]
                                  : sbe_blocked(&judged, after_new < 0 ? 0 : (uint64_t)after_new,
                                                rtxq < 0 ? 0 : (uint64_t)rtxq, gap, i < last_new);
        if (changed) {
            int64_t *x = rows_add(rtxq_rows, RTXQ_ROW);
            if (!x) return -1;
            x[RTXQ_ENTRY] = entry_index; x[RTXQ_TIME] = o->time_ns[i]; x[RTXQ_SACK] = r->sack[i];
            x[RTXQ_SACKED] = r->sacked[i]; x[RTXQ_NR] = r->nr[i]; x[RTXQ_FREED] = r->freed[i]; x[RTXQ_RTXQ] = rtxq;
            x[RTXQ_FRAME] = o->frame[i]; x[RTXQ_BLOCKED] = blocked; x[RTXQ_GAP] = gap; x[RTXQ_IS_DATA] = o->kind[i] == 0;
        }
        if (i < first || i > last) continue;
        if (run && !blocked) {
            run[RUN_END_NS] = o->time_ns[i]; run[RUN_END_FRAME] = o->frame[i];
            run = NULL;
        } else if (run) {
            run[RUN_GAP] |= gap;
        } else if (blocked) {
            if (!(run = rows_add(runs, BLOCKING_ROW))) return -1;
            run[RUN_ENTRY] = entry_index; run[RUN_START_NS] = o->time_ns[i]; run[RUN_START_FRAME] = o->frame[i];
            run[RUN_RTXQ] = rtxq; run[RUN_GAP] = gap;
        }
    }
    if (run) { run[RUN_END_NS] = t_end; run[RUN_END_FRAME] = -1; }
    return 0;
}

/* DirectionAccumulator.feed's tallies and DirectionAccumulator.finish's window (p, b, blocking runs) over one direction's rows. */
static int summarize(const Board *b, const part_out_t *o, Py_ssize_t n, const board_rows_t *r, int nr_known,
                     long long sndbuf, int64_t end_ns, int64_t *e, int by_sender, int64_t entry_index, rows_t *rtxq_rows,
                     rows_t *runs) {
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
    if (first < 0) return 0;
    e[ENTRY_HAS_DATA] = 1;
    e[ENTRY_FIRST_FRAME] = o->frame[first];
    e[ENTRY_T_START] = o->time_ns[first];
    /* the first ack after the last data that cum-acks all of it ends the transfer */
    for (Py_ssize_t i = last_data + 1; i < n && done < 0; i++)
        if (o->kind[i] != 0 && r->acked[i] >= e[ENTRY_DATA_BYTES]) done = i;
    /* incomplete without end_ns: q runs to the end of the capture (the general path finishes it) */
    if (done < 0 && end_ns < 0) return 0;
    int complete = e[ENTRY_COMPLETE] = done >= 0;
    Py_ssize_t last = complete ? done : n - 1;  /* DirectionAccumulator.finish's window: to the end or the last row */
    int nr_sack = e[ENTRY_NR_SACK] = nr_known;
    sbe_result_t estimate;
    sbe_decide_paths(&b->estimate, nr_sack, SBE_TCP_CONNECTION, &estimate);
    const uint64_t fields[] = {estimate.verdict, estimate.why, estimate.sndbuf, estimate.low, estimate.high,
                               estimate.waits, estimate.long_waits, estimate.at_ceiling, estimate.above, estimate.packet,
                               estimate.deep_waits, (uint64_t)estimate.level};
    for (int k = 0; k < ENTRY_FIELDS - ENTRY_VERDICT; k++) e[ENTRY_VERDICT + k] = (int64_t)fields[k];
    int64_t capacity = e[ENTRY_CAPACITY] = sndbuf >= 0 ? sndbuf : (int64_t)estimate.sndbuf;
    window_t w = {0};
    int64_t after_new = 0;  /* the RtxQ after the last new data (estimated B) */
    for (Py_ssize_t i = first; i <= last; i++) {
        int64_t rtxq = nr_sack ? r->sack[i] - r->nr[i] : r->sack[i];
        if (o->kind[i] == 0 && (r->flags[i] & FLAG_CHANGED)) after_new = rtxq;
        int blocked = sndbuf >= 0 ? capacity - rtxq < e[ENTRY_MAX_PAYLOAD]
                                  : sbe_blocked(&estimate, (uint64_t)after_new, (uint64_t)rtxq,
                                                (r->flags[i] & FLAG_GAP_OPEN) != 0, i < last_new);
        window_row(&w, o->time_ns[i], blocked, (r->flags[i] & FLAG_GAP_OPEN) != 0);
    }
    int64_t t_end = window_close(&w, complete ? o->time_ns[done] : end_ns, complete);
    e[ENTRY_P_NS] = w.p_ns; e[ENTRY_B_NS] = w.b_ns; e[ENTRY_INTERVALS] = w.intervals;
    e[ENTRY_ACKED] = r->acked[last];
    e[ENTRY_Q_NS] = t_end - o->time_ns[first];
    return rtxq_rows ? table_rows(b, o, n, r, sndbuf, by_sender, entry_index, e, t_end, first, last, last_new, rtxq_rows,
                                  runs) : 0;
}

PyObject *short_tcp_entries(PyObject *self, PyObject *args) {
    PyObject *o_ev, *o_bk, *o_rows, *o_side, *o_lo, *o_hi, *o_conn, *o_flags, *o_end = Py_None, *o_vantage = Py_None;
    long long sndbuf;
    if (!PyArg_ParseTuple(args, "OOOOOOOOL|OO", &o_ev, &o_bk, &o_rows, &o_side, &o_lo, &o_hi, &o_conn, &o_flags, &sndbuf,
                          &o_end, &o_vantage))
        return NULL;
    row_groups_t a;
    buf_t gconn = {0}, gflags = {0}, gend = {0}, gvantage = {0};
    rows_t rtxq_rows = {0}, runs = {0};
    PyObject *records = NULL, *result = NULL;
    Board b;
    memset(&b, 0, sizeof b);
    sb_init(&b.sb, 0);
    int64_t *scratch = NULL;
    if (get_row_groups(o_ev, o_bk, o_rows, o_side, o_lo, o_hi, &a, "short_tcp_entries") < 0 ||
        get_buf(o_conn, &gconn, 4, a.n_groups, 0, "short_tcp_entries") < 0 ||
        get_buf(o_flags, &gflags, 1, a.n_groups, 0, "short_tcp_entries") < 0 ||
        (o_end != Py_None && get_buf(o_end, &gend, 8, a.n_groups, 0, "short_tcp_entries") < 0) ||
        (o_vantage != Py_None && get_buf(o_vantage, &gvantage, 1, a.n_groups * 2, 0, "short_tcp_entries") < 0))
        goto out;
    const int8_t *by_sender = gvantage.ok ? gvantage.b.buf : NULL;
    const int64_t *end_ns = gend.ok ? gend.b.buf : NULL;
    const event_t *e = a.ev.b.buf;
    const block_t *blocks = a.bk.b.buf;
    const int64_t *row = a.rows.b.buf, *lo = a.lo.b.buf, *hi = a.hi.b.buf;
    const int8_t *sides = a.side.b.buf, *flow_flags = gflags.b.buf;
    const int32_t *conn = gconn.b.buf;
    Py_ssize_t n_groups = a.n_groups, n_blocks = a.n_blocks, longest = a.longest;
    /* a level's rows, the chunk's blocks (part_out_place), then the Board's outputs per row (board_rows_t) */
    size_t L = (size_t)longest + 1, B = (size_t)n_blocks + 1;
    size_t level_bytes = part_out_bytes(L, B);  /* then the Board's outputs: five int64 columns, the flags */
    scratch = malloc(level_bytes + L * (5 * 8 + 4));
    if (!scratch) { PyErr_NoMemory(); goto out; }
    part_out_t o;
    part_out_place(&o, (char *)scratch, L, B);
    int64_t *b64 = (int64_t *)((char *)scratch + level_bytes);
    board_rows_t r = {b64, b64 + L, b64 + 2 * L, b64 + 3 * L, b64 + 4 * L, (int32_t *)(b64 + 5 * L)};
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
            if (summarize(&b, &o, j, &r, nr_seen || peer_never_renege || (flow_flags[g] & FLOW_NEGOTIATED_NR), sndbuf,
                          end_ns ? end_ns[g] : -1, entry, by_sender ? by_sender[2 * g + sender] : 0, 2 * g + sender,
                          by_sender ? &rtxq_rows : NULL, &runs) < 0) { PyErr_NoMemory(); goto out; }
        }
    }
    if (by_sender)
        result = Py_BuildValue("(Ny#y#)", records, rtxq_rows.v ? (const char *)rtxq_rows.v : "",
                               (Py_ssize_t)(rtxq_rows.n * 8), runs.v ? (const char *)runs.v : "", (Py_ssize_t)(runs.n * 8));
    else
        result = records;
    records = NULL;
out:
    free(rtxq_rows.v);
    free(runs.v);
    Py_XDECREF(records);
    free(scratch);
    sb_free(&b.sb);
    iset_free(&b.r);
    iset_free(&b.nr);
    iset_free(&b.revoked);
    free(b.revoked_rows);
    release_row_groups(&a);
    buf_t *held[] = {&gconn, &gflags, &gend, &gvantage};
    for (size_t k = 0; k < sizeof held / sizeof *held; k++)
        if (held[k]->ok) PyBuffer_Release(&held[k]->b);
    return result;
}
