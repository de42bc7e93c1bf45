/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Interval sets of serials with their units and weight kept as they change, and the TSN weights
 * window (docs/scoreboard.md "State"). Lookups are binary searches; a large batch of intervals
 * joins a set in one merge walk, so an ack with thousands of blocks costs a sort and linear walks. */
#include "nrsack_core.h"
#include "nrsack_core_alloc.h"

#include <stdlib.h>
#include <string.h>

/* ---- TSN weights: size[i] is TSN base + i ---- */

uint64_t weights_sum(const weights_t *w, uint64_t lo, uint64_t hi) {
    if (!w) return hi > lo ? hi - lo : 0;
    if (lo < w->base) lo = w->base;
    if (hi > w->base + w->n) hi = w->base + w->n;
    uint64_t sum = 0;
    for (uint64_t t = lo; t < hi; t++) sum += w->size[t - w->base];
    return sum;
}

static int weights_reserve(weights_t *w, size_t need) {
    if (need <= w->cap) return 0;
    size_t cap = w->cap ? w->cap : 64;
    while (cap < need) cap *= 2;
    uint32_t *size = core_realloc(w->size, cap * sizeof *size);
    if (!size) return -1;
    w->size = size;
    w->cap = cap;
    return 0;
}

int weights_set(weights_t *w, uint64_t unit, uint32_t size) {
    if (!w->n) w->base = unit;
    if (unit < w->base) {
        /* grow downwards by at least the table's length, so a run of ever lower TSNs moves it
         * O(log) times (a receiver-side capture whose first DATA was lost) */
        uint64_t down = w->base - unit;
        if (down < w->n) down = w->n;
        if (down > w->base) down = w->base;
        if (weights_reserve(w, w->n + down) < 0) return -1;
        memmove(w->size + down, w->size, w->n * sizeof *w->size);
        memset(w->size, 0, down * sizeof *w->size);
        w->n += down;
        w->base -= down;
    } else if (unit - w->base >= w->n) {
        size_t need = (size_t)(unit - w->base) + 1;
        if (weights_reserve(w, need) < 0) return -1;
        memset(w->size + w->n, 0, (need - w->n) * sizeof *w->size);
        w->n = need;
    }
    w->size[unit - w->base] = size;
    return 0;
}

void weights_drop_below(weights_t *w, uint64_t cut) {
    if (cut <= w->base) return;
    if (cut - w->base >= w->n) {
        w->n = 0;
        w->base = cut;
        return;
    }
    size_t drop = (size_t)(cut - w->base);
    if (drop * 2 < w->n) return;  /* moved when half of it is dead: amortized O(1) per TSN */
    memmove(w->size, w->size + drop, (w->n - drop) * sizeof *w->size);
    w->n -= drop;
    w->base = cut;
}

void weights_free(weights_t *w) {
    core_free(w->size);
    memset(w, 0, sizeof *w);
}

int weights_copy(weights_t *dst, const weights_t *src) {
    memset(dst, 0, sizeof *dst);
    if (weights_reserve(dst, src->n) < 0) return -1;
    if (src->n) memcpy(dst->size, src->size, src->n * sizeof *src->size);
    dst->n = src->n;
    dst->base = src->base;
    return 0;
}

/* ---- interval sets ---- */

static int iset_reserve(iset_t *s, size_t need) {
    if (need <= s->cap) return 0;
    size_t cap = s->cap ? s->cap * 2 : 8;
    while (cap < need) cap *= 2;
    ival_t *v = core_realloc(s->v, cap * sizeof *v);
    if (!v) return -1;
    s->v = v;
    s->cap = cap;
    return 0;
}

int iset_append(iset_t *out, uint64_t lo, uint64_t hi) {
    if (iset_reserve(out, out->n + 1) < 0) return -1;
    out->v[out->n++] = (ival_t){lo, hi};
    return 0;
}

void iset_free(iset_t *s) {
    core_free(s->v);
    memset(s, 0, sizeof *s);
}

int iset_copy(iset_t *dst, const iset_t *src) {
    memset(dst, 0, sizeof *dst);
    if (iset_reserve(dst, src->n) < 0) return -1;
    if (src->n) memcpy(dst->v, src->v, src->n * sizeof *src->v);
    dst->n = src->n;
    dst->units = src->units;
    dst->weight = src->weight;
    return 0;
}

/* The first interval with hi >= x (touching x counts). */
static size_t first_reaching(const iset_t *s, uint64_t x) {
    size_t a = 0, b = s->n;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (s->v[m].hi < x) a = m + 1; else b = m;
    }
    return a;
}

int iset_add(iset_t *s, uint64_t lo, uint64_t hi, const weights_t *w, uint64_t *added_weight) {
    if (lo >= hi) return 0;
    size_t i = first_reaching(s, lo), j = i;
    uint64_t new_lo = lo, new_hi = hi, next = lo, units = 0, weight = 0;  /* next: first unit not looked at */
    for (; j < s->n && s->v[j].lo <= hi; j++) {
        if (s->v[j].lo > next) { units += s->v[j].lo - next; weight += weights_sum(w, next, s->v[j].lo); }
        if (s->v[j].hi > next) next = s->v[j].hi;
        if (s->v[j].lo < new_lo) new_lo = s->v[j].lo;
        if (s->v[j].hi > new_hi) new_hi = s->v[j].hi;
    }
    if (next < hi) { units += hi - next; weight += weights_sum(w, next, hi); }
    if (j == i) {
        if (iset_reserve(s, s->n + 1) < 0) return -1;
        memmove(s->v + i + 1, s->v + i, (s->n - i) * sizeof *s->v);
        s->n++;
    } else if (j > i + 1) {
        memmove(s->v + i + 1, s->v + j, (s->n - j) * sizeof *s->v);
        s->n -= j - i - 1;
    }
    s->v[i] = (ival_t){new_lo, new_hi};
    s->units += units;
    s->weight += weight;
    if (added_weight) *added_weight += weight;
    return 0;
}

/* Below this many intervals a batch joins one by one (binary search, usually no move). */
#define MERGE_WALK_FROM 16

int iset_union(iset_t *s, const ival_t *v, size_t n, const weights_t *w, uint64_t *added_weight) {
    if (n < MERGE_WALK_FROM) {
        for (size_t k = 0; k < n; k++)
            if (iset_add(s, v[k].lo, v[k].hi, w, added_weight) < 0) return -1;
        return 0;
    }
    /* the newly covered parts: v minus s, both sorted */
    uint64_t units = 0, weight = 0;
    size_t i = 0;
    for (size_t k = 0; k < n; k++) {
        uint64_t x = v[k].lo;
        while (i < s->n && s->v[i].hi <= x) i++;
        for (size_t m = i; m < s->n && s->v[m].lo < v[k].hi && x < v[k].hi; m++) {
            if (s->v[m].lo > x) { units += s->v[m].lo - x; weight += weights_sum(w, x, s->v[m].lo); }
            if (s->v[m].hi > x) x = s->v[m].hi;
        }
        if (x < v[k].hi) { units += v[k].hi - x; weight += weights_sum(w, x, v[k].hi); }
    }
    /* the union, merged into a new array */
    size_t cap = s->n + n;
    ival_t *out = core_realloc(NULL, cap * sizeof *out);
    if (!out) return -1;
    size_t a = 0, b = 0, m = 0;
    while (a < s->n || b < n) {
        ival_t next = (b >= n || (a < s->n && s->v[a].lo <= v[b].lo)) ? s->v[a++] : v[b++];
        if (m && out[m - 1].hi >= next.lo) {
            if (next.hi > out[m - 1].hi) out[m - 1].hi = next.hi;
        } else {
            out[m++] = next;
        }
    }
    core_free(s->v);
    s->v = out;
    s->n = m;
    s->cap = cap;
    s->units += units;
    s->weight += weight;
    if (added_weight) *added_weight += weight;
    return 0;
}

uint64_t iset_trim_below(iset_t *s, uint64_t cut, const weights_t *w) {
    size_t whole = 0;
    uint64_t weight = 0;
    for (size_t k = 0; k < s->n && s->v[k].lo < cut; k++) {
        uint64_t hi = s->v[k].hi < cut ? s->v[k].hi : cut;
        s->units -= hi - s->v[k].lo;
        weight += weights_sum(w, s->v[k].lo, hi);
        if (s->v[k].hi > cut) s->v[k].lo = cut; else whole++;
    }
    if (whole) {
        memmove(s->v, s->v + whole, (s->n - whole) * sizeof *s->v);
        s->n -= whole;
    }
    s->weight -= weight;
    return weight;
}

int iset_overlaps(const iset_t *s, uint64_t lo, uint64_t hi) {
    size_t i = first_reaching(s, lo + 1);  /* the first interval ending after lo */
    return lo < hi && i < s->n && s->v[i].lo < hi;
}

int iset_covers(const iset_t *s, uint64_t lo, uint64_t hi) {
    if (lo >= hi) return 1;
    size_t i = first_reaching(s, hi);
    return i < s->n && s->v[i].lo <= lo;
}

static int by_lo(const void *a, const void *b) {
    const ival_t *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

size_t ivals_normalize(ival_t *v, size_t n) {
    int sorted = 1;
    for (size_t k = 1; k < n && sorted; k++) sorted = v[k - 1].lo <= v[k].lo;
    if (!sorted) qsort(v, n, sizeof *v, by_lo);
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        if (v[k].lo >= v[k].hi) continue;
        if (m && v[m - 1].hi >= v[k].lo) {
            if (v[k].hi > v[m - 1].hi) v[m - 1].hi = v[k].hi;
        } else {
            v[m++] = v[k];
        }
    }
    return m;
}

int iset_clip(const iset_t *s, const ival_t *v, size_t n, iset_t *out) {
    for (size_t k = 0; k < n; k++) {
        for (size_t i = first_reaching(s, v[k].lo + 1); i < s->n && s->v[i].lo < v[k].hi; i++) {
            uint64_t lo = s->v[i].lo > v[k].lo ? s->v[i].lo : v[k].lo;
            uint64_t hi = s->v[i].hi < v[k].hi ? s->v[i].hi : v[k].hi;
            if (lo < hi && iset_append(out, lo, hi) < 0) return -1;
        }
    }
    return 0;
}
