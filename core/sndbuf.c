/* The send buffer B from the capture alone (docs/metrics.md, "Estimating B"): the RtxQ at which the sender
 * waited for acks, and whether those waits sat at a ceiling. One estimator for the analyzer and the plugins. */
#include "nrsack_core.h"

#include <stdlib.h>
#include <string.h>

void sbe_init(sbe_t *e) { memset(e, 0, sizeof *e); }

void sbe_free(sbe_t *e) {
    for (int k = 0; k < 2; k++) free(e->levels[k].v);
    sbe_init(e);
}

int sbe_copy(sbe_t *dst, const sbe_t *src) {
    *dst = *src;
    for (int k = 0; k < 2; k++) {
        dst->levels[k].v = NULL;
        dst->levels[k].cap = 0;
    }
    for (int k = 0; k < 2; k++) {
        size_t n = src->levels[k].n;
        if (!n) continue;
        dst->levels[k].v = malloc(n * sizeof *dst->levels[k].v);
        if (!dst->levels[k].v) {
            sbe_free(dst);
            return -1;
        }
        memcpy(dst->levels[k].v, src->levels[k].v, n * sizeof *dst->levels[k].v);
        dst->levels[k].cap = n;
    }
    return 0;
}

static int count_wait(sbe_levels_t *l, uint64_t level) {
    uint64_t bin = level / SBE_BIN;
    size_t lo = 0, hi = l->n;  /* the first bin >= bin */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->v[mid].bin < bin) lo = mid + 1;
        else hi = mid;
    }
    if (lo == l->n || l->v[lo].bin != bin) {
        if (l->n == l->cap) {
            size_t cap = l->cap ? 2 * l->cap : 16;
            sbe_bin_t *grown = realloc(l->v, cap * sizeof *grown);
            if (!grown) return -1;
            l->v = grown;
            l->cap = cap;
        }
        memmove(l->v + lo + 1, l->v + lo, (l->n - lo) * sizeof *l->v);
        l->v[lo] = (sbe_bin_t){bin, 0, level};
        l->n++;
    }
    l->v[lo].waits++;
    if (level > l->v[lo].top) l->v[lo].top = level;
    l->waits++;
    return 0;
}

int sbe_new_data(sbe_t *e, uint64_t rtxq_sack, uint64_t rtxq_nr) {
    if (e->sent_new && e->freed)  /* a wait for an ack ended in new data: it began at after_new */
        for (int k = 0; k < 2; k++)
            if (count_wait(&e->levels[k], e->after_new[k]) < 0) return -1;
    e->after_new[SBE_SACK] = rtxq_sack;
    e->after_new[SBE_NR] = rtxq_nr;
    e->sent_new = 1;
    e->freed = 0;
    return 0;
}

void sbe_freeing_ack(sbe_t *e) { e->freed = e->sent_new; }

void sbe_decide(const sbe_t *e, int nr, uint64_t full_packet, sbe_result_t *r) {
    const sbe_levels_t *l = &e->levels[nr ? SBE_NR : SBE_SACK];
    memset(r, 0, sizeof *r);
    r->waits = l->waits;
    r->verdict = SBE_CANNOT_TELL;
    if (!e->sent_new || !full_packet) {
        r->why = SBE_NO_DATA;
        return;
    }
    if (!l->waits) {  /* the sender never waited for an ack before sending new data */
        r->verdict = SBE_NEVER;
        r->why = SBE_ONE_FLIGHT;
        return;
    }
    if (l->waits < SBE_MIN_WAITS) {
        r->why = SBE_FEW_WAITS;
        return;
    }
    /* The ceiling: the highest level x with at least 30 % of the waits in [x - 2 S, x] and at most 10 %
     * above it (excursions in loss recovery). Two packets of tolerance: a Linux sender resumes an ack
     * (two segments) at a time. */
    uint64_t tol = 2 * full_packet, above = 0;
    for (size_t k = l->n; k-- > 0;) {
        if (above * 10 > l->waits) break;
        uint64_t x = l->v[k].top, floor = x > tol ? x - tol : 0, count = 0;
        for (size_t j = k + 1; j-- > 0 && l->v[j].top >= floor;) count += l->v[j].waits;
        if (count >= SBE_MIN_WAITS && count * 10 >= 3 * l->waits) {
            r->verdict = SBE_HELD_BACK;
            r->why = SBE_CEILING;
            r->sndbuf = x;
            r->threshold = floor;
            r->at_ceiling = count;
            r->above = above;
            return;
        }
        above += l->v[k].waits;
    }
    /* No ceiling. The top fifth of the waits spread over more than 4 packets: the level kept moving, as a
     * congestion window does; else too close to a ceiling to call it either way. */
    uint64_t top = l->v[l->n - 1].top, fifth = 0, level = top;
    for (size_t k = l->n; k-- > 0 && fifth * 5 < l->waits;) {
        fifth += l->v[k].waits;
        level = l->v[k].top;
    }
    if (top - level > 4 * full_packet) {
        r->verdict = SBE_NEVER;
        r->why = SBE_MOVING;
    } else {
        r->why = SBE_UNSETTLED;
    }
}

int sbe_blocked(const sbe_result_t *r, uint64_t rtxq_after_new, int before_last_new) {
    return r->verdict == SBE_HELD_BACK && before_last_new && rtxq_after_new >= r->threshold;
}
