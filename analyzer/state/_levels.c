/* SPDX-License-Identifier: MIT */
/* level_part(): the scoreboard input (flows.ScoreboardInput) of one TCP connection or SCTP association
 * direction from one chunk's events, in one pass over the flow's rows. Doing this with numpy meant
 * gathering every field per flow and a dozen passes over them, which cost more than reading the
 * capture. The semantics are flows.TcpLevel's and flows.SctpLevel's docstrings; the numpy levels
 * that remain (MPTCP data level, CMT paths) build on this output.
 *
 * Serial numbers are unwrapped in observation order by the core's one rule (core/serial.c:
 * nearest to the highest serial seen, a far value left out unless the next far value confirms it);
 * a row whose serial is left out is counted, its first frame kept. The space's state travels from
 * chunk to chunk as a Python value (space_to_py). unwrap() gives the same rule to the numpy levels. */
#include "_analyzer.h"
#include "nrsack_core.h"

#include <string.h>

enum { SCTP_DATA = 0, SCTP_SACK = 3, SCTP_NR_SACK = 16 };

/* per selected row, in Part's order and dtypes */
enum { P_POS, P_KIND, P_LO, P_HI, P_SIZE, P_BSTART, P_BCOUNT, P_CONN, P_TIME, P_FRAME, N_ROW_ARRAYS };
static const size_t row_itemsize[N_ROW_ARRAYS] = {8, 1, 8, 8, 8, 8, 4, 4, 8, 4};
/* per block of a selected ack */
enum { B_LO, B_HI, B_NR, N_BLOCK_ARRAYS };
static const size_t block_itemsize[N_BLOCK_ARRAYS] = {8, 8, 1};

/* A serial space's state as Python sees it: None before the first value, else (highest,
 * candidate or None). */
int space_from_py(PyObject *o, serial_space_t *s) {
    memset(s, 0, sizeof *s);
    if (o == Py_None) return 0;
    PyObject *candidate;
    unsigned long long highest;
    if (!PyArg_ParseTuple(o, "KO", &highest, &candidate)) return -1;
    s->anchored = 1;
    s->highest = highest;
    if (candidate != Py_None) {
        s->candidate_set = 1;
        s->candidate = PyLong_AsUnsignedLongLong(candidate);
        if (PyErr_Occurred()) return -1;
    }
    return 0;
}

PyObject *space_to_py(const serial_space_t *s) {
    if (!s->anchored) Py_RETURN_NONE;
    if (!s->candidate_set) return Py_BuildValue("(KO)", (unsigned long long)s->highest, Py_None);
    return Py_BuildValue("(KK)", (unsigned long long)s->highest, (unsigned long long)s->candidate);
}

enum { ROLE_NONE, ROLE_DATA, ROLE_ACK };

static inline int row_role(const level_t *lv, const event_t *e, int mine) {
    if (lv->protocol == LEVEL_TCP) {
        if (e->conn != lv->conn) return ROLE_NONE;
        if (mine) return e->len > 0 && !(e->tcp_flags & TCP_FLAG_RST) ? ROLE_DATA : ROLE_NONE;
        return e->flags & EV_ACK ? ROLE_ACK : ROLE_NONE;
    }
    if (mine) return e->chunk == SCTP_DATA ? ROLE_DATA : ROLE_NONE;
    /* an ack chunk whose counts fail its length carries no EV_ACK: nothing of it is fed (decisions.md 40) */
    return (e->chunk == SCTP_SACK || e->chunk == SCTP_NR_SACK) && (e->flags & EV_ACK) ? ROLE_ACK : ROLE_NONE;
}

/* Blocks of the level's kinds: TCP SACK and NR-SACK edges; SCTP gap blocks, R and NR. */
static inline int block_wanted(const level_t *lv, uint8_t kind) {
    return lv->protocol == LEVEL_TCP ? kind == BK_TCP_SACK || kind == BK_TCP_NR : kind == BK_R || kind == BK_NR;
}

static PyObject *new_array(Py_ssize_t n, size_t itemsize, char **data) {
    PyObject *a = PyByteArray_FromStringAndSize(NULL, n * (Py_ssize_t)itemsize);
    if (a) *data = PyByteArray_AS_STRING(a);
    return a;
}

/* unwrap(values u8 (the low 32 bits count), state) -> (serials i8, kept b1, state, (rows left out as far,
 * index of the first)): the rows not kept carry the far value they would have had. */
PyObject *unwrap_serials(PyObject *self, PyObject *args) {
    PyObject *o_values, *o_state;
    serial_space_t space;
    if (!PyArg_ParseTuple(args, "OO", &o_values, &o_state) || space_from_py(o_state, &space) < 0) return NULL;
    buf_t values = {0};
    PyObject *serials = NULL, *kept = NULL, *result = NULL;
    if (get_buf(o_values, &values, 8, -1, 0, "unwrap") < 0) goto out;
    Py_ssize_t n = values.b.len / 8, far = 0, first_far = -1;
    char *sp, *kp;
    if (!(serials = new_array(n, 8, &sp)) || !(kept = new_array(n, 1, &kp))) goto out;
    const uint64_t *v = values.b.buf;
    uint64_t *u = (uint64_t *)sp;
    for (Py_ssize_t i = 0; i < n; i++) {
        kp[i] = serial_unwrap(&space, (uint32_t)v[i], &u[i]) == SERIAL_OK;
        if (!kp[i] && !far++) first_far = i;
    }
    PyObject *state = space_to_py(&space);
    if (state) result = Py_BuildValue("OON(nn)", serials, kept, state, far, first_far);
out:
    Py_XDECREF(serials);
    Py_XDECREF(kept);
    if (values.ok) PyBuffer_Release(&values.b);
    return result;
}

/* An exception from code that may run with the GIL released (level_rows under level_part and
 * Board.feed_level: `--jobs` feeds flows from several threads at once); also right with the GIL held. */
void raise_released(PyObject *type, const char *message) {
    PyGILState_STATE held = PyGILState_Ensure();
    PyErr_SetString(type, message);
    PyGILState_Release(held);
}

/* One event of the level's flow -> LEVEL_ROW_KEPT (written as row j, its blocks from *jb on),
 * LEVEL_ROW_NONE (not the level's) or LEVEL_ROW_FAR (its serial left out); -1 with an exception set.
 * `pos` is what the row's pos column holds (its index in the flow's rows). */
static inline __attribute__((always_inline)) int level_row_body(const level_t *lv, serial_space_t *space, const event_t *x, int mine, Py_ssize_t pos,
                                 const block_t *blocks, Py_ssize_t n_blocks, const part_out_t *o, Py_ssize_t j,
                                 Py_ssize_t *jb, int *nr_seen) {
    if (lv->protocol == LEVEL_SCTP && !mine && x->chunk == SCTP_NR_SACK) *nr_seen = 1;
    int role = row_role(lv, x, mine);
    if (!role) return LEVEL_ROW_NONE;
    if (x->blk_start < 0 || x->blk_start + x->blk_count > n_blocks) {
        raise_released(PyExc_IndexError, "level_part: block out of range");
        return -1;
    }
    uint64_t serial;
    if (serial_unwrap(space, role == ROLE_DATA ? x->seq : x->ack, &serial) != SERIAL_OK) return LEVEL_ROW_FAR;
    int64_t u = (int64_t)serial;
    int64_t length = role == ROLE_DATA ? x->len : 0;
    o->pos[j] = pos; o->kind[j] = role == ROLE_DATA ? 0 : 1; o->lo[j] = u;
    o->hi[j] = lv->protocol == LEVEL_TCP ? u + length : u + 1;
    o->size[j] = length; o->bstart[j] = *jb; o->bcount[j] = 0;
    o->conn[j] = x->conn; o->time_ns[j] = x->time_ns; o->frame[j] = x->frame;
    for (int k = 0; k < x->blk_count; k++) {
        const block_t *b = blocks + x->blk_start + k;
        if (!block_wanted(lv, b->kind)) continue;
        if (b->kind == BK_TCP_NR) *nr_seen = 1;  /* as TcpLevel: any NR block of the level's rows */
        if (role == ROLE_DATA) continue;         /* a data segment's own blocks ack the other way */
        Py_ssize_t jj = (*jb)++;
        if (lv->protocol == LEVEL_TCP) {
            o->blo[jj] = (int64_t)serial_near(serial, (uint32_t)b->lo);
            o->bhi[jj] = (int64_t)serial_near(serial, (uint32_t)b->hi);
            o->bnr[jj] = b->kind == BK_TCP_NR || lv->never_renege;
        } else {  /* gap blocks are offsets from the cum TSN ack; End is inclusive */
            o->blo[jj] = u + (int64_t)b->lo; o->bhi[jj] = u + (int64_t)b->hi + 1;
            o->bnr[jj] = b->kind == BK_NR;
        }
        o->bcount[j]++;
    }
    return LEVEL_ROW_KEPT;
}

/* level_part's loop inlines the body (the call was a tenth of its cost); short_tcp_entries calls this. */
int level_row(const level_t *lv, serial_space_t *space, const event_t *x, int mine, Py_ssize_t pos,
              const block_t *blocks, Py_ssize_t n_blocks, const part_out_t *o, Py_ssize_t j, Py_ssize_t *jb,
              int *nr_seen) {
    return level_row_body(lv, space, x, mine, pos, blocks, n_blocks, o, j, jb, nr_seen);
}

/* One flow's rows of a chunk (row: event indices, in order; sides: per row) through the level into o: -> the
 * rows kept, or -1 with an exception set; *jb: the blocks written; far rows counted with the first one's frame. */
Py_ssize_t level_rows(const level_t *lv, serial_space_t *space, const event_t *e, Py_ssize_t n_events,
                      const int64_t *row, const int8_t *sides, Py_ssize_t n_rows, const block_t *blocks,
                      Py_ssize_t n_blocks, const part_out_t *o, Py_ssize_t *jb, int *nr_seen, Py_ssize_t *far,
                      uint32_t *far_frame) {
    Py_ssize_t j = 0;
    for (Py_ssize_t i = 0; i < n_rows; i++) {
        if (row[i] < 0 || row[i] >= n_events) {
            raise_released(PyExc_IndexError, "level rows: row out of range");
            return -1;
        }
        if (i + 16 < n_rows) {  /* the rows are scattered over the chunk; a record spans two cache lines */
            const char *ahead = (const char *)(e + row[i + 16]);
            __builtin_prefetch(ahead);
            __builtin_prefetch(ahead + sizeof(event_t) - 1);
        }
        const event_t *x = e + row[i];
        int kept = level_row_body(lv, space, x, sides[i] == lv->sender, i, blocks, n_blocks, o, j, jb, nr_seen);
        if (kept < 0) return -1;
        if (kept == LEVEL_ROW_FAR && !(*far)++) *far_frame = x->frame;
        j += kept == LEVEL_ROW_KEPT;
    }
    return j;
}

/* level_rows of a TCP direction that has sent no data, for a chunk that brings it none either: acks alone,
 * without blocks of the level's kinds (the receiver's direction of a bulk transfer, where every data segment of
 * the peer acks nothing of it). Only each kept row's pos and serial are written, where pos is not NULL: -> the rows
 * level_rows would keep, *best the first of them with the highest ack (*best_serial, unwrapped; NULL: none kept);
 * or -1, space and counts untouched, where a row is data, carries such blocks or is out of range (level_rows then
 * does it, and raises). */
Py_ssize_t quiet_rows(const level_t *lv, serial_space_t *space, const event_t *e, Py_ssize_t n_events,
                      const int64_t *row, const int8_t *sides, Py_ssize_t n_rows, const block_t *blocks,
                      Py_ssize_t n_blocks, Py_ssize_t *far, uint32_t *far_frame, const event_t **best,
                      uint64_t *best_serial, int64_t *pos, int64_t *serials) {
    if (lv->protocol != LEVEL_TCP) return -1;
    serial_space_t s = *space;
    Py_ssize_t kept = 0, n_far = *far;
    uint32_t first_far = *far_frame;
    *best = NULL;
    for (Py_ssize_t i = 0; i < n_rows; i++) {
        if (row[i] < 0 || row[i] >= n_events) return -1;
        if (i + 16 < n_rows) {  /* as level_rows */
            const char *ahead = (const char *)(e + row[i + 16]);
            __builtin_prefetch(ahead);
            __builtin_prefetch(ahead + sizeof(event_t) - 1);
        }
        const event_t *x = e + row[i];
        int role = row_role(lv, x, sides[i] == lv->sender);
        if (role == ROLE_NONE) continue;
        if (role == ROLE_DATA || x->blk_start < 0 || x->blk_start + x->blk_count > n_blocks) return -1;
        for (int k = 0; k < x->blk_count; k++)
            if (block_wanted(lv, blocks[x->blk_start + k].kind)) return -1;
        uint64_t serial;
        if (serial_unwrap(&s, x->ack, &serial) != SERIAL_OK) {
            if (!n_far++) first_far = x->frame;
            continue;
        }
        if (pos) {
            pos[kept] = i;
            serials[kept] = (int64_t)serial;
        }
        kept++;
        if (!*best || serial > *best_serial) {
            *best = x;
            *best_serial = serial;
        }
    }
    *space = s;
    *far = n_far;
    *far_frame = first_far;
    return kept;
}

/* level_part(events, blocks, rows, side, protocol, conn, sender, state, never_renege)
 *   -> (row arrays (ScoreboardInput order), block arrays (lo, hi, nr), state, nr_seen, (rows left out as far, first
 *   such frame)) */
int level_args(PyObject *args, const char *who, level_args_t *a) {
    PyObject *o_ev, *o_bk, *o_rows, *o_side, *o_state;
    memset(a, 0, sizeof *a);
    if (!PyArg_ParseTuple(args, "OOOOiiiOp", &o_ev, &o_bk, &o_rows, &o_side, &a->lv.protocol, &a->lv.conn,
                          &a->lv.sender, &o_state, &a->lv.never_renege) ||
        space_from_py(o_state, &a->space) < 0 ||
        get_buf(o_ev, &a->ev, sizeof(event_t), -1, 0, who) < 0 || get_buf(o_bk, &a->bk, sizeof(block_t), -1, 0, who) < 0 ||
        get_buf(o_rows, &a->rows, 8, -1, 0, who) < 0 || get_buf(o_side, &a->side, 1, a->rows.b.len / 8, 0, who) < 0)
        return -1;
    a->e = a->ev.b.buf; a->blocks = a->bk.b.buf; a->row = a->rows.b.buf; a->sides = a->side.b.buf;
    a->n_rows = a->rows.b.len / 8;
    a->n_events = a->ev.b.len / (Py_ssize_t)sizeof(event_t);
    a->n_blocks = a->bk.b.len / (Py_ssize_t)sizeof(block_t);
    return 0;
}

void level_args_release(level_args_t *a) {
    buf_t *held[] = {&a->ev, &a->bk, &a->rows, &a->side};
    for (size_t k = 0; k < sizeof held / sizeof *held; k++)
        if (held[k]->ok) PyBuffer_Release(&held[k]->b);
}

PyObject *level_part(PyObject *self, PyObject *args) {
    level_args_t a;
    PyObject *row_out[N_ROW_ARRAYS] = {0}, *block_out[N_BLOCK_ARRAYS] = {0}, *result = NULL;
    if (level_args(args, "level_part", &a) < 0) goto out;
    Py_ssize_t n_rows = a.n_rows, n_blocks = a.n_blocks;

    /* one pass (the rows are scattered over the chunk: a second pass would miss the cache again):
     * room for every row and every block of the chunk, shrunk at the end */
    char *rp[N_ROW_ARRAYS], *bp[N_BLOCK_ARRAYS];
    for (int a = 0; a < N_ROW_ARRAYS; a++)
        if (!(row_out[a] = new_array(n_rows, row_itemsize[a], &rp[a]))) goto out;
    for (int a = 0; a < N_BLOCK_ARRAYS; a++)
        if (!(block_out[a] = new_array(n_blocks, block_itemsize[a], &bp[a]))) goto out;
    part_out_t o = {(int64_t *)rp[P_POS], (int64_t *)rp[P_LO], (int64_t *)rp[P_HI], (int64_t *)rp[P_SIZE],
                    (int64_t *)rp[P_BSTART], (int64_t *)rp[P_TIME], (int8_t *)rp[P_KIND], (int32_t *)rp[P_BCOUNT],
                    (int32_t *)rp[P_CONN], (uint32_t *)rp[P_FRAME], (int64_t *)bp[B_LO], (int64_t *)bp[B_HI],
                    (int8_t *)bp[B_NR]};
    int nr_seen = 0;
    Py_ssize_t jb = 0, far = 0;
    uint32_t far_frame = 0;
    Py_ssize_t j;
    Py_BEGIN_ALLOW_THREADS  /* plain C over buffers this call holds: other flows' threads run meanwhile */
    j = level_rows(&a.lv, &a.space, a.e, a.n_events, a.row, a.sides, n_rows, a.blocks, n_blocks, &o, &jb, &nr_seen,
                   &far, &far_frame);
    Py_END_ALLOW_THREADS
    if (j < 0) goto out;
    for (int a = 0; a < N_ROW_ARRAYS; a++)
        if (PyByteArray_Resize(row_out[a], j * (Py_ssize_t)row_itemsize[a]) < 0) goto out;
    for (int a = 0; a < N_BLOCK_ARRAYS; a++)
        if (PyByteArray_Resize(block_out[a], jb * (Py_ssize_t)block_itemsize[a]) < 0) goto out;
    PyObject *rows_tuple = PyTuple_New(N_ROW_ARRAYS), *blocks_tuple = PyTuple_New(N_BLOCK_ARRAYS);
    if (rows_tuple && blocks_tuple) {
        for (int a = 0; a < N_ROW_ARRAYS; a++) { PyTuple_SET_ITEM(rows_tuple, a, row_out[a]); row_out[a] = NULL; }
        for (int a = 0; a < N_BLOCK_ARRAYS; a++) { PyTuple_SET_ITEM(blocks_tuple, a, block_out[a]); block_out[a] = NULL; }
        PyObject *state = space_to_py(&a.space);
        if (state) {  /* "N" consumes the tuples, also on failure */
            result = Py_BuildValue("NNNO(nI)", rows_tuple, blocks_tuple, state, nr_seen ? Py_True : Py_False,
                                   far, far_frame);
            rows_tuple = blocks_tuple = NULL;
        }
    }
    Py_XDECREF(rows_tuple);
    Py_XDECREF(blocks_tuple);
out:
    for (int a = 0; a < N_ROW_ARRAYS; a++) Py_XDECREF(row_out[a]);
    for (int a = 0; a < N_BLOCK_ARRAYS; a++) Py_XDECREF(block_out[a]);
    level_args_release(&a);
    return result;
}

/* plain_tcp_flows(events, blocks, order, sides, group_lo, group_hi) -> per group (i1): PLAIN_QUIET | PLAIN_DATA.
 * The checker's reading of TCP connections first seen in a chunk (rules/checker.py _plain_chunk), without a
 * level or a Board made for each: group g is a connection's rows order[group_lo[g]:group_hi[g]] (sides[] per
 * row, the same slice). Per direction, the level a fresh connection would feed (flows.handshake_spaces's anchor,
 * the sender's first SYN + 1; level_rows) and its start (that SYN unwrapped against the space the rows left, as
 * inputs.start_serial does, + 1: the first cum ack). PLAIN_QUIET: no row carries a block, every row is of one
 * conn, none was left out as far, and in order none lies below the cum ack (a SYN's, then each ack's) nor below
 * 0; PLAIN_DATA: a direction kept a data row (DirectionAccumulator.has_data). Pipeline._hold parks such quiet
 * connections for `check`: their chunk can fire no rule and reads no state until they show again. */
enum { PLAIN_QUIET = 1, PLAIN_DATA = 2 };

int get_row_groups(PyObject *o_ev, PyObject *o_bk, PyObject *o_rows, PyObject *o_side, PyObject *o_lo, PyObject *o_hi,
                   row_groups_t *g, const char *who) {
    memset(g, 0, sizeof *g);
    if (get_buf(o_ev, &g->ev, sizeof(event_t), -1, 0, who) < 0 || get_buf(o_bk, &g->bk, sizeof(block_t), -1, 0, who) < 0 ||
        get_buf(o_rows, &g->rows, 8, -1, 0, who) < 0 || get_buf(o_side, &g->side, 1, g->rows.b.len / 8, 0, who) < 0 ||
        get_buf(o_lo, &g->lo, 8, -1, 0, who) < 0 || get_buf(o_hi, &g->hi, 8, g->lo.b.len / 8, 0, who) < 0)
        return -1;
    g->n_events = g->ev.b.len / (Py_ssize_t)sizeof(event_t);
    g->n_blocks = g->bk.b.len / (Py_ssize_t)sizeof(block_t);
    g->n_rows = g->rows.b.len / 8;
    g->n_groups = g->lo.b.len / 8;
    const int64_t *row = g->rows.b.buf, *lo = g->lo.b.buf, *hi = g->hi.b.buf;
    for (Py_ssize_t k = 0; k < g->n_groups; k++) {
        if (lo[k] < 0 || hi[k] < lo[k] || hi[k] > g->n_rows) {
            PyErr_Format(PyExc_IndexError, "%s: group out of range", who);
            return -1;
        }
        if (hi[k] - lo[k] > g->longest) g->longest = hi[k] - lo[k];
    }
    for (Py_ssize_t i = 0; i < g->n_rows; i++)
        if (row[i] < 0 || row[i] >= g->n_events) {
            PyErr_Format(PyExc_IndexError, "%s: row out of range", who);
            return -1;
        }
    return 0;
}

size_t part_out_bytes(size_t rows, size_t blocks) {
    size_t bytes = rows * (6 * 8 + 3 * 4 + 1) + blocks * (2 * 8 + 1);
    return (bytes + 7) & ~(size_t)7;
}

void part_out_place(part_out_t *o, char *mem, size_t rows, size_t blocks) {
    int64_t *p64 = (int64_t *)mem;
    o->pos = p64; o->lo = p64 + rows; o->hi = p64 + 2 * rows; o->size = p64 + 3 * rows; o->bstart = p64 + 4 * rows;
    o->time_ns = p64 + 5 * rows; o->blo = p64 + 6 * rows; o->bhi = o->blo + blocks;
    int32_t *p32 = (int32_t *)(o->bhi + blocks);
    o->bcount = p32; o->conn = p32 + rows; o->frame = (uint32_t *)(p32 + 2 * rows);
    o->kind = (int8_t *)(p32 + 3 * rows); o->bnr = o->kind + rows;
}

void release_row_groups(row_groups_t *g) {
    buf_t *held[] = {&g->ev, &g->bk, &g->rows, &g->side, &g->lo, &g->hi};
    for (size_t k = 0; k < sizeof held / sizeof *held; k++)
        if (held[k]->ok) PyBuffer_Release(&held[k]->b);
}

PyObject *plain_tcp_flows(PyObject *self, PyObject *args) {
    PyObject *o_ev, *o_bk, *o_order, *o_sides, *o_lo, *o_hi;
    if (!PyArg_ParseTuple(args, "OOOOOO", &o_ev, &o_bk, &o_order, &o_sides, &o_lo, &o_hi)) return NULL;
    row_groups_t a;
    PyObject *verdicts = NULL, *result = NULL;
    char *mem = NULL;
    if (get_row_groups(o_ev, o_bk, o_order, o_sides, o_lo, o_hi, &a, "plain_tcp_flows") < 0) goto out;
    const event_t *e = a.ev.b.buf;
    const int64_t *row = a.rows.b.buf, *lo = a.lo.b.buf, *hi = a.hi.b.buf;
    const int8_t *side = a.side.b.buf;
    Py_ssize_t n_events = a.n_events, G = a.n_groups;
    /* a level's rows (no blocks: a group with any is not quiet, and not fed) */
    size_t L = (size_t)a.longest + 1;
    if (!(mem = malloc(part_out_bytes(L, 1)))) { PyErr_NoMemory(); goto out; }
    part_out_t o;
    part_out_place(&o, mem, L, 1);
    if (!(verdicts = PyByteArray_FromStringAndSize(NULL, G))) goto out;
    int8_t *verdict = (int8_t *)PyByteArray_AS_STRING(verdicts);
    for (Py_ssize_t g = 0; g < G; g++) {
        const int64_t *r = row + lo[g];
        const int8_t *s = side + lo[g];
        Py_ssize_t n = hi[g] - lo[g];
        int quiet = n > 0, data = 0;
        for (Py_ssize_t i = 0; i < n && quiet; i++)
            quiet = e[r[i]].blk_count == 0 && e[r[i]].conn == e[r[0]].conn;
        for (int sender = 0; sender < 2 && quiet; sender++) {
            level_t lv = {LEVEL_TCP, sender, 0, n ? e[r[0]].conn : 0};
            const event_t *syn = NULL;
            for (Py_ssize_t i = 0; i < n && !syn; i++)
                if (s[i] == sender && (e[r[i]].tcp_flags & TCP_FLAG_SYN)) syn = e + r[i];
            serial_space_t space;
            memset(&space, 0, sizeof space);
            uint64_t serial;
            if (syn) serial_unwrap(&space, syn->seq + 1, &serial);  /* (uint32: wraps as anchored_space's mask) */
            Py_ssize_t jb = 0, far = 0;
            uint32_t far_frame = 0;
            int nr_seen = 0;
            Py_ssize_t j = level_rows(&lv, &space, e, n_events, r, s, n, a.bk.b.buf, a.n_blocks, &o, &jb, &nr_seen, &far,
                                      &far_frame);
            if (j < 0) goto out;
            if (far) { quiet = 0; break; }
            int64_t cum = INT64_MIN;
            if (syn) {  /* unwrapped whether far or not, nothing counting it (flows.unwrap_one) */
                serial_space_t after = space;
                serial_unwrap(&after, syn->seq, &serial);
                cum = (int64_t)serial + 1;
            }
            for (Py_ssize_t i = 0; i < j; i++) {
                if (o.lo[i] < cum || o.lo[i] < 0 || o.hi[i] < 0) { quiet = 0; break; }
                if (o.kind[i] && o.lo[i] > cum) cum = o.lo[i];
                if (!o.kind[i]) data = 1;
            }
        }
        verdict[g] = (int8_t)((quiet ? PLAIN_QUIET : 0) | (data ? PLAIN_DATA : 0));
    }
    result = verdicts;
    verdicts = NULL;
out:
    free(mem);
    Py_XDECREF(verdicts);
    release_row_groups(&a);
    return result;
}

/* ---- MPTCP data level (flows.MptcpLevel): which bytes the capture shows carried, at which DSNs ---- */

/* A 64-bit data-level number as a serial: the plugins' wide_serial (packet-nrsack-mptcp.c): from 2^52
 * up relative to the direction's first such number less 256 * 2^32, keeping the low 32 bits. */
#define WIDE_AS_IS_BELOW ((uint64_t)1 << 52)
typedef struct {
    serial_space_t space;
    int wide_known, idsn_pending, data_seen;
    uint64_t wide_offset;
} dl_space_t;

static uint64_t dl_wide(dl_space_t *d, uint64_t v) {
    if (!d->wide_known) {
        d->wide_known = 1;
        d->wide_offset = v < WIDE_AS_IS_BELOW ? 0 : ((v >> 32) - 256) << 32;
    }
    return v - d->wide_offset;
}

/* A DSN or DATA ACK, 4 or 8 octets, as the plugins' unwrap_dl: the first number on the wire checks the
 * IDSN's anchor (decisions 40), then the core's far guard. */
static int dl_unwrap(dl_space_t *d, uint64_t v, int wide, uint64_t *out) {
    if (d->idsn_pending) {
        d->idsn_pending = 0;
        uint64_t x = wide ? v - d->wide_offset : serial_near(d->space.highest, (uint32_t)v);
        uint64_t distance = x > d->space.highest ? x - d->space.highest : d->space.highest - x;
        if (distance > SERIAL_FAR) {
            memset(&d->space, 0, sizeof d->space);
            d->wide_known = 0;
        }
    }
    if (!wide) return serial_unwrap(&d->space, (uint32_t)v, out) == SERIAL_OK;
    return serial_take64(&d->space, dl_wide(d, v), out) == SERIAL_OK;
}

/* one subflow's current mapping in the sender's direction */
typedef struct {
    long long conn, isn;  /* isn -1: its SYN not seen */
    int known;
    uint32_t seq, len;     /* absolute subflow sequence number where it starts; Data-Level Length (0: infinite) */
    uint64_t dsn;
} dl_map_t;

enum { DL_MAPS = 64 };

static int dl_map_store(PyObject *maps, const dl_map_t *m) {
    PyObject *key = PyLong_FromLongLong(m->conn);
    PyObject *value = Py_BuildValue("(LiIIK)", m->isn, m->known, m->seq, m->len, (unsigned long long)m->dsn);
    int rc = key && value ? PyDict_SetItem(maps, key, value) : -1;
    Py_XDECREF(key);
    Py_XDECREF(value);
    return rc;
}

static dl_map_t *dl_map_for(PyObject *maps, dl_map_t *cache, int *n, long long conn) {
    for (int k = 0; k < *n; k++)
        if (cache[k].conn == conn) return cache + k;
    if (*n == DL_MAPS) {  /* more subflows than the cache holds: the last one goes back to the dict */
        if (dl_map_store(maps, cache + DL_MAPS - 1) < 0) return NULL;
        (*n)--;
    }
    dl_map_t *m = cache + (*n)++;
    memset(m, 0, sizeof *m);
    m->conn = conn;
    m->isn = -1;
    PyObject *key = PyLong_FromLongLong(conn);
    if (!key) return NULL;
    PyObject *value = PyDict_GetItemWithError(maps, key);
    Py_DECREF(key);
    if (value) {
        unsigned long long dsn;
        if (!PyArg_ParseTuple(value, "LiIIK", &m->isn, &m->known, &m->seq, &m->len, &dsn)) return NULL;
        m->dsn = dsn;
    } else if (PyErr_Occurred()) {
        return NULL;
    }
    return m;
}

/* mptcp_part(events, rows, side, sender, state, maps)
 *   -> ((pos i8, kind i1, lo i8, hi i8, skip i8), state, (rows left out as far, first such frame))
 * One chunk of an MPTCP connection's data level in direction `sender`, in observation order: a mapping
 * of the sender (a DSS with M whose DSN is not far) becomes its subflow's current one; a segment of the
 * sender carries the data-level bytes [DSN lo, hi) that the current mapping covers of its payload
 * (kind 0; skip: how many payload bytes before lo's the mapping does not cover); a DATA ACK of the
 * peer, once the sender has carried data, is an ack (kind 1, lo = hi = its serial). state: (space
 * state, wide offset or None, IDSN anchor pending, data seen, IDSN + 1 to anchor on or None); maps:
 * {conn: (isn or -1, known, seq, len, dsn)}, updated. */
PyObject *mptcp_part(PyObject *self, PyObject *args) {
    PyObject *o_ev, *o_rows, *o_side, *o_state, *maps, *o_space, *o_offset, *o_anchor;
    int sender, pending, data_seen;
    if (!PyArg_ParseTuple(args, "OOOiOO!", &o_ev, &o_rows, &o_side, &sender, &o_state, &PyDict_Type, &maps) ||
        !PyArg_ParseTuple(o_state, "OOppO", &o_space, &o_offset, &pending, &data_seen, &o_anchor))
        return NULL;
    dl_space_t d;
    memset(&d, 0, sizeof d);
    if (space_from_py(o_space, &d.space) < 0) return NULL;
    d.idsn_pending = pending;
    d.data_seen = data_seen;
    if (o_offset != Py_None) {
        d.wide_known = 1;
        d.wide_offset = PyLong_AsUnsignedLongLong(o_offset);
        if (PyErr_Occurred()) return NULL;
    }
    if (!d.space.anchored && o_anchor != Py_None) {  /* the key's IDSN + 1 (RFC 8684 3.1), as the plugins' learn_key */
        uint64_t anchor = PyLong_AsUnsignedLongLong(o_anchor), unused;
        if (PyErr_Occurred()) return NULL;
        serial_take64(&d.space, dl_wide(&d, anchor), &unused);
        d.idsn_pending = 1;
    }
    buf_t ev = {0}, rows = {0}, side = {0};
    PyObject *out[5] = {0}, *result = NULL;
    static const size_t itemsize[5] = {8, 1, 8, 8, 8};
    dl_map_t cache[DL_MAPS];
    int n_cache = 0;
    if (get_buf(o_ev, &ev, sizeof(event_t), -1, 0, "mptcp_part") < 0 ||
        get_buf(o_rows, &rows, 8, -1, 0, "mptcp_part") < 0 ||
        get_buf(o_side, &side, 1, rows.b.len / 8, 0, "mptcp_part") < 0)
        goto out;
    Py_ssize_t n_rows = rows.b.len / 8, n_events = ev.b.len / (Py_ssize_t)sizeof(event_t), j = 0, far = 0;
    uint32_t far_frame = 0;
    char *p[5];
    for (int a = 0; a < 5; a++)
        if (!(out[a] = new_array(n_rows, itemsize[a], &p[a]))) goto out;
    int64_t *pos = (int64_t *)p[0], *lo = (int64_t *)p[2], *hi = (int64_t *)p[3], *skip = (int64_t *)p[4];
    int8_t *kind = (int8_t *)p[1];
    const event_t *e = ev.b.buf;
    const int64_t *row = rows.b.buf;
    const int8_t *sides = side.b.buf;
    for (Py_ssize_t i = 0; i < n_rows; i++) {
        if (row[i] < 0 || row[i] >= n_events) {
            PyErr_SetString(PyExc_IndexError, "mptcp_part: row out of range");
            goto out;
        }
        const event_t *x = e + row[i];
        if (x->proto != 6) continue;
        uint64_t u;
        if (sides[i] != sender) {
            if (!(x->flags & EV_DATA_ACK) || !d.data_seen) continue;  /* the plugins: no data yet, no ack */
            if (!dl_unwrap(&d, x->data_ack, (x->flags & EV_DACK64) != 0, &u)) {
                if (!far++) far_frame = x->frame;
                continue;
            }
            pos[j] = i; kind[j] = 1; lo[j] = hi[j] = (int64_t)u; skip[j] = 0; j++;
            continue;
        }
        dl_map_t *m = NULL;
        if ((x->tcp_flags & TCP_FLAG_SYN) || (x->flags & EV_DSS_MAP) || x->len) {
            if (!(m = dl_map_for(maps, cache, &n_cache, x->conn))) goto out;
        }
        if (!m) continue;
        if (x->tcp_flags & TCP_FLAG_SYN) m->isn = x->seq;
        if (x->flags & EV_DSS_MAP) {
            if (dl_unwrap(&d, x->dsn, (x->flags & EV_DSN64) != 0, &u)) {
                m->known = 1;
                m->dsn = u;
                m->seq = m->isn >= 0 ? (uint32_t)m->isn + x->aux : x->seq;
                m->len = x->dss_len;
            } else if (!far++) {
                far_frame = x->frame;
            }
        }
        if (!x->len || !m->known) continue;
        /* the payload bytes the mapping covers (the plugins' mptcp_payload) */
        int64_t off = (int32_t)(x->seq - m->seq), first = off > 0 ? off : 0, end = off + (int64_t)x->len;
        if (m->len && end > (int64_t)m->len) end = m->len;
        if (end <= first) continue;
        pos[j] = i; kind[j] = 0; lo[j] = (int64_t)(m->dsn + (uint64_t)first); hi[j] = lo[j] + (end - first);
        skip[j] = first - off;
        d.data_seen = 1;
        j++;
    }
    for (int k = 0; k < n_cache; k++)
        if (dl_map_store(maps, cache + k) < 0) goto out;
    for (int a = 0; a < 5; a++)
        if (PyByteArray_Resize(out[a], j * (Py_ssize_t)itemsize[a]) < 0) goto out;
    PyObject *space = space_to_py(&d.space), *offset = d.wide_known ? PyLong_FromUnsignedLongLong(d.wide_offset)
                                                                       : (Py_INCREF(Py_None), Py_None);
    if (space && offset)
        result = Py_BuildValue("(OOOOO)(NNOOO)(nI)", out[0], out[1], out[2], out[3], out[4], space, offset,
                               d.idsn_pending ? Py_True : Py_False, d.data_seen ? Py_True : Py_False, Py_None,
                               far, far_frame);
    else {
        Py_XDECREF(space);
        Py_XDECREF(offset);
    }
out:
    for (int a = 0; a < 5; a++) Py_XDECREF(out[a]);
    if (ev.ok) PyBuffer_Release(&ev.b);
    if (rows.ok) PyBuffer_Release(&rows.b);
    if (side.ok) PyBuffer_Release(&side.b);
    return result;
}
