/* SPDX-License-Identifier: MIT */
/* Compiled event loop of generator/sim/model.py for SCTP and TCP over one path and MPTCP.
 *
 * It mirrors Simulation in model.py statement for statement, with the same event order (time,
 * then push sequence), the same integer arithmetic and the same random draws (passed in), so
 * that its trace is identical to the Python model's; tests/test_simulator_fast.py checks that.
 * model.py stays the reference and handles everything else (CMT, the Linux profiles).
 * Built at install by setup.py and loaded with ctypes by fast.py.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int64_t i64;

enum { DATA = 0, RTX = 1, ACK = 2, CTRL = 3 };
enum { INFL = 1, SACKED = 2, LOST = 4, RTXD = 8, ACKED = 16, HOLE = 32, FRTX = 64 };
enum { EV_DATA_ARRIVAL = 0, EV_ACK_ARRIVAL, EV_DELACK, EV_RTO, EV_READY, EV_CTRL, EV_HB_ACK, EV_DEGRADE };
#define SCTP_MAX_BLOCKS ((1500 - 20 - 12 - 20) / 4)
#define TCP_MAX_BLOCKS 4
#define MPTCP_MAX_BLOCKS 3
#define GAP_OFFSET_MAX 0xFFFF

typedef struct {
    i64 n, S, last_size, sndbuf, rcvbuf, sctp, nr, ack_every, delack_ns, rto_initial, rto_min,
        rto_max, init_cwnd, limit_ns, overhead, gilbert, np /* paths */,
        /* the profile (profiles.py), as model.py turns it into numbers */
        gap_filler_delayed, max_burst, chunk_header, window_unit, by_size, grow_margin,
        persistent_htna, restart_timer_on_cum_ack, path_max_retrans, cwnd_degrade, max_burst_cwnd,
        slow_start_limit, refast_retransmit, fr_ssthresh_floor, U /* cwnd's packet */,
        rto_restored_on_ack, mptcp;
    /* per path; draw_*, ack_*: where its data and ack streams lie in the draws passed in */
    i64 delay[16], qcap[16], ready_t[16], draw_off[16], draw_len[16], ack_off[16], ack_len[16];
    double ns_per_byte[16], loss[16], enter_bad[16], leave_bad[16], ack_loss[16];
} Params;

/* growable arrays */
typedef struct { i64 *v; i64 n, cap; } Vec;
static int vpush(Vec *a, i64 x) {
    if (a->n == a->cap) {
        i64 cap = a->cap ? a->cap * 2 : 1024;
        i64 *v = realloc(a->v, (size_t)cap * sizeof(i64));
        if (!v) return -1;
        a->v = v; a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

typedef struct {
    Vec f_t, f_kind, f_a, f_b;          /* sender frames */
    Vec a_cum, a_rwnd, a_boff, a_bcnt;  /* acks */
    Vec b_s, b_e;                       /* blocks of the acks */
    Vec truth;                          /* 9 per row */
    Vec cwnd;                           /* 4 per row */
    Vec rec;                            /* 4 per row: path, kind (0 fast, 1 rto), start, end (-1) */
    Vec r_t, r_kind, r_a, r_b;          /* receiver frames, when recorded */
    Vec a_sbcnt;                        /* MPTCP: subflow blocks, after the ack's a_bcnt data blocks */
    Vec f_p, r_p, a_scum;               /* the frames' paths; MPTCP: the subflow cum ack */
    i64 counters[8];  /* data, rtx, fast rtx, timeouts, acks, queue drops, random drops, acked */
    i64 first_data_ns, done_ns, error;
} Out;

/* interval set of [s, e) */
typedef struct { i64 *s, *e; i64 n, cap; } ISet;
static int iset_reserve(ISet *x, i64 need) {
    if (need <= x->cap) return 0;
    i64 cap = x->cap ? x->cap : 16;
    while (cap < need) cap *= 2;
    i64 *s = realloc(x->s, (size_t)cap * sizeof(i64)), *e;
    if (!s) return -1;
    x->s = s;
    e = realloc(x->e, (size_t)cap * sizeof(i64));
    if (!e) return -1;
    x->e = e; x->cap = cap;
    return 0;
}
static i64 lower_bound(const i64 *a, i64 n, i64 x) { /* first index with a[i] >= x */
    i64 lo = 0, hi = n;
    while (lo < hi) { i64 m = (lo + hi) / 2; if (a[m] < x) lo = m + 1; else hi = m; }
    return lo;
}
static i64 upper_bound(const i64 *a, i64 n, i64 x) { /* first index with a[i] > x */
    i64 lo = 0, hi = n;
    while (lo < hi) { i64 m = (lo + hi) / 2; if (a[m] <= x) lo = m + 1; else hi = m; }
    return lo;
}
/* insert [s, e); the new sub-ranges go to ns/ne (caller's buffers, room for n+1); returns count */
static i64 iset_add(ISet *x, i64 s, i64 e, i64 *ns, i64 *ne) {
    if (s >= e) return 0;
    i64 i = lower_bound(x->e, x->n, s), j = i, k = 0, cur = s, lo = s, hi = e;
    if (i < x->n && x->s[i] <= s && x->e[i] >= e) return 0;
    while (j < x->n && x->s[j] <= e) {
        if (x->s[j] > cur) { ns[k] = cur; ne[k] = x->s[j]; k++; }
        if (x->e[j] > cur) cur = x->e[j];
        if (x->s[j] < lo) lo = x->s[j];
        if (x->e[j] > hi) hi = x->e[j];
        j++;
    }
    if (cur < e) { ns[k] = cur; ne[k] = e; k++; }
    if (iset_reserve(x, x->n + 1)) return -1;
    /* replace [i, j) by one interval */
    i64 removed = j - i;
    if (removed != 1) {
        memmove(x->s + i + 1, x->s + j, (size_t)(x->n - j) * sizeof(i64));
        memmove(x->e + i + 1, x->e + j, (size_t)(x->n - j) * sizeof(i64));
        x->n += 1 - removed;
    }
    x->s[i] = lo; x->e[i] = hi;
    return k;
}
static int iset_contains(const ISet *x, i64 v) {
    i64 i = upper_bound(x->s, x->n, v) - 1;
    return i >= 0 && x->e[i] > v;
}
static int iset_block_of(const ISet *x, i64 v, i64 *bs, i64 *be) {
    i64 i = upper_bound(x->s, x->n, v) - 1;
    if (i >= 0 && x->e[i] > v) { *bs = x->s[i]; *be = x->e[i]; return 1; }
    return 0;
}
static void iset_pop_front(ISet *x, i64 count) {
    memmove(x->s, x->s + count, (size_t)(x->n - count) * sizeof(i64));
    memmove(x->e, x->e + count, (size_t)(x->n - count) * sizeof(i64));
    x->n -= count;
}

/* event heap ordered by (t, seq) */
typedef struct { i64 t, seq, kind, a, b; } Ev;
typedef struct { Ev *v; i64 n, cap; } Heap;
static int ev_less(const Ev *x, const Ev *y) { return x->t < y->t || (x->t == y->t && x->seq < y->seq); }
static int heap_push(Heap *h, Ev e) {
    if (h->n == h->cap) {
        i64 cap = h->cap ? h->cap * 2 : 1024;
        Ev *v = realloc(h->v, (size_t)cap * sizeof(Ev));
        if (!v) return -1;
        h->v = v; h->cap = cap;
    }
    i64 i = h->n++;
    while (i > 0) {
        i64 p = (i - 1) / 2;
        if (!ev_less(&e, &h->v[p])) break;
        h->v[i] = h->v[p]; i = p;
    }
    h->v[i] = e;
    return 0;
}
static Ev heap_pop(Heap *h) {
    Ev top = h->v[0], last = h->v[--h->n];
    i64 i = 0;
    for (;;) {
        i64 c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && ev_less(&h->v[c + 1], &h->v[c])) c++;
        if (!ev_less(&h->v[c], &last)) break;
        h->v[i] = h->v[c]; i = c;
    }
    if (h->n) h->v[i] = last;
    return top;
}
/* min-heap of units (pending retransmissions) */
typedef struct { i64 *v; i64 n, cap; } UHeap;
static int uheap_push(UHeap *h, i64 x) {
    if (h->n == h->cap) {
        i64 cap = h->cap ? h->cap * 2 : 256;
        i64 *v = realloc(h->v, (size_t)cap * sizeof(i64));
        if (!v) return -1;
        h->v = v; h->cap = cap;
    }
    i64 i = h->n++;
    while (i > 0) { i64 p = (i - 1) / 2; if (h->v[p] <= x) break; h->v[i] = h->v[p]; i = p; }
    h->v[i] = x;
    return 0;
}
static void uheap_pop(UHeap *h) {
    i64 last = h->v[--h->n], i = 0;
    for (;;) {
        i64 c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && h->v[c + 1] < h->v[c]) c++;
        if (h->v[c] >= last) break;
        h->v[i] = h->v[c]; i = c;
    }
    if (h->n) h->v[i] = last;
}

#define MAXP 16  /* model.py's limit on paths */
typedef struct {
    const Params *P;
    const double *first_draw, *draws, *ack_draws;
    const uint8_t *drop;
    i64 burst;  /* Max.Burst allowance (-1: no limit) */
    Out *o;
    Heap ev; i64 seq;
    uint8_t *flags, *upath; i64 *txt, *sidx; int32_t *miss;
    UHeap pending;
    i64 next_new, sent_bytes, peer_rwnd, rr;
    /* the ack spaces: the one TSN / byte space, or one per MPTCP subflow (units: index -> unit) */
    i64 sp_cum[MAXP], sp_high[MAXP], sp_sent[MAXP], n_holes[MAXP];
    ISet sp_sacked[MAXP]; Vec holes[MAXP], units[MAXP];
    Vec refr; i64 *refr_mark;  /* model.py's refr: units in first-retransmitted order, mark or -1 */
    /* data level */
    i64 dcum, dcum_bytes, sacked_bytes, nr_bytes; ISet dsacked, dnr, dsub[MAXP]; int gap_open;
    /* per path */
    i64 cwnd[MAXP], ssthresh[MAXP], pba[MAXP], flight[MAXP], fr_allow[MAXP], srtt[MAXP],
        has_srtt[MAXP], rttvar[MAXP], rto[MAXP], rto_deadline[MAXP], has_deadline[MAXP],
        rto_event[MAXP], ready[MAXP], errors[MAXP], degrade_deadline[MAXP], has_degrade[MAXP],
        degrade_event[MAXP], htna[MAXP], draw_pos[MAXP], ack_draw_pos[MAXP];
    int rec_on[MAXP], ge_bad[MAXP]; i64 rec_kind[MAXP], rec_start[MAXP], rec_exit[MAXP];
    Vec outq[MAXP]; i64 outq_head[MAXP];
    Vec linkq[MAXP]; i64 linkq_head[MAXP];
    /* receiver; MPTCP: a subflow level per path, and the delayed ack per subflow */
    i64 rcum, ooo_bytes, last_arrival_path; ISet rset;
    i64 scum[MAXP]; ISet sset[MAXP];
    i64 ack_pending[MAXP], delack_gen[MAXP], delack_armed[MAXP];
    i64 *tmp_s, *tmp_e; i64 tmp_cap;
    int record_receiver;
} Sim;

#define TRY(x) do { if ((x) < 0) { s->o->error = 1; return; } } while (0)

static i64 size_of(const Sim *s, i64 u) { return u != s->P->n - 1 ? s->P->S : s->P->last_size; }
static i64 range_bytes(const Sim *s, i64 a, i64 b) {
    if (b <= a) return 0;
    if (b >= s->P->n) return (b - a - 1) * s->P->S + s->P->last_size;
    return (b - a) * s->P->S;
}
/* a unit's index in its ack space, the unit at an index of space q, the space of a unit */
static i64 index_of(const Sim *s, i64 u) { return s->P->mptcp ? s->sidx[u] : u; }
static i64 unit_at(const Sim *s, i64 q, i64 i) { return s->P->mptcp ? s->units[q].v[i] : i; }
static i64 space_of(const Sim *s, i64 u) { return s->P->mptcp ? s->upath[u] : 0; }
static int tmp_reserve(Sim *s, i64 need) {
    if (need <= s->tmp_cap) return 0;
    i64 cap = s->tmp_cap ? s->tmp_cap : 64;
    while (cap < need) cap *= 2;
    i64 *a = realloc(s->tmp_s, (size_t)cap * sizeof(i64)), *b;
    if (!a) return -1;
    s->tmp_s = a;
    b = realloc(s->tmp_e, (size_t)cap * sizeof(i64));
    if (!b) return -1;
    s->tmp_e = b; s->tmp_cap = cap;
    return 0;
}
static int push(Sim *s, i64 t, i64 kind, i64 a, i64 b) {
    Ev e = {t, ++s->seq, kind, a, b};
    return heap_push(&s->ev, e);
}
static int blocked(const Params *P, i64 rtxq) {  /* model.py's _blocked */
    if (!P->chunk_header) return P->sndbuf - rtxq < P->S;
    return P->sndbuf - (rtxq + P->S - 1) / P->S * P->window_unit < P->window_unit;
}
static void truth(Sim *s, i64 frame, i64 now, int is_ack) {
    i64 rs = s->sent_bytes - s->dcum_bytes, rn = rs - s->nr_bytes, r = s->P->nr ? rn : rs;
    i64 row[9] = {frame, now, is_ack, rs, rn, s->sacked_bytes, s->nr_bytes,
                  blocked(s->P, r), s->gap_open};
    for (int i = 0; i < 9; i++) TRY(vpush(&s->o->truth, row[i]));
}
static void cwnd_changed(Sim *s, i64 now, i64 q) {
    i64 row[4] = {now, q, s->cwnd[q], s->ssthresh[q]};
    for (int i = 0; i < 4; i++) TRY(vpush(&s->o->cwnd, row[i]));
}
static void recovery(Sim *s, i64 q, i64 end) {
    i64 row[4] = {q, s->rec_kind[q], s->rec_start[q], end};
    for (int i = 0; i < 4; i++) TRY(vpush(&s->o->rec, row[i]));
}
static void frame(Sim *s, i64 t, i64 kind, i64 p, i64 a, i64 b) {
    TRY(vpush(&s->o->f_t, t)); TRY(vpush(&s->o->f_kind, kind)); TRY(vpush(&s->o->f_p, p));
    TRY(vpush(&s->o->f_a, a)); TRY(vpush(&s->o->f_b, b));
}
static void rframe(Sim *s, i64 t, i64 kind, i64 p, i64 a, i64 b) {
    TRY(vpush(&s->o->r_t, t)); TRY(vpush(&s->o->r_kind, kind)); TRY(vpush(&s->o->r_p, p));
    TRY(vpush(&s->o->r_a, a)); TRY(vpush(&s->o->r_b, b));
}
static double uniform(Sim *s, i64 p) {  /* path p's stream */
    if (s->draw_pos[p] >= s->P->draw_len[p]) { s->o->error = 2; return 1.0; }  /* Python falls back */
    return s->draws[s->P->draw_off[p] + s->draw_pos[p]++];
}
static int ack_lost(Sim *s, i64 p) {  /* the ack direction's stream of path p */
    const Params *P = s->P;
    if (P->ack_loss[p] <= 0.0) return 0;
    if (s->ack_draw_pos[p] >= P->ack_len[p]) { s->o->error = 2; return 1; }
    return s->ack_draws[P->ack_off[p] + s->ack_draw_pos[p]++] < P->ack_loss[p];
}
static i64 chunk_bytes(i64 size, i64 header) {
    return header == 0 ? size : (size + header + 3) / 4 * 4;
}
static int burst_spent(Sim *s) {
    if (s->burst < 0) return 0;
    if (s->burst == 0) return 1;
    s->burst--;
    return 0;
}
static int lost(Sim *s, i64 p, i64 u, int rtx) {
    const Params *P = s->P;
    if (P->loss[p] <= 0.0) return 0;
    if (!P->gilbert) return (rtx ? uniform(s, p) : s->first_draw[u]) < P->loss[p];
    if (s->ge_bad[p]) { if (uniform(s, p) < P->leave_bad[p]) s->ge_bad[p] = 0; }
    else if (uniform(s, p) < P->enter_bad[p]) s->ge_bad[p] = 1;
    return s->ge_bad[p];
}
static void arm_rto(Sim *s, i64 now, i64 q) {
    s->rto_deadline[q] = now + s->rto[q]; s->has_deadline[q] = 1;
    if (!s->rto_event[q]) { s->rto_event[q] = 1; TRY(push(s, s->rto_deadline[q], EV_RTO, q, 0)); }
}
static void arm_degrade(Sim *s, i64 now, i64 q) {
    s->degrade_deadline[q] = now + s->rto[q]; s->has_degrade[q] = 1;
    if (!s->degrade_event[q]) { s->degrade_event[q] = 1; TRY(push(s, s->degrade_deadline[q], EV_DEGRADE, q, 0)); }
}
static void send_unit(Sim *s, i64 now, i64 u, i64 p, int rtx) {
    const Params *P = s->P;
    i64 sz = size_of(s, u);
    s->fr_allow[p] = 0;
    if (rtx) {
        s->txt[u] = -1;
        s->flags[u] = (uint8_t)((s->flags[u] | INFL | RTXD) & ~LOST);
        s->upath[u] = (uint8_t)p;
        s->o->counters[1]++;
        frame(s, now, RTX, p, u, index_of(s, u));
    } else {
        s->txt[u] = now;
        s->flags[u] |= INFL;
        s->upath[u] = (uint8_t)p;
        if (P->mptcp) {
            s->sidx[u] = s->units[p].n;
            TRY(vpush(&s->units[p], u));
            s->sp_sent[p] = s->units[p].n;
        } else {
            s->sp_sent[0] = u + 1;
        }
        s->sent_bytes += sz;
        if (s->o->first_data_ns < 0) s->o->first_data_ns = now;
        frame(s, now, DATA, p, u, index_of(s, u));
        truth(s, s->o->f_t.n - 1, now, 0);
    }
    s->o->counters[0]++;
    s->flight[p] += sz;
    TRY(vpush(&s->outq[p], u));
    if (!s->has_deadline[p]) arm_rto(s, now, p);
    if (P->cwnd_degrade) arm_degrade(s, now, p);
    Vec *lq = &s->linkq[p];
    while (s->linkq_head[p] < lq->n && lq->v[s->linkq_head[p]] <= now) s->linkq_head[p]++;
    if (lq->n - s->linkq_head[p] >= P->qcap[p]) { s->o->counters[5]++; return; }
    i64 start = s->linkq_head[p] < lq->n ? lq->v[lq->n - 1] : now;
    i64 finish = start + (i64)((double)(sz + P->overhead) * P->ns_per_byte[p]);
    TRY(vpush(lq, finish));
    if (s->linkq_head[p] > 4096 && s->linkq_head[p] * 2 > lq->n) {  /* compact the FIFO */
        memmove(lq->v, lq->v + s->linkq_head[p], (size_t)(lq->n - s->linkq_head[p]) * sizeof(i64));
        lq->n -= s->linkq_head[p]; s->linkq_head[p] = 0;
    }
    if (lost(s, p, u, rtx) || (!rtx && s->drop[u])) { s->o->counters[6]++; return; }
    TRY(push(s, finish + P->delay[p], EV_DATA_ARRIVAL, p, u));
}
static int has_room(const Sim *s, i64 q, i64 need) {
    return s->ready[q] && (s->flight[q] + need <= s->cwnd[q] || s->fr_allow[q]);
}
static void try_send(Sim *s, i64 now) {
    const Params *P = s->P;
    if (P->max_burst_cwnd) {  /* usrsctp's Max.Burst (model.py _cut_cwnd_to_burst) */
        i64 limit = P->max_burst_cwnd * P->U;
        for (i64 q = 0; q < P->np; q++) {
            if (s->flight[q] + limit < s->cwnd[q]) {
                if (s->ssthresh[q] < s->cwnd[q]) s->ssthresh[q] = s->cwnd[q];
                s->cwnd[q] = s->flight[q] + limit;
                cwnd_changed(s, now, q);
            }
        }
    }
    for (;;) {
        while (s->pending.n && !(s->flags[s->pending.v[0]] & LOST)) uheap_pop(&s->pending);
        if (s->pending.n) {  /* a retransmission goes on the path the unit last left on */
            i64 u = s->pending.v[0], sz = size_of(s, u), need = P->by_size ? sz : 1, p = s->upath[u];
            if (!has_room(s, p, need)) return;
            if (burst_spent(s)) return;
            uheap_pop(&s->pending);
            send_unit(s, now, u, p, 1);
            if (s->o->error) return;
            continue;
        }
        i64 u = s->next_new, p = 0;
        if (u >= P->n) return;
        i64 sz = size_of(s, u), in_queue = s->sent_bytes - s->dcum_bytes, need = P->by_size ? sz : 1;
        i64 rtxq = P->nr ? in_queue - s->nr_bytes : in_queue;
        if (P->sndbuf - rtxq / P->S * P->window_unit < chunk_bytes(sz, P->chunk_header)) return;
        if (in_queue + sz > s->peer_rwnd) return;
        if (P->np == 1) {
            if (!has_room(s, 0, need)) return;
        } else {  /* round robin over the paths with room */
            p = -1;
            for (i64 k = 0; k < P->np && p < 0; k++)
                if (has_room(s, (s->rr + k) % P->np, need)) p = (s->rr + k) % P->np;
            if (p < 0) return;
            s->rr = (p + 1) % P->np;
        }
        if (burst_spent(s)) return;
        s->next_new = u + 1;
        send_unit(s, now, u, p, 0);
        if (s->o->error) return;
    }
}
static void hole_remove(Sim *s, i64 u) {
    if (s->flags[u] & HOLE) { s->flags[u] &= (uint8_t)~HOLE; s->n_holes[space_of(s, u)]--; }
}
static void mark_lost(Sim *s, i64 u, i64 q) {
    s->flags[u] = (uint8_t)((s->flags[u] & ~INFL) | LOST);
    s->flight[q] -= size_of(s, u);
    hole_remove(s, u);
    TRY(uheap_push(&s->pending, u));
}
static void fast_retransmit(Sim *s, i64 now, i64 sp, i64 u, i64 q) {
    const Params *P = s->P;
    i64 sz = size_of(s, u);
    mark_lost(s, u, q);
    s->flags[u] |= FRTX;
    s->o->counters[2]++;
    if (P->refast_retransmit) {
        if (s->refr_mark[u] < 0 && vpush(&s->refr, u) < 0) { s->o->error = 1; return; }
        s->refr_mark[u] = s->next_new;
    }
    if (!s->rec_on[q]) {
        if (P->sctp) s->ssthresh[q] = s->cwnd[q] / 2 > P->fr_ssthresh_floor * P->U ? s->cwnd[q] / 2 : P->fr_ssthresh_floor * P->U;
        else s->ssthresh[q] = (s->flight[q] + sz) / 2 > 2 * P->U ? (s->flight[q] + sz) / 2 : 2 * P->U;
        s->cwnd[q] = s->ssthresh[q];
        s->pba[q] = 0;
        s->fr_allow[q] = 1;
        s->rec_on[q] = 1; s->rec_kind[q] = 0; s->rec_start[q] = now; s->rec_exit[q] = s->sp_sent[sp] - 1;
        cwnd_changed(s, now, q);
    }
}
static void set_rto(Sim *s, i64 q) {
    const Params *P = s->P;
    i64 rto = s->srtt[q] + 4 * s->rttvar[q];
    if (rto < P->rto_min) rto = P->rto_min;
    if (rto > P->rto_max) rto = P->rto_max;
    s->rto[q] = rto;
}
static void rtt_sample(Sim *s, i64 q, i64 r) {
    if (!s->has_srtt[q]) { s->srtt[q] = r; s->rttvar[q] = r / 2; s->has_srtt[q] = 1; }
    else {
        i64 d = s->srtt[q] - r; if (d < 0) d = -d;
        s->rttvar[q] = (3 * s->rttvar[q] + d) / 4;
        s->srtt[q] = (7 * s->srtt[q] + r) / 8;
    }
    set_rto(s, q);
}
static i64 earliest_outstanding(Sim *s, i64 q) {
    Vec *out = &s->outq[q];
    while (s->outq_head[q] < out->n && !(s->flags[out->v[s->outq_head[q]]] & INFL)) s->outq_head[q]++;
    if (s->outq_head[q] > 4096 && s->outq_head[q] * 2 > out->n) {
        memmove(out->v, out->v + s->outq_head[q], (size_t)(out->n - s->outq_head[q]) * sizeof(i64));
        out->n -= s->outq_head[q]; s->outq_head[q] = 0;
    }
    return s->outq_head[q] < out->n ? out->v[s->outq_head[q]] : -1;
}
/* model.py _transport_ack for ack space sp. Every unit of a space is on one path (its space's
 * under MPTCP, where a retransmission keeps the unit's path; the one path otherwise), so only
 * that path's state moves: q below. */
static void transport_ack(Sim *s, i64 now, i64 sp, i64 cum, const i64 *bs, const i64 *be, i64 nb) {
    const Params *P = s->P;
    if (cum < s->sp_cum[sp]) return;
    i64 q = sp;
    i64 flight_before = s->flight[q], earliest = earliest_outstanding(s, q);
    i64 newly_bytes = 0, newly_max = -1, rtt_unit = -1;
    int cum_advanced = cum > s->sp_cum[sp], fast_rtx_acked = 0;
    uint8_t *flags = s->flags;
    ISet *sacked = &s->sp_sacked[sp];
    if (cum_advanced) {
        for (i64 i = s->sp_cum[sp]; i < cum; i++) {
            i64 u = unit_at(s, sp, i);
            uint8_t f = flags[u];
            if (f & FRTX) fast_rtx_acked = 1;
            if (!(f & SACKED)) {
                if (!(f & LOST)) s->errors[q] = 0;  /* model.py: acked data clears the errors */
                i64 sz = size_of(s, u);
                if (f & INFL) s->flight[q] -= sz;
                newly_bytes += sz;
                newly_max = i;
                if (s->txt[u] >= 0) rtt_unit = u;
            }
            flags[u] = (uint8_t)((f | ACKED) & ~(INFL | LOST));
            hole_remove(s, u);
        }
        s->sp_cum[sp] = cum;
        i64 k = 0;
        while (k < sacked->n && sacked->e[k] <= cum) k++;
        iset_pop_front(sacked, k);
        if (sacked->n && sacked->s[0] < cum) sacked->s[0] = cum;
        if (fast_rtx_acked && P->max_burst) s->burst = P->max_burst;
    }
    i64 old_high = s->sp_high[sp];
    for (i64 b = 0; b < nb; b++) {
        if (be[b] <= s->sp_cum[sp]) continue;
        if (tmp_reserve(s, sacked->n + 2)) { s->o->error = 1; return; }
        i64 k = iset_add(sacked, bs[b] > s->sp_cum[sp] ? bs[b] : s->sp_cum[sp], be[b], s->tmp_s, s->tmp_e);
        if (k < 0) { s->o->error = 1; return; }
        for (i64 j = 0; j < k; j++) {
            for (i64 i = s->tmp_s[j]; i < s->tmp_e[j]; i++) {
                i64 u = unit_at(s, sp, i);
                uint8_t f = flags[u];
                i64 sz = size_of(s, u);
                if (f & INFL) s->flight[q] -= sz;
                flags[u] = (uint8_t)((f | SACKED) & ~(INFL | LOST));
                newly_bytes += sz;
                if (i > newly_max) newly_max = i;
                if (s->txt[u] >= 0) rtt_unit = u;
                hole_remove(s, u);
            }
        }
        if (be[b] > s->sp_high[sp]) s->sp_high[sp] = be[b];
    }
    for (i64 i = old_high > s->sp_cum[sp] ? old_high : s->sp_cum[sp]; i < s->sp_high[sp]; i++) {
        i64 u = unit_at(s, sp, i);
        uint8_t f = flags[u];
        if ((f & INFL) && !(f & (SACKED | RTXD)) && !(f & HOLE)) {
            flags[u] |= HOLE; s->n_holes[sp]++;
            TRY(vpush(&s->holes[sp], u));
        }
    }
    i64 marker = newly_max;
    if (P->persistent_htna) { if (newly_max > s->htna[q]) s->htna[q] = newly_max; marker = s->htna[q]; }
    Vec *holes = &s->holes[sp];
    if (s->n_holes[sp]) {  /* the hole list is ascending by construction: compact it while walking */
        i64 w = 0, count = holes->n;
        int in_fr = P->sctp && cum_advanced && s->rec_on[q] && s->rec_kind[q] == 0;  /* as it arrived */
        for (i64 r = 0; r < count; r++) {
            i64 u = holes->v[r];
            if (!(flags[u] & HOLE)) continue;
            /* in SCTP fast recovery an ack that advances the cum ack counts for every hole */
            if (index_of(s, u) < marker || in_fr) {
                i64 m = s->miss[u] + 1;
                if (m >= 3) { s->miss[u] = 0; fast_retransmit(s, now, sp, u, q); if (s->o->error) return; }
                else s->miss[u] = (int32_t)m;
            }
            if (flags[u] & HOLE) holes->v[w++] = u;
        }
        holes->n = w;
    } else {
        holes->n = 0;
    }
    if (s->refr.n) {  /* the fast-retransmitted units' second chance (model.py's refr; one path) */
        i64 w = 0, count = s->refr.n;
        for (i64 r = 0; r < count; r++) {
            i64 u = s->refr.v[r];
            if (flags[u] & (SACKED | ACKED)) { s->refr_mark[u] = -1; continue; }
            if ((flags[u] & INFL) && marker >= s->refr_mark[u]) {
                i64 m = s->miss[u] + 1;
                if (m >= 3) { s->miss[u] = 0; fast_retransmit(s, now, sp, u, q); if (s->o->error) return; }
                else s->miss[u] = (int32_t)m;
            }
            s->refr.v[w++] = u;
        }
        s->refr.n = w;
    }
    if (s->rec_on[q] && s->sp_cum[sp] > s->rec_exit[q]) { recovery(s, q, now); s->rec_on[q] = 0; }
    if (!newly_bytes) return;
    if (rtt_unit >= 0) rtt_sample(s, q, now - s->txt[rtt_unit]);
    else if (P->rto_restored_on_ack && s->has_srtt[q]) set_rto(s, q);
    if ((P->restart_timer_on_cum_ack && cum_advanced) || (earliest >= 0 && (flags[earliest] & (ACKED | SACKED)))) {
        if (s->flight[q] > 0) arm_rto(s, now, q);
        else s->has_deadline[q] = 0;
    }
    if (s->rec_on[q] || !cum_advanced) return;
    if (flight_before + P->grow_margin <= s->cwnd[q]) return;
    if (s->cwnd[q] <= s->ssthresh[q]) {
        i64 limit = P->slow_start_limit * P->U;
        s->cwnd[q] += newly_bytes < limit ? newly_bytes : limit;
        cwnd_changed(s, now, q);
    } else {
        s->pba[q] += newly_bytes;
        if (s->pba[q] >= s->cwnd[q]) { s->pba[q] -= s->cwnd[q]; s->cwnd[q] += P->U; cwnd_changed(s, now, q); }
    }
}
/* [lo, hi) known received at the data level (non-renegable too when nr): model.py _data_sacked */
static int data_sacked(Sim *s, i64 lo, i64 hi, int nr) {
    i64 k;
    if (lo < s->dcum) lo = s->dcum;
    if (tmp_reserve(s, s->dsacked.n + s->dnr.n + 2)) return -1;
    k = iset_add(&s->dsacked, lo, hi, s->tmp_s, s->tmp_e);
    if (k < 0) return -1;
    for (i64 j = 0; j < k; j++) s->sacked_bytes += range_bytes(s, s->tmp_s[j], s->tmp_e[j]);
    if (nr) {
        k = iset_add(&s->dnr, lo, hi, s->tmp_s, s->tmp_e);
        if (k < 0) return -1;
        for (i64 j = 0; j < k; j++) s->nr_bytes += range_bytes(s, s->tmp_s[j], s->tmp_e[j]);
    }
    return 0;
}
/* decision 12 (model.py _subflow_acked): what subflow p's ack covers is sacked at the data level,
 * renegable, unit by unit through the subflow index each was mapped to */
static int subflow_acked(Sim *s, i64 p, i64 lo, i64 hi) {
    ISet *x = &s->dsub[p];
    i64 dcum = s->dcum;
    if (tmp_reserve(s, x->n + 2)) return -1;
    i64 k = iset_add(x, lo, hi, s->tmp_s, s->tmp_e);
    if (k < 0) return -1;
    /* data_sacked reuses tmp: keep this add's ranges apart */
    i64 *ranges = malloc((size_t)(2 * k + 1) * sizeof(i64));
    if (!ranges) return -1;
    memcpy(ranges, s->tmp_s, (size_t)k * sizeof(i64));
    memcpy(ranges + k, s->tmp_e, (size_t)k * sizeof(i64));
    for (i64 j = 0; j < k; j++)
        for (i64 i = ranges[j]; i < ranges[k + j]; i++) {
            i64 u = s->units[p].v[i];
            if (u >= dcum && data_sacked(s, u, u + 1, 0) < 0) { free(ranges); return -1; }
        }
    free(ranges);
    return 0;
}
static void on_ack(Sim *s, i64 now, i64 p, i64 ack) {
    const Params *P = s->P;
    Out *o = s->o;
    o->counters[4]++;
    frame(s, now, ACK, p, ack, 0);
    i64 frame_index = o->f_t.n - 1;
    i64 cum = o->a_cum.v[ack], rwnd = o->a_rwnd.v[ack], scum = o->a_scum.v[ack];
    i64 nb = o->a_bcnt.v[ack], nsb = o->a_sbcnt.v[ack], off = o->a_boff.v[ack];
    int stale = cum < s->dcum;
    if (!stale && cum > s->dcum) {
        s->dcum_bytes += range_bytes(s, s->dcum, cum);
        ISet *sets[2] = {&s->dsacked, &s->dnr};
        i64 *totals[2] = {&s->sacked_bytes, &s->nr_bytes};
        for (int k = 0; k < 2; k++) {
            ISet *x = sets[k];
            i64 c = 0;
            while (c < x->n && x->s[c] < cum) {
                if (x->e[c] <= cum) { *totals[k] -= range_bytes(s, x->s[c], x->e[c]); c++; }
                else { *totals[k] -= range_bytes(s, x->s[c], cum); x->s[c] = cum; break; }
            }
            iset_pop_front(x, c);
        }
        s->dcum = cum;
    }
    /* MPTCP's data blocks are the DSS's NR blocks (none with SACK); the others' the ack's blocks */
    for (i64 b = 0; b < nb; b++)
        if (data_sacked(s, o->b_s.v[off + b], o->b_e.v[off + b], (int)P->nr) < 0) { o->error = 1; return; }
    if (P->mptcp) {
        if (subflow_acked(s, p, 0, scum) < 0) { o->error = 1; return; }
        for (i64 b = nb; b < nb + nsb; b++)
            if (subflow_acked(s, p, o->b_s.v[off + b], o->b_e.v[off + b]) < 0) { o->error = 1; return; }
        /* decision 12: at the data level a gap is data known received above the DATA ACK */
        s->gap_open = s->sacked_bytes > 0;
    }
    if (!stale) { if (!P->mptcp) s->gap_open = nb > 0; s->peer_rwnd = rwnd; }
    truth(s, frame_index, now, 1);
    if (s->dcum >= P->n) o->done_ns = now;
    if (o->error) return;
    if (P->mptcp) transport_ack(s, now, p, scum, o->b_s.v + off + nb, o->b_e.v + off + nb, nsb);
    else if (!stale) transport_ack(s, now, 0, cum, o->b_s.v + off, o->b_e.v + off, nb);
    if (o->error) return;
    try_send(s, now);
    s->burst = -1;
}
/* RFC 2018's order (model.py _recent_first): the block holding the latest arrival, then the
 * others from the highest; returns the count pushed */
static i64 push_recent_first(Sim *s, const ISet *x, int has_latest, i64 latest, i64 limit) {
    Out *o = s->o;
    i64 ls = 0, le = 0, k = 0;
    if (limit <= 0 || !x->n) return 0;
    int has = has_latest && iset_block_of(x, latest, &ls, &le);
    if (has) { if (vpush(&o->b_s, ls) < 0 || vpush(&o->b_e, le) < 0) return -1; k++; }
    for (i64 i = x->n - 1; i >= 0 && k < limit; i--) {
        if (has && x->s[i] == ls && x->e[i] == le) continue;
        if (vpush(&o->b_s, x->s[i]) < 0 || vpush(&o->b_e, x->e[i]) < 0) return -1;
        k++;
    }
    return k;
}
static void send_ack(Sim *s, i64 now, i64 p, int has_latest, i64 latest) {
    const Params *P = s->P;
    Out *o = s->o;
    i64 space = P->mptcp ? p : 0;
    s->ack_pending[space] = 0; s->delack_armed[space] = 0;
    i64 rwnd, boff = o->b_s.n, nb = 0, nsb = 0, scum = 0;
    if (P->sctp) {
        rwnd = P->rcvbuf;
        for (i64 i = 0; i < s->rset.n && i < SCTP_MAX_BLOCKS; i++) {
            if (s->rset.e[i] - s->rcum <= GAP_OFFSET_MAX) {
                TRY(vpush(&o->b_s, s->rset.s[i])); TRY(vpush(&o->b_e, s->rset.e[i])); nb++;
            }
        }
    } else if (!P->mptcp) {
        rwnd = P->rcvbuf - s->ooo_bytes;
        nb = push_recent_first(s, &s->rset, has_latest, latest, TCP_MAX_BLOCKS);
        TRY(nb);
    } else {
        /* the DSS's data-level NR blocks (ascending) beside the subflow's SACK blocks, 3 in all */
        rwnd = P->rcvbuf - s->ooo_bytes;
        scum = s->scum[p];
        i64 n = s->sset[p].n, nd = P->nr ? s->rset.n : 0, room = MPTCP_MAX_BLOCKS - (nd ? 1 : 0);
        i64 ns = n < room ? n : room;
        if (nd > MPTCP_MAX_BLOCKS - ns) nd = MPTCP_MAX_BLOCKS - ns;
        for (i64 i = 0; i < nd; i++) { TRY(vpush(&o->b_s, s->rset.s[i])); TRY(vpush(&o->b_e, s->rset.e[i])); }
        nb = nd;
        nsb = push_recent_first(s, &s->sset[p], has_latest, has_latest ? s->sidx[latest] : 0, ns);
        TRY(nsb);
    }
    TRY(vpush(&o->a_cum, s->rcum)); TRY(vpush(&o->a_rwnd, rwnd)); TRY(vpush(&o->a_scum, scum));
    TRY(vpush(&o->a_boff, boff)); TRY(vpush(&o->a_bcnt, nb)); TRY(vpush(&o->a_sbcnt, nsb));
    if (s->record_receiver) rframe(s, now, ACK, p, o->a_cum.n - 1, 0);
    if (ack_lost(s, p)) return;  /* lost on the way back */
    if (o->error) return;
    TRY(push(s, now + P->delay[p], EV_ACK_ARRIVAL, p, o->a_cum.n - 1));
}
static void delayed_ack(Sim *s, i64 now, i64 p, i64 u, i64 space) {
    const Params *P = s->P;
    s->ack_pending[space]++;
    if (s->ack_pending[space] >= P->ack_every || s->rcum >= P->n) send_ack(s, now, p, 1, u);
    else if (!s->delack_armed[space]) {
        s->delack_armed[space] = 1; s->delack_gen[space]++;
        TRY(push(s, now + P->delack_ns, EV_DELACK, space, s->delack_gen[space]));
    }
}
/* one level's receiver set takes index i: 1 when it was a duplicate; *cum advances over a gap
 * filled (and ooo counts the data level's bytes out of order) */
static int level_take(Sim *s, ISet *r, i64 *cum, i64 i, i64 *ooo) {
    if (i < *cum || iset_contains(r, i)) return 1;
    if (i == *cum) {
        *cum = i + 1;
        if (r->n && r->s[0] == *cum) {
            i64 a = r->s[0], b = r->e[0];
            iset_pop_front(r, 1);
            *cum = b;
            if (ooo) *ooo -= range_bytes(s, a, b);
        }
        return 0;
    }
    if (tmp_reserve(s, r->n + 2) || iset_add(r, i, i + 1, s->tmp_s, s->tmp_e) < 0) { s->o->error = 1; return 0; }
    if (ooo) *ooo += size_of(s, i);
    return 0;
}
static void on_data(Sim *s, i64 now, i64 p, i64 u) {
    const Params *P = s->P;
    ISet *r = &s->rset;
    if (s->record_receiver) rframe(s, now, DATA, p, u, index_of(s, u));
    s->last_arrival_path = p;
    if (u == s->rcum && r->n == 0 && !P->mptcp) { s->rcum = u + 1; delayed_ack(s, now, p, u, 0); return; }
    int gaps_before = r->n > 0;
    int dup = level_take(s, r, &s->rcum, u, &s->ooo_bytes);
    if (s->o->error) return;
    if (P->mptcp) {
        gaps_before = gaps_before || s->sset[p].n > 0;
        dup = level_take(s, &s->sset[p], &s->scum[p], s->sidx[u], NULL) || dup;
        if (s->o->error) return;
    }
    int gaps_after = r->n > 0 || (P->mptcp && s->sset[p].n > 0);
    /* the packet that fills the last gap: at once, or by the delayed-ack rule (ns-2 profile) */
    if (dup || gaps_after || (gaps_before && !P->gap_filler_delayed)) { send_ack(s, now, p, 1, u); return; }
    delayed_ack(s, now, p, u, P->mptcp ? p : 0);
}
/* model.py _on_degrade_event, _heartbeat, _on_heartbeat_ack */
static void on_degrade(Sim *s, i64 now, i64 q) {
    const Params *P = s->P;
    s->degrade_event[q] = 0;
    if (!s->has_degrade[q]) return;
    if (now < s->degrade_deadline[q]) { s->degrade_event[q] = 1; TRY(push(s, s->degrade_deadline[q], EV_DEGRADE, q, 0)); return; }
    if (s->cwnd[q] > P->init_cwnd * P->S) {
        s->cwnd[q] = s->cwnd[q] / 2 > 4 * P->S ? s->cwnd[q] / 2 : 4 * P->S;
        cwnd_changed(s, now, q);
    }
    arm_degrade(s, now, q);
}
static void heartbeat(Sim *s, i64 now, i64 q) {
    const Params *P = s->P;
    if (lost(s, q, -1, 1)) return;
    if (ack_lost(s, q) || s->o->error) return;
    TRY(push(s, now + 2 * P->delay[q], EV_HB_ACK, q, now));
}
static void on_rto(Sim *s, i64 now, i64 q) {
    const Params *P = s->P;
    s->rto_event[q] = 0;
    if (!s->has_deadline[q]) return;
    if (now < s->rto_deadline[q]) { s->rto_event[q] = 1; TRY(push(s, s->rto_deadline[q], EV_RTO, q, 0)); return; }
    s->o->counters[3]++;
    s->rto[q] = 2 * s->rto[q] < P->rto_max ? 2 * s->rto[q] : P->rto_max;
    i64 floor_ = P->sctp ? 4 * P->U : 2 * P->U;
    s->ssthresh[q] = s->cwnd[q] / 2 > floor_ ? s->cwnd[q] / 2 : floor_;
    s->cwnd[q] = P->U; s->pba[q] = 0; s->fr_allow[q] = 0;
    cwnd_changed(s, now, q);
    s->has_degrade[q] = 0;
    i64 sp = P->mptcp ? q : 0;
    if (s->rec_on[q]) recovery(s, q, now);
    s->rec_on[q] = 1; s->rec_kind[q] = 1; s->rec_start[q] = now; s->rec_exit[q] = s->sp_sent[sp] - 1;
    for (i64 r = 0; r < s->refr.n; r++) s->refr_mark[s->refr.v[r]] = -1;
    s->refr.n = 0;
    for (i64 i = s->sp_cum[sp]; i < s->sp_sent[sp]; i++) {
        i64 u = unit_at(s, sp, i);
        if ((s->flags[u] & INFL) && s->upath[u] == q) { mark_lost(s, u, q); if (s->o->error) return; }
    }
    s->has_deadline[q] = 0;
    if (P->path_max_retrans && ++s->errors[q] > P->path_max_retrans) { heartbeat(s, now, q); if (s->o->error) return; }
    try_send(s, now);
}

/* ctrl_*: the handshake frames in model.py's push order (time, name index, side: 0 the sender's
 * trace, 1 the receiver's, path); P->ready_t: when each path may carry data */
int fastsim_run(const Params *P, const double *first_draw, const double *draws,
                const double *ack_draws, const uint8_t *drop, const i64 *ctrl_t, const i64 *ctrl_name,
                const i64 *ctrl_side, const i64 *ctrl_path, i64 n_ctrl, int record_receiver, Out *o) {
    Sim sim, *s = &sim;
    memset(s, 0, sizeof(*s));
    memset(o, 0, sizeof(*o));
    o->first_data_ns = -1; o->done_ns = -1;
    if (P->np < 1 || P->np > MAXP || (!P->mptcp && P->np != 1)) { o->error = 3; return 3; }
    s->P = P; s->first_draw = first_draw; s->draws = draws; s->drop = drop;
    s->ack_draws = ack_draws; s->burst = -1;
    s->o = o;
    s->record_receiver = record_receiver;
    s->flags = calloc((size_t)P->n, 1);
    s->upath = calloc((size_t)P->n, 1);
    s->txt = calloc((size_t)P->n, sizeof(i64));
    s->sidx = calloc((size_t)P->n, sizeof(i64));
    s->miss = calloc((size_t)P->n, sizeof(int32_t));
    s->refr_mark = malloc((size_t)P->n * sizeof(i64));
    if (!s->flags || !s->upath || !s->txt || !s->sidx || !s->miss || !s->refr_mark) { o->error = 1; goto done; }
    for (i64 u = 0; u < P->n; u++) s->refr_mark[u] = -1;
    s->peer_rwnd = P->rcvbuf;
    for (i64 q = 0; q < P->np; q++) {
        s->cwnd[q] = P->init_cwnd * P->S; s->ssthresh[q] = P->rcvbuf; s->rto[q] = P->rto_initial;
        s->htna[q] = -1;
    }
    for (i64 i = 0; i < n_ctrl; i++)
        if (push(s, ctrl_t[i], EV_CTRL, ctrl_side[i] + 2 * ctrl_path[i], ctrl_name[i]) < 0) { o->error = 1; goto done; }
    for (i64 q = 0; q < P->np; q++)
        if (push(s, P->ready_t[q], EV_READY, q, 0) < 0) { o->error = 1; goto done; }
    while (s->ev.n && o->done_ns < 0 && !o->error) {
        Ev e = heap_pop(&s->ev);
        if (e.t > P->limit_ns) break;
        switch (e.kind) {
        case EV_DATA_ARRIVAL: on_data(s, e.t, e.a, e.b); break;
        case EV_ACK_ARRIVAL: on_ack(s, e.t, e.a, e.b); break;
        case EV_DELACK:
            if (s->delack_armed[e.a] && s->delack_gen[e.a] == e.b)
                send_ack(s, e.t, P->mptcp ? e.a : s->last_arrival_path, 0, 0);
            break;
        case EV_RTO: on_rto(s, e.t, e.a); break;
        case EV_READY: s->ready[e.a] = 1; try_send(s, e.t); break;
        case EV_HB_ACK: s->errors[e.a] = 0; rtt_sample(s, e.a, e.t - e.b); break;
        case EV_DEGRADE: on_degrade(s, e.t, e.a); break;
        case EV_CTRL:
            if (e.a & 1) rframe(s, e.t, CTRL, e.a >> 1, e.b, 0);
            else frame(s, e.t, CTRL, e.a >> 1, e.b, 0);
            break;
        }
    }
    for (i64 q = 0; q < P->np; q++) if (s->rec_on[q]) recovery(s, q, -1);
    o->counters[7] = s->dcum_bytes;
done:
    free(s->flags); free(s->upath); free(s->txt); free(s->sidx); free(s->miss); free(s->refr_mark);
    free(s->refr.v); free(s->ev.v); free(s->pending.v);
    free(s->dsacked.s); free(s->dsacked.e); free(s->dnr.s); free(s->dnr.e);
    for (i64 q = 0; q < MAXP; q++) {
        free(s->sp_sacked[q].s); free(s->sp_sacked[q].e); free(s->holes[q].v); free(s->units[q].v);
        free(s->dsub[q].s); free(s->dsub[q].e); free(s->outq[q].v); free(s->linkq[q].v);
        free(s->sset[q].s); free(s->sset[q].e);
    }
    free(s->rset.s); free(s->rset.e); free(s->tmp_s); free(s->tmp_e);
    return (int)o->error;
}

void fastsim_free(Out *o) {
    Vec *vs[] = {&o->f_t, &o->f_kind, &o->f_a, &o->f_b, &o->a_cum, &o->a_rwnd, &o->a_boff,
                 &o->a_bcnt, &o->b_s, &o->b_e, &o->truth, &o->cwnd, &o->rec, &o->r_t,
                 &o->r_kind, &o->r_a, &o->r_b, &o->a_sbcnt, &o->f_p, &o->r_p, &o->a_scum};
    for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) { free(vs[i]->v); vs[i]->v = NULL; }
}

/* ---------------------------------------------------------------------------------------------
 * The pcap writer of wire.py for these traces (single path SCTP / TCP, sender side), byte for
 * byte the same output: templates and headers come from wire.py, this only patches and sums.
 * ------------------------------------------------------------------------------------------- */
#include <stdio.h>

typedef struct {
    i64 sctp, nr, n, S, last_size, total_bytes, isn, peer_seq, epoch, rcvbuf_unused;
    const uint8_t *tpl_full, *tpl_last;   /* whole data frames (Ethernet..payload) */
    i64 len_full, len_last, sum_full, sum_last;  /* TCP: words sum mod 0xFFFF with seq, csum 0 */
    const uint8_t *ack_head;             /* Ethernet + IPv4 (length, checksum 0), receiver->sender */
    i64 sport, dport, tag;               /* ports of the ack direction; SCTP verification tag */
    i64 pseudo_base;                     /* TCP: pseudo-header sum without the length, mod 0xFFFF */
    i64 wscale;
    const uint8_t *ctrl; const i64 *ctrl_off, *ctrl_len;
} WParams;

static uint32_t crc_table[8][256];
static void crc_init(void) {
    if (crc_table[0][1]) return;
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
}
static uint32_t crc32c(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    while (n >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        c = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^ crc_table[5][(lo >> 16) & 0xFF] ^
            crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xFF] ^ crc_table[2][(hi >> 8) & 0xFF] ^
            crc_table[1][(hi >> 16) & 0xFF] ^ crc_table[0][hi >> 24];
        p += 8; n -= 8;
    }
    while (n--) c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xFF];
    return ~c;
}
static void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v; }
static void put32le(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24); }
static uint64_t words_sum(const uint8_t *p, size_t n) {  /* sum of big-endian 16-bit words, odd byte padded */
    uint64_t s = 0;
    for (size_t i = 0; i + 1 < n; i += 2) s += (uint32_t)p[i] << 8 | p[i + 1];
    if (n & 1) s += (uint32_t)p[n - 1] << 8;
    return s;
}
static uint32_t ip_checksum(const uint8_t *ip) {  /* the standard one (Scapy's) */
    uint64_t s = words_sum(ip, 20);
    while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
    return (uint32_t)(~s & 0xFFFF);
}
static i64 unit_bytes(const WParams *w, i64 u) { return u >= w->n ? w->total_bytes : u * w->S; }

/* one ack frame into buf (room for 1600 bytes); returns its length */
static size_t build_ack(const WParams *w, uint8_t *buf, i64 cum, i64 rwnd, const i64 *bs, const i64 *be, i64 nb) {
    uint8_t *ip = buf + 14, *l4 = buf + 34;
    size_t l4len;
    memcpy(buf, w->ack_head, 34);
    if (w->sctp) {
        i64 base = cum - 1;
        uint8_t *c = l4 + 12;
        put16(l4, (uint32_t)w->sport); put16(l4 + 2, (uint32_t)w->dport);
        put32(l4 + 4, (uint32_t)w->tag); put32(l4 + 8, 0);
        size_t head = w->nr ? 20 : 16;
        c[0] = w->nr ? 0x10 : 0x03; c[1] = 0;
        put16(c + 2, (uint32_t)(head + 4 * nb));
        put32(c + 4, (uint32_t)((w->isn + base) & 0xFFFFFFFF));
        put32(c + 8, (uint32_t)rwnd);
        if (w->nr) { put16(c + 12, 0); put16(c + 14, (uint32_t)nb); put16(c + 16, 0); put16(c + 18, 0); }
        else { put16(c + 12, (uint32_t)nb); put16(c + 14, 0); }
        for (i64 i = 0; i < nb; i++) {
            put16(c + head + 4 * i, (uint32_t)(bs[i] - base));
            put16(c + head + 4 * i + 2, (uint32_t)(be[i] - 1 - base));
        }
        l4len = 12 + head + 4 * (size_t)nb;
        put32le(l4 + 8, crc32c(l4, l4len));
    } else {
        uint8_t *o = l4 + 20;
        size_t olen = 0;
        if (nb) {
            if (w->nr) { o[0] = 253; o[1] = (uint8_t)(4 + 8 * nb); put16(o + 2, 0x4E52); olen = 4; }
            else { o[0] = 5; o[1] = (uint8_t)(2 + 8 * nb); olen = 2; }
            for (i64 i = 0; i < nb; i++) {
                put32(o + olen, (uint32_t)((w->isn + 1 + unit_bytes(w, bs[i])) & 0xFFFFFFFF));
                put32(o + olen + 4, (uint32_t)((w->isn + 1 + unit_bytes(w, be[i])) & 0xFFFFFFFF));
                olen += 8;
            }
            while (olen % 4) o[olen++] = 1;
        }
        size_t hl = 20 + olen;
        i64 win = rwnd < 0 ? 0 : rwnd >> w->wscale;
        if (win > 0xFFFF) win = 0xFFFF;
        put16(l4, (uint32_t)w->sport); put16(l4 + 2, (uint32_t)w->dport);
        put32(l4 + 4, (uint32_t)w->peer_seq);
        put32(l4 + 8, (uint32_t)((w->isn + 1 + unit_bytes(w, cum)) & 0xFFFFFFFF));
        l4[12] = (uint8_t)((hl / 4) << 4); l4[13] = 0x10;
        put16(l4 + 14, (uint32_t)win); put16(l4 + 16, 0); put16(l4 + 18, 0);
        l4len = hl;
        uint64_t total = (uint64_t)w->pseudo_base + hl + words_sum(l4, hl);
        put16(l4 + 16, (uint32_t)(0xFFFF - total % 0xFFFF));
    }
    put16(ip + 2, (uint32_t)(20 + l4len));
    put16(ip + 10, 0);
    put16(ip + 10, ip_checksum(ip));
    return 34 + l4len;
}

int fastsim_write_pcap(const char *path, const WParams *w, const i64 *t, const i64 *kind,
                       const i64 *fa, i64 nframes, const i64 *a_cum, const i64 *a_rwnd,
                       const i64 *a_boff, const i64 *a_bcnt, const i64 *bs, const i64 *be) {
    crc_init();
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    uint8_t hdr[24];
    uint32_t magic = 0xA1B2C3D4u;
    memcpy(hdr, &magic, 4);
    uint16_t vmaj = 2, vmin = 4; int32_t zone = 0; uint32_t sig = 0, snap = 65535, link = 1;
    memcpy(hdr + 4, &vmaj, 2); memcpy(hdr + 6, &vmin, 2); memcpy(hdr + 8, &zone, 4);
    memcpy(hdr + 12, &sig, 4); memcpy(hdr + 16, &snap, 4); memcpy(hdr + 20, &link, 4);
    fwrite(hdr, 1, 24, f);
    uint8_t *full = malloc((size_t)w->len_full), *last = malloc((size_t)w->len_last), ack[1600];
    if (!full || !last) { fclose(f); free(full); free(last); return -1; }
    memcpy(full, w->tpl_full, (size_t)w->len_full);
    memcpy(last, w->tpl_last, (size_t)w->len_last);
    for (i64 i = 0; i < nframes; i++) {
        const uint8_t *pkt;
        size_t len;
        if (kind[i] <= 1) {  /* DATA or RTX */
            i64 u = fa[i];
            int is_last = u == w->n - 1;
            uint8_t *p = is_last ? last : full;
            len = (size_t)(is_last ? w->len_last : w->len_full);
            if (w->sctp) {
                put32(p + 50, (uint32_t)((w->isn + u) & 0xFFFFFFFF));
                put32(p + 42, 0);
                put32le(p + 42, crc32c(p + 34, len - 34));
            } else {
                uint32_t seq = (uint32_t)((w->isn + 1 + u * w->S) & 0xFFFFFFFF);
                put32(p + 38, seq);
                put16(p + 50, 0);
                uint64_t total = (uint64_t)(is_last ? w->sum_last : w->sum_full) + (seq >> 16) + (seq & 0xFFFF);
                put16(p + 50, (uint32_t)(0xFFFF - total % 0xFFFF));
            }
            pkt = p;
        } else if (kind[i] == 2) {
            i64 a = fa[i];
            len = build_ack(w, ack, a_cum[a], a_rwnd[a], bs + a_boff[a], be + a_boff[a], a_bcnt[a]);
            pkt = ack;
        } else {
            pkt = w->ctrl + w->ctrl_off[fa[i]];
            len = (size_t)w->ctrl_len[fa[i]];
        }
        i64 us = t[i] / 1000;
        uint32_t rec[4] = {(uint32_t)(w->epoch + us / 1000000), (uint32_t)(us % 1000000), (uint32_t)len, (uint32_t)len};
        fwrite(rec, 4, 4, f);
        fwrite(pkt, 1, len, f);
    }
    free(full); free(last);
    return fclose(f) ? -1 : 0;
}
