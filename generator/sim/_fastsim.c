/* SPDX-License-Identifier: MIT */
/* Compiled event loop of generator/sim/model.py for one path (SCTP, TCP, MPTCP with one subflow).
 *
 * It mirrors Simulation in model.py statement for statement, with the same event order (time,
 * then push sequence), the same integer arithmetic and the same random draws (passed in), so
 * that its trace is identical to the Python model's; tests/test_simulator_fast.py checks that.
 * model.py stays the reference and handles everything else (CMT, MPTCP over several subflows).
 * MPTCP with one subflow: units go out on it in order, so its subflow index of a unit is the unit
 * and the subflow's sequence space, receiver set and cum ack are the data level's; what differs from
 * TCP is the ack (model.py _send_ack) and what the sender takes from it (_on_ack_arrival).
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
        rto_max, init_cwnd, limit_ns, delay, qcap, overhead, gilbert,
        /* the profile (profiles.py), as model.py turns it into numbers */
        gap_filler_delayed, max_burst, chunk_header, window_unit, by_size, grow_margin,
        persistent_htna, restart_timer_on_cum_ack, path_max_retrans, cwnd_degrade, max_burst_cwnd,
        slow_start_limit, refast_retransmit, fr_ssthresh_floor, U /* cwnd's packet */,
        rto_restored_on_ack, mptcp;
    double ns_per_byte, loss, enter_bad, leave_bad, ack_loss;
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
    Vec f_t, f_kind, f_a, f_b;          /* sender frames (path is always 0) */
    Vec a_cum, a_rwnd, a_boff, a_bcnt;  /* acks */
    Vec b_s, b_e;                       /* blocks of the acks */
    Vec truth;                          /* 9 per row */
    Vec cwnd;                           /* 4 per row */
    Vec rec;                            /* 4 per row: path, kind (0 fast, 1 rto), start, end (-1) */
    Vec r_t, r_kind, r_a, r_b;          /* receiver frames, when recorded */
    Vec a_sbcnt;                        /* MPTCP: subflow blocks, after the ack's a_bcnt data blocks */
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

typedef struct {
    const Params *P;
    const double *first_draw, *draws, *ack_draws;
    const uint8_t *drop;
    i64 n_draws, draw_pos, n_ack_draws, ack_draw_pos;
    i64 burst, htna;  /* Max.Burst allowance (-1: no limit); persistent HTNA marker */
    Out *o;
    Heap ev; i64 seq;
    uint8_t *flags; i64 *txt; int32_t *miss;
    UHeap pending;
    i64 next_new, sent_bytes, peer_rwnd;
    /* the one ack space */
    i64 sp_cum, sp_high, sp_sent; ISet sp_sacked; Vec holes; i64 n_holes;
    Vec refr; i64 *refr_mark;  /* model.py's refr: units in first-retransmitted order, mark or -1 */
    /* data level */
    i64 dcum, dcum_bytes, sacked_bytes, nr_bytes; ISet dsacked, dnr; int gap_open;
    /* path */
    i64 cwnd, ssthresh, pba, flight, fr_allow, srtt, has_srtt, rttvar, rto, rto_deadline,
        has_deadline, rto_event, ready, errors, degrade_deadline, has_degrade, degrade_event;
    int rec_on; i64 rec_kind, rec_start, rec_exit;
    Vec outq; i64 outq_head;
    Vec linkq; i64 linkq_head;
    int ge_bad;
    /* receiver */
    i64 rcum, ooo_bytes, ack_pending, delack_gen, delack_armed; ISet rset;
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
static void cwnd_changed(Sim *s, i64 now) {
    i64 row[4] = {now, 0, s->cwnd, s->ssthresh};
    for (int i = 0; i < 4; i++) TRY(vpush(&s->o->cwnd, row[i]));
}
static void recovery(Sim *s, i64 end) {
    i64 row[4] = {0, s->rec_kind, s->rec_start, end};
    for (int i = 0; i < 4; i++) TRY(vpush(&s->o->rec, row[i]));
}
static void frame(Sim *s, i64 t, i64 kind, i64 a, i64 b) {
    TRY(vpush(&s->o->f_t, t)); TRY(vpush(&s->o->f_kind, kind));
    TRY(vpush(&s->o->f_a, a)); TRY(vpush(&s->o->f_b, b));
}
static void rframe(Sim *s, i64 t, i64 kind, i64 a, i64 b) {
    TRY(vpush(&s->o->r_t, t)); TRY(vpush(&s->o->r_kind, kind));
    TRY(vpush(&s->o->r_a, a)); TRY(vpush(&s->o->r_b, b));
}
static double uniform(Sim *s) {
    if (s->draw_pos >= s->n_draws) { s->o->error = 2; return 1.0; }  /* Python falls back */
    return s->draws[s->draw_pos++];
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
static int lost(Sim *s, i64 u, int rtx) {
    const Params *P = s->P;
    if (P->loss <= 0.0) return 0;
    if (!P->gilbert) return (rtx ? uniform(s) : s->first_draw[u]) < P->loss;
    if (s->ge_bad) { if (uniform(s) < P->leave_bad) s->ge_bad = 0; }
    else if (uniform(s) < P->enter_bad) s->ge_bad = 1;
    return s->ge_bad;
}
static void arm_rto(Sim *s, i64 now) {
    s->rto_deadline = now + s->rto; s->has_deadline = 1;
    if (!s->rto_event) { s->rto_event = 1; TRY(push(s, s->rto_deadline, EV_RTO, 0, 0)); }
}
static void arm_degrade(Sim *s, i64 now) {
    s->degrade_deadline = now + s->rto; s->has_degrade = 1;
    if (!s->degrade_event) { s->degrade_event = 1; TRY(push(s, s->degrade_deadline, EV_DEGRADE, 0, 0)); }
}
static void send_unit(Sim *s, i64 now, i64 u, int rtx) {
    const Params *P = s->P;
    i64 sz = size_of(s, u);
    s->fr_allow = 0;
    if (rtx) {
        s->txt[u] = -1;
        s->flags[u] = (uint8_t)((s->flags[u] | INFL | RTXD) & ~LOST);
        s->o->counters[1]++;
        frame(s, now, RTX, u, u);
    } else {
        s->txt[u] = now;
        s->flags[u] |= INFL;
        s->sp_sent = u + 1;
        s->sent_bytes += sz;
        if (s->o->first_data_ns < 0) s->o->first_data_ns = now;
        frame(s, now, DATA, u, u);
        truth(s, s->o->f_t.n - 1, now, 0);
    }
    s->o->counters[0]++;
    s->flight += sz;
    TRY(vpush(&s->outq, u));
    if (!s->has_deadline) arm_rto(s, now);
    if (P->cwnd_degrade) arm_degrade(s, now);
    while (s->linkq_head < s->linkq.n && s->linkq.v[s->linkq_head] <= now) s->linkq_head++;
    if (s->linkq.n - s->linkq_head >= P->qcap) { s->o->counters[5]++; return; }
    i64 start = s->linkq_head < s->linkq.n ? s->linkq.v[s->linkq.n - 1] : now;
    i64 finish = start + (i64)((double)(sz + P->overhead) * P->ns_per_byte);
    TRY(vpush(&s->linkq, finish));
    if (s->linkq_head > 4096 && s->linkq_head * 2 > s->linkq.n) {  /* compact the FIFO */
        memmove(s->linkq.v, s->linkq.v + s->linkq_head, (size_t)(s->linkq.n - s->linkq_head) * sizeof(i64));
        s->linkq.n -= s->linkq_head; s->linkq_head = 0;
    }
    if (lost(s, u, rtx) || (!rtx && s->drop[u])) { s->o->counters[6]++; return; }
    TRY(push(s, finish + P->delay, EV_DATA_ARRIVAL, 0, u));
}
static void try_send(Sim *s, i64 now) {
    const Params *P = s->P;
    if (P->max_burst_cwnd && s->flight + P->max_burst_cwnd * P->U < s->cwnd) {
        /* usrsctp's Max.Burst (model.py _cut_cwnd_to_burst) */
        if (s->ssthresh < s->cwnd) s->ssthresh = s->cwnd;
        s->cwnd = s->flight + P->max_burst_cwnd * P->U;
        cwnd_changed(s, now);
    }
    for (;;) {
        while (s->pending.n && !(s->flags[s->pending.v[0]] & LOST)) uheap_pop(&s->pending);
        if (s->pending.n) {
            i64 u = s->pending.v[0], sz = size_of(s, u), need = P->by_size ? sz : 1;
            if (!(s->ready && (s->flight + need <= s->cwnd || s->fr_allow))) return;
            if (burst_spent(s)) return;
            uheap_pop(&s->pending);
            send_unit(s, now, u, 1);
            if (s->o->error) return;
            continue;
        }
        i64 u = s->next_new;
        if (u >= P->n) return;
        i64 sz = size_of(s, u), in_queue = s->sent_bytes - s->dcum_bytes, need = P->by_size ? sz : 1;
        i64 rtxq = P->nr ? in_queue - s->nr_bytes : in_queue;
        if (P->sndbuf - rtxq / P->S * P->window_unit < chunk_bytes(sz, P->chunk_header)) return;
        if (in_queue + sz > s->peer_rwnd) return;
        if (!(s->ready && (s->flight + need <= s->cwnd || s->fr_allow))) return;
        if (burst_spent(s)) return;
        s->next_new = u + 1;
        send_unit(s, now, u, 0);
        if (s->o->error) return;
    }
}
static void hole_remove(Sim *s, i64 u) {
    if (s->flags[u] & HOLE) { s->flags[u] &= (uint8_t)~HOLE; s->n_holes--; }
}
static void mark_lost(Sim *s, i64 u) {
    s->flags[u] = (uint8_t)((s->flags[u] & ~INFL) | LOST);
    s->flight -= size_of(s, u);
    hole_remove(s, u);
    TRY(uheap_push(&s->pending, u));
}
static void fast_retransmit(Sim *s, i64 now, i64 u) {
    const Params *P = s->P;
    i64 sz = size_of(s, u);
    mark_lost(s, u);
    s->flags[u] |= FRTX;
    s->o->counters[2]++;
    if (P->refast_retransmit) {
        if (s->refr_mark[u] < 0 && vpush(&s->refr, u) < 0) { s->o->error = 1; return; }
        s->refr_mark[u] = s->next_new;
    }
    if (!s->rec_on) {
        if (P->sctp) s->ssthresh = s->cwnd / 2 > P->fr_ssthresh_floor * P->U ? s->cwnd / 2 : P->fr_ssthresh_floor * P->U;
        else s->ssthresh = (s->flight + sz) / 2 > 2 * P->U ? (s->flight + sz) / 2 : 2 * P->U;
        s->cwnd = s->ssthresh;
        s->pba = 0;
        s->fr_allow = 1;
        s->rec_on = 1; s->rec_kind = 0; s->rec_start = now; s->rec_exit = s->sp_sent - 1;
        cwnd_changed(s, now);
    }
}
static void set_rto(Sim *s) {
    const Params *P = s->P;
    i64 rto = s->srtt + 4 * s->rttvar;
    if (rto < P->rto_min) rto = P->rto_min;
    if (rto > P->rto_max) rto = P->rto_max;
    s->rto = rto;
}
static void rtt_sample(Sim *s, i64 r) {
    if (!s->has_srtt) { s->srtt = r; s->rttvar = r / 2; s->has_srtt = 1; }
    else {
        i64 d = s->srtt - r; if (d < 0) d = -d;
        s->rttvar = (3 * s->rttvar + d) / 4;
        s->srtt = (7 * s->srtt + r) / 8;
    }
    set_rto(s);
}
static i64 earliest_outstanding(Sim *s) {
    while (s->outq_head < s->outq.n && !(s->flags[s->outq.v[s->outq_head]] & INFL)) s->outq_head++;
    if (s->outq_head > 4096 && s->outq_head * 2 > s->outq.n) {
        memmove(s->outq.v, s->outq.v + s->outq_head, (size_t)(s->outq.n - s->outq_head) * sizeof(i64));
        s->outq.n -= s->outq_head; s->outq_head = 0;
    }
    return s->outq_head < s->outq.n ? s->outq.v[s->outq_head] : -1;
}
static void transport_ack(Sim *s, i64 now, i64 cum, const i64 *bs, const i64 *be, i64 nb) {
    const Params *P = s->P;
    if (cum < s->sp_cum) return;
    i64 flight_before = s->flight, earliest = earliest_outstanding(s);
    i64 newly_bytes = 0, newly_max = -1, rtt_unit = -1;
    int cum_advanced = cum > s->sp_cum, fast_rtx_acked = 0;
    uint8_t *flags = s->flags;
    if (cum_advanced) {
        for (i64 u = s->sp_cum; u < cum; u++) {
            uint8_t f = flags[u];
            if (f & FRTX) fast_rtx_acked = 1;
            if (!(f & SACKED)) {
                if (!(f & LOST)) s->errors = 0;  /* model.py: acked data clears the errors */
                i64 sz = size_of(s, u);
                if (f & INFL) s->flight -= sz;
                newly_bytes += sz;
                newly_max = u;
                if (s->txt[u] >= 0) rtt_unit = u;
            }
            flags[u] = (uint8_t)((f | ACKED) & ~(INFL | LOST));
            hole_remove(s, u);
        }
        s->sp_cum = cum;
        i64 k = 0;
        while (k < s->sp_sacked.n && s->sp_sacked.e[k] <= cum) k++;
        iset_pop_front(&s->sp_sacked, k);
        if (s->sp_sacked.n && s->sp_sacked.s[0] < cum) s->sp_sacked.s[0] = cum;
        if (fast_rtx_acked && P->max_burst) s->burst = P->max_burst;
    }
    i64 old_high = s->sp_high;
    for (i64 b = 0; b < nb; b++) {
        if (be[b] <= s->sp_cum) continue;
        if (tmp_reserve(s, s->sp_sacked.n + 2)) { s->o->error = 1; return; }
        i64 k = iset_add(&s->sp_sacked, bs[b] > s->sp_cum ? bs[b] : s->sp_cum, be[b], s->tmp_s, s->tmp_e);
        if (k < 0) { s->o->error = 1; return; }
        for (i64 j = 0; j < k; j++) {
            for (i64 u = s->tmp_s[j]; u < s->tmp_e[j]; u++) {
                uint8_t f = flags[u];
                i64 sz = size_of(s, u);
                if (f & INFL) s->flight -= sz;
                flags[u] = (uint8_t)((f | SACKED) & ~(INFL | LOST));
                newly_bytes += sz;
                if (u > newly_max) newly_max = u;
                if (s->txt[u] >= 0) rtt_unit = u;
                hole_remove(s, u);
            }
        }
        if (be[b] > s->sp_high) s->sp_high = be[b];
    }
    for (i64 u = old_high > s->sp_cum ? old_high : s->sp_cum; u < s->sp_high; u++) {
        uint8_t f = flags[u];
        if ((f & INFL) && !(f & (SACKED | RTXD)) && !(f & HOLE)) {
            flags[u] |= HOLE; s->n_holes++;
            TRY(vpush(&s->holes, u));
        }
    }
    i64 marker = newly_max;
    if (P->persistent_htna) { if (newly_max > s->htna) s->htna = newly_max; marker = s->htna; }
    if (s->n_holes) {  /* the hole list is ascending by construction: compact it while walking */
        i64 w = 0, count = s->holes.n;
        int in_fr = P->sctp && cum_advanced && s->rec_on && s->rec_kind == 0;  /* as it arrived */
        for (i64 r = 0; r < count; r++) {
            i64 u = s->holes.v[r];
            if (!(flags[u] & HOLE)) continue;
            /* in SCTP fast recovery an ack that advances the cum ack counts for every hole */
            if (u < marker || in_fr) {
                i64 m = s->miss[u] + 1;
                if (m >= 3) { s->miss[u] = 0; fast_retransmit(s, now, u); if (s->o->error) return; }
                else s->miss[u] = (int32_t)m;
            }
            if (flags[u] & HOLE) s->holes.v[w++] = u;
        }
        s->holes.n = w;
    } else {
        s->holes.n = 0;
    }
    if (s->refr.n) {  /* the fast-retransmitted units' second chance (model.py's refr) */
        i64 w = 0, count = s->refr.n;
        for (i64 r = 0; r < count; r++) {
            i64 u = s->refr.v[r];
            if (flags[u] & (SACKED | ACKED)) { s->refr_mark[u] = -1; continue; }
            if ((flags[u] & INFL) && marker >= s->refr_mark[u]) {
                i64 m = s->miss[u] + 1;
                if (m >= 3) { s->miss[u] = 0; fast_retransmit(s, now, u); if (s->o->error) return; }
                else s->miss[u] = (int32_t)m;
            }
            s->refr.v[w++] = u;
        }
        s->refr.n = w;
    }
    if (s->rec_on && s->sp_cum > s->rec_exit) { recovery(s, now); s->rec_on = 0; }
    if (!newly_bytes) return;
    if (rtt_unit >= 0) rtt_sample(s, now - s->txt[rtt_unit]);
    else if (P->rto_restored_on_ack && s->has_srtt) set_rto(s);
    if ((P->restart_timer_on_cum_ack && cum_advanced) || (earliest >= 0 && (flags[earliest] & (ACKED | SACKED)))) {
        if (s->flight > 0) arm_rto(s, now);
        else s->has_deadline = 0;
    }
    if (s->rec_on || !cum_advanced) return;
    if (flight_before + P->grow_margin <= s->cwnd) return;
    if (s->cwnd <= s->ssthresh) {
        i64 limit = P->slow_start_limit * P->U;
        s->cwnd += newly_bytes < limit ? newly_bytes : limit;
        cwnd_changed(s, now);
    } else {
        s->pba += newly_bytes;
        if (s->pba >= s->cwnd) { s->pba -= s->cwnd; s->cwnd += P->U; cwnd_changed(s, now); }
    }
}
static void on_ack(Sim *s, i64 now, i64 ack) {
    const Params *P = s->P;
    Out *o = s->o;
    o->counters[4]++;
    frame(s, now, ACK, ack, 0);
    i64 frame_index = o->f_t.n - 1;
    i64 cum = o->a_cum.v[ack], rwnd = o->a_rwnd.v[ack];
    i64 nb = o->a_bcnt.v[ack];
    i64 nsb = o->a_sbcnt.v[ack];
    const i64 *bs = o->b_s.v + o->a_boff.v[ack], *be = o->b_e.v + o->a_boff.v[ack];
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
    for (i64 b = 0; b < nb; b++) {
        i64 lo = bs[b] < s->dcum ? s->dcum : bs[b], k;
        if (tmp_reserve(s, s->dsacked.n + s->dnr.n + 2)) { o->error = 1; return; }
        k = iset_add(&s->dsacked, lo, be[b], s->tmp_s, s->tmp_e);
        if (k < 0) { o->error = 1; return; }
        for (i64 j = 0; j < k; j++) s->sacked_bytes += range_bytes(s, s->tmp_s[j], s->tmp_e[j]);
        if (P->nr) {
            k = iset_add(&s->dnr, lo, be[b], s->tmp_s, s->tmp_e);
            if (k < 0) { o->error = 1; return; }
            for (i64 j = 0; j < k; j++) s->nr_bytes += range_bytes(s, s->tmp_s[j], s->tmp_e[j]);
        }
    }
    if (P->mptcp) {
        /* decision 12: the subflow's blocks sack their units at the data level, renegable (model.py
         * _subflow_acked; its cum ack is the data level's, so only the blocks add anything), and a
         * gap is data known received above the DATA ACK */
        for (i64 b = nb; b < nb + nsb; b++) {
            i64 lo = bs[b] < s->dcum ? s->dcum : bs[b], k;
            if (tmp_reserve(s, s->dsacked.n + 2)) { o->error = 1; return; }
            k = iset_add(&s->dsacked, lo, be[b], s->tmp_s, s->tmp_e);
            if (k < 0) { o->error = 1; return; }
            for (i64 j = 0; j < k; j++) s->sacked_bytes += range_bytes(s, s->tmp_s[j], s->tmp_e[j]);
        }
        s->gap_open = s->sacked_bytes > 0;
    }
    if (!stale) { if (!P->mptcp) s->gap_open = nb > 0; s->peer_rwnd = rwnd; }
    truth(s, frame_index, now, 1);
    if (s->dcum >= P->n) o->done_ns = now;
    /* the blocks may have moved (vpush in truth does not touch them, but be safe) */
    bs = o->b_s.v + o->a_boff.v[ack]; be = o->b_e.v + o->a_boff.v[ack];
    /* congestion control and loss recovery read the subflow's blocks (MPTCP), else the ack's */
    if (!stale) transport_ack(s, now, cum, bs + (P->mptcp ? nb : 0), be + (P->mptcp ? nb : 0), P->mptcp ? nsb : nb);
    if (o->error) return;
    try_send(s, now);
    s->burst = -1;
}
static void send_ack(Sim *s, i64 now, int has_latest, i64 latest) {
    const Params *P = s->P;
    Out *o = s->o;
    s->ack_pending = 0; s->delack_armed = 0;
    i64 rwnd, boff = o->b_s.n, nb = 0, nsb = 0;
    if (P->sctp) {
        rwnd = P->rcvbuf;
        for (i64 i = 0; i < s->rset.n && i < SCTP_MAX_BLOCKS; i++) {
            if (s->rset.e[i] - s->rcum <= GAP_OFFSET_MAX) {
                TRY(vpush(&o->b_s, s->rset.s[i])); TRY(vpush(&o->b_e, s->rset.e[i])); nb++;
            }
        }
    } else {
        rwnd = P->rcvbuf - s->ooo_bytes;
        i64 ls = 0, le = 0, limit = TCP_MAX_BLOCKS, k = 0, n = s->rset.n;
        int has = has_latest && iset_block_of(&s->rset, latest, &ls, &le);
        if (P->mptcp) {
            /* the DSS's data-level NR blocks (ascending) beside the subflow's SACK blocks, 3 in all */
            i64 nd = P->nr ? n : 0, room = MPTCP_MAX_BLOCKS - (nd ? 1 : 0);
            limit = n < room ? n : room;
            if (nd > MPTCP_MAX_BLOCKS - limit) nd = MPTCP_MAX_BLOCKS - limit;
            for (i64 i = 0; i < nd; i++) { TRY(vpush(&o->b_s, s->rset.s[i])); TRY(vpush(&o->b_e, s->rset.e[i])); }
            nb = nd;
        }
        /* RFC 2018's order: the block of the latest arrival, then the others from the highest */
        if (n && limit > 0) {
            if (has) { TRY(vpush(&o->b_s, ls)); TRY(vpush(&o->b_e, le)); k++; }
            for (i64 i = n - 1; i >= 0 && k < limit; i--) {
                if (has && s->rset.s[i] == ls && s->rset.e[i] == le) continue;
                TRY(vpush(&o->b_s, s->rset.s[i])); TRY(vpush(&o->b_e, s->rset.e[i])); k++;
            }
        }
        if (P->mptcp) nsb = k; else nb = k;
    }
    TRY(vpush(&o->a_cum, s->rcum)); TRY(vpush(&o->a_rwnd, rwnd));
    TRY(vpush(&o->a_boff, boff)); TRY(vpush(&o->a_bcnt, nb)); TRY(vpush(&o->a_sbcnt, nsb));
    if (s->record_receiver) rframe(s, now, ACK, o->a_cum.n - 1, 0);
    if (P->ack_loss > 0.0) {
        if (s->ack_draw_pos >= s->n_ack_draws) { o->error = 2; return; }  /* Python falls back */
        if (s->ack_draws[s->ack_draw_pos++] < P->ack_loss) return;  /* lost on the way back */
    }
    TRY(push(s, now + P->delay, EV_ACK_ARRIVAL, 0, o->a_cum.n - 1));
}
static void delayed_ack(Sim *s, i64 now, i64 u) {
    const Params *P = s->P;
    s->ack_pending++;
    if (s->ack_pending >= P->ack_every || s->rcum >= P->n) send_ack(s, now, 1, u);
    else if (!s->delack_armed) {
        s->delack_armed = 1; s->delack_gen++;
        TRY(push(s, now + P->delack_ns, EV_DELACK, 0, s->delack_gen));
    }
}
static void on_data(Sim *s, i64 now, i64 u) {
    ISet *r = &s->rset;
    if (s->record_receiver) rframe(s, now, DATA, u, u);
    if (u == s->rcum && r->n == 0) { s->rcum = u + 1; delayed_ack(s, now, u); return; }
    int gaps_before = r->n > 0, dup = 0;
    if (u < s->rcum || iset_contains(r, u)) dup = 1;
    else if (u == s->rcum) {
        s->rcum = u + 1;
        if (r->n && r->s[0] == s->rcum) {
            i64 a = r->s[0], b = r->e[0];
            iset_pop_front(r, 1);
            s->rcum = b;
            s->ooo_bytes -= range_bytes(s, a, b);
        }
    } else {
        if (tmp_reserve(s, r->n + 2)) { s->o->error = 1; return; }
        if (iset_add(r, u, u + 1, s->tmp_s, s->tmp_e) < 0) { s->o->error = 1; return; }
        s->ooo_bytes += size_of(s, u);
    }
    /* the packet that fills the last gap: at once, or by the delayed-ack rule (ns-2 profile) */
    if (dup || r->n > 0 || (gaps_before && !s->P->gap_filler_delayed)) { send_ack(s, now, 1, u); return; }
    delayed_ack(s, now, u);
}
/* model.py _on_degrade_event, _heartbeat, _on_heartbeat_ack */
static void on_degrade(Sim *s, i64 now) {
    const Params *P = s->P;
    s->degrade_event = 0;
    if (!s->has_degrade) return;
    if (now < s->degrade_deadline) { s->degrade_event = 1; TRY(push(s, s->degrade_deadline, EV_DEGRADE, 0, 0)); return; }
    if (s->cwnd > P->init_cwnd * P->S) {
        s->cwnd = s->cwnd / 2 > 4 * P->S ? s->cwnd / 2 : 4 * P->S;
        cwnd_changed(s, now);
    }
    arm_degrade(s, now);
}
static void heartbeat(Sim *s, i64 now) {
    const Params *P = s->P;
    if (lost(s, -1, 1)) return;
    if (P->ack_loss > 0.0) {
        if (s->ack_draw_pos >= s->n_ack_draws) { s->o->error = 2; return; }
        if (s->ack_draws[s->ack_draw_pos++] < P->ack_loss) return;
    }
    TRY(push(s, now + 2 * P->delay, EV_HB_ACK, 0, now));
}
static void on_rto(Sim *s, i64 now) {
    const Params *P = s->P;
    s->rto_event = 0;
    if (!s->has_deadline) return;
    if (now < s->rto_deadline) { s->rto_event = 1; TRY(push(s, s->rto_deadline, EV_RTO, 0, 0)); return; }
    s->o->counters[3]++;
    s->rto = 2 * s->rto < P->rto_max ? 2 * s->rto : P->rto_max;
    i64 floor_ = P->sctp ? 4 * P->U : 2 * P->U;
    s->ssthresh = s->cwnd / 2 > floor_ ? s->cwnd / 2 : floor_;
    s->cwnd = P->U; s->pba = 0; s->fr_allow = 0;
    cwnd_changed(s, now);
    s->has_degrade = 0;
    if (s->rec_on) recovery(s, now);
    s->rec_on = 1; s->rec_kind = 1; s->rec_start = now; s->rec_exit = s->sp_sent - 1;
    for (i64 r = 0; r < s->refr.n; r++) s->refr_mark[s->refr.v[r]] = -1;
    s->refr.n = 0;
    for (i64 u = s->sp_cum; u < s->sp_sent; u++)
        if (s->flags[u] & INFL) { mark_lost(s, u); if (s->o->error) return; }
    s->has_deadline = 0;
    if (P->path_max_retrans && ++s->errors > P->path_max_retrans) { heartbeat(s, now); if (s->o->error) return; }
    try_send(s, now);
}

/* ctrl_*: the handshake frames in model.py's push order (time, name index, side: 0 the sender's
 * trace, 1 the receiver's); ready_t: when the path may carry data */
int fastsim_run(const Params *P, const double *first_draw, const double *draws, i64 n_draws,
                const double *ack_draws, i64 n_ack_draws, const uint8_t *drop, const i64 *ctrl_t, const i64 *ctrl_name,
                const i64 *ctrl_side, i64 n_ctrl, i64 ready_t, int record_receiver, Out *o) {
    Sim sim, *s = &sim;
    memset(s, 0, sizeof(*s));
    memset(o, 0, sizeof(*o));
    o->first_data_ns = -1; o->done_ns = -1;
    s->P = P; s->first_draw = first_draw; s->draws = draws; s->n_draws = n_draws; s->drop = drop;
    s->ack_draws = ack_draws; s->n_ack_draws = n_ack_draws; s->burst = -1; s->htna = -1;
    s->o = o;
    s->record_receiver = record_receiver;
    s->flags = calloc((size_t)P->n, 1);
    s->txt = calloc((size_t)P->n, sizeof(i64));
    s->miss = calloc((size_t)P->n, sizeof(int32_t));
    s->refr_mark = malloc((size_t)P->n * sizeof(i64));
    if (!s->flags || !s->txt || !s->miss || !s->refr_mark) { o->error = 1; goto done; }
    for (i64 u = 0; u < P->n; u++) s->refr_mark[u] = -1;
    s->peer_rwnd = P->rcvbuf;
    s->cwnd = P->init_cwnd * P->S; s->ssthresh = P->rcvbuf; s->rto = P->rto_initial;
    for (i64 i = 0; i < n_ctrl; i++)
        if (push(s, ctrl_t[i], EV_CTRL, ctrl_side[i], ctrl_name[i]) < 0) { o->error = 1; goto done; }
    if (push(s, ready_t, EV_READY, 0, 0) < 0) { o->error = 1; goto done; }
    while (s->ev.n && o->done_ns < 0 && !o->error) {
        Ev e = heap_pop(&s->ev);
        if (e.t > P->limit_ns) break;
        switch (e.kind) {
        case EV_DATA_ARRIVAL: on_data(s, e.t, e.b); break;
        case EV_ACK_ARRIVAL: on_ack(s, e.t, e.b); break;
        case EV_DELACK:
            if (s->delack_armed && s->delack_gen == e.b) send_ack(s, e.t, 0, 0);
            break;
        case EV_RTO: on_rto(s, e.t); break;
        case EV_READY: s->ready = 1; try_send(s, e.t); break;
        case EV_HB_ACK: s->errors = 0; rtt_sample(s, e.t - e.b); break;
        case EV_DEGRADE: on_degrade(s, e.t); break;
        case EV_CTRL:
            if (e.a) rframe(s, e.t, CTRL, e.b, 0);
            else frame(s, e.t, CTRL, e.b, 0);
            break;
        }
    }
    if (s->rec_on) recovery(s, -1);
    o->counters[7] = s->dcum_bytes;
done:
    free(s->flags); free(s->txt); free(s->miss); free(s->refr_mark); free(s->refr.v); free(s->ev.v); free(s->pending.v);
    free(s->sp_sacked.s); free(s->sp_sacked.e); free(s->holes.v); free(s->dsacked.s);
    free(s->dsacked.e); free(s->dnr.s); free(s->dnr.e); free(s->outq.v); free(s->linkq.v);
    free(s->rset.s); free(s->rset.e); free(s->tmp_s); free(s->tmp_e);
    return (int)o->error;
}

void fastsim_free(Out *o) {
    Vec *vs[] = {&o->f_t, &o->f_kind, &o->f_a, &o->f_b, &o->a_cum, &o->a_rwnd, &o->a_boff,
                 &o->a_bcnt, &o->b_s, &o->b_e, &o->truth, &o->cwnd, &o->rec, &o->r_t,
                 &o->r_kind, &o->r_a, &o->r_b, &o->a_sbcnt};
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
