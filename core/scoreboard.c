/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The scoreboard of one sender direction (docs/scoreboard.md): events in, facts and figures out.
 * Every figure is a set's units or weight, kept by iset.c as the sets change. */
#include "nrsack_core.h"
#include "nrsack_core_alloc.h"

#include <string.h>

enum { WORK_R, WORK_NR, WORK_ALL, WORK_CLIP };

static const weights_t *weights_of(const scoreboard_t *sb) { return sb->tsn_units ? &sb->weights : NULL; }

void sb_init(scoreboard_t *sb, int tsn_units) {
    memset(sb, 0, sizeof *sb);
    sb->tsn_units = tsn_units;
}

void sb_free(scoreboard_t *sb) {
    iset_free(&sb->sent);
    iset_free(&sb->sacked);
    iset_free(&sb->nracked);
    iset_free(&sb->last_revoked);
    for (size_t k = 0; k < sizeof sb->work / sizeof *sb->work; k++) iset_free(&sb->work[k]);
    weights_free(&sb->weights);
}

int sb_copy(scoreboard_t *dst, const scoreboard_t *src, int keep_data) {
    sb_init(dst, src->tsn_units);
    dst->space = src->space;
    dst->cum_known = src->cum_known;
    dst->cum = src->cum;
    dst->gap_open = src->gap_open;
    dst->news_known = src->news_known;
    dst->news_path = src->news_path;
    if (!keep_data) return 0;
    dst->have_data = src->have_data;
    dst->snd_max = src->snd_max;
    dst->lowest = src->lowest;
    dst->data_bytes = src->data_bytes;
    dst->acked_bytes = src->acked_bytes;
    if (iset_copy(&dst->sent, &src->sent) < 0 || iset_copy(&dst->sacked, &src->sacked) < 0 ||
        iset_copy(&dst->nracked, &src->nracked) < 0 || weights_copy(&dst->weights, &src->weights) < 0)
        return -1;
    return 0;
}

/* TSN mode: the weights table spans at most SB_TSN_WINDOW TSNs, from the cum ack (before any ack:
 * the lowest TSN seen, so it may grow downwards) to the highest TSN sent. */
static int in_window(const scoreboard_t *sb, uint64_t lo, uint64_t hi) {
    if (sb->cum_known) return lo < sb->cum || hi - sb->cum <= SB_TSN_WINDOW;
    if (!sb->have_data) return 1;
    uint64_t low = lo < sb->lowest ? lo : sb->lowest, high = hi > sb->snd_max ? hi : sb->snd_max;
    return high - low <= SB_TSN_WINDOW;
}

int sb_data(scoreboard_t *sb, uint64_t lo, uint64_t hi, uint32_t tsn_size, sb_data_facts_t *f) {
    memset(f, 0, sizeof *f);
    if (lo >= hi) return 0;
    if (sb->tsn_units && !in_window(sb, lo, hi)) {
        f->out_of_window = 1;
        return 0;
    }
    f->below_cum = sb->cum_known && lo < sb->cum;
    f->was_nracked = iset_overlaps(&sb->nracked, lo, hi);
    uint64_t from = sb->cum_known && sb->cum > lo ? sb->cum : lo;
    if (from < hi) {
        if (sb->tsn_units)  /* the first captured transmission of a TSN fixes its weight */
            for (uint64_t t = from; t < hi; t++)
                if (!iset_covers(&sb->sent, t, t + 1) && weights_set(&sb->weights, t, tsn_size) < 0) return -1;
        uint64_t units = sb->sent.units;
        if (iset_add(&sb->sent, from, hi, weights_of(sb), &f->new_bytes) < 0) return -1;
        f->new_units = sb->sent.units - units;
    }
    f->retransmission = f->new_units == 0;
    sb->data_bytes += f->new_bytes;
    if (!sb->have_data || lo < sb->lowest) sb->lowest = lo;
    if (!sb->have_data || hi > sb->snd_max) sb->snd_max = hi;
    sb->have_data = 1;
    return 0;
}

/* Copies blocks into a scratch vector, sorted and merged. */
static int normalized(iset_t *out, const ival_t *v, size_t n) {
    out->n = 0;
    if (!n) return 0;
    if (n > out->cap) {
        ival_t *grown = core_realloc(out->v, n * sizeof *grown);
        if (!grown) return -1;
        out->v = grown;
        out->cap = n;
    }
    memcpy(out->v, v, n * sizeof *v);
    out->n = ivals_normalize(out->v, n);
    return 0;
}

static int meet(const iset_t *a, const iset_t *b) {
    for (size_t i = 0, j = 0; i < a->n && j < b->n;) {
        if (a->v[i].hi <= b->v[j].lo) i++;
        else if (b->v[j].hi <= a->v[i].lo) j++;
        else return 1;
    }
    return 0;
}

static void note_revoked(sb_ack_facts_t *f, uint64_t lo, uint64_t hi) {
    if (f->n_revoked < SB_MAX_REPORTED) f->revoked[f->n_revoked] = (ival_t){lo, hi};
    f->n_revoked++;
    f->revoked_units += hi - lo;
}

/* Revoked: NR-acked units inside what the ack claims to report that its NR blocks leave out. */
static int find_revoked(scoreboard_t *sb, sb_revoke_t revoke, sb_ack_facts_t *f) {
    const iset_t *R = &sb->work[WORK_R], *N = &sb->work[WORK_NR];
    iset_t *claimed = &sb->work[WORK_ALL], *inside = &sb->work[WORK_CLIP], *out = &sb->last_revoked;
    claimed->n = 0;
    inside->n = 0;
    if (!sb->nracked.n) return 0;  /* nothing NR-acked above the cum ack: nothing to revoke */
    if (revoke == REVOKE_ALL) {
        if (iset_clip(&sb->nracked, &(ival_t){sb->cum, UINT64_MAX}, 1, inside) < 0) return -1;
    } else {
        for (size_t k = 0; k < R->n; k++)
            if (iset_add(claimed, R->v[k].lo, R->v[k].hi, NULL, NULL) < 0) return -1;
        if (N->n && iset_add(claimed, N->v[0].lo, N->v[N->n - 1].hi, NULL, NULL) < 0) return -1;
        if (iset_clip(&sb->nracked, claimed->v, claimed->n, inside) < 0) return -1;
    }
    size_t j = 0;  /* inside minus N, both sorted */
    for (size_t k = 0; k < inside->n; k++) {
        uint64_t x = inside->v[k].lo, hi = inside->v[k].hi;
        while (j < N->n && N->v[j].hi <= x) j++;
        for (size_t m = j; m < N->n && N->v[m].lo < hi && x < hi; m++) {
            if (N->v[m].lo > x) {
                if (iset_add(out, x, N->v[m].lo, NULL, NULL) < 0) return -1;
                note_revoked(f, x, N->v[m].lo);
            }
            if (N->v[m].hi > x) x = N->v[m].hi;
        }
        if (x < hi) {
            if (iset_add(out, x, hi, NULL, NULL) < 0) return -1;
            note_revoked(f, x, hi);
        }
    }
    return 0;
}

/* Joins blocks (sorted), clipped to sent, to `into`; *added gets the weight newly covered. */
static int join_clipped(scoreboard_t *sb, iset_t *into, const iset_t *blocks, uint64_t *added) {
    if (!blocks->n) return 0;
    iset_t *clip = &sb->work[WORK_CLIP];
    clip->n = 0;
    if (iset_clip(&sb->sent, blocks->v, blocks->n, clip) < 0) return -1;
    return iset_union(into, clip->v, clip->n, weights_of(sb), added);
}

int sb_ack(scoreboard_t *sb, uint64_t cum, const ival_t *r, size_t n_r, const ival_t *nr, size_t n_nr,
           sb_revoke_t revoke, uint64_t path, sb_ack_facts_t *f) {
    /* field by field: clearing the revoked array too (a memset) was half of a small ack's cost */
    f->stale = f->older = f->beyond_sent = f->r_and_nr = f->gap_open = 0;
    f->freed_units = f->freed_bytes = f->acked_units = f->revoked_units = 0;
    f->n_revoked = 0;
    sb->last_revoked.n = 0;
    iset_t *R = &sb->work[WORK_R], *N = &sb->work[WORK_NR], *all = &sb->work[WORK_ALL];
    if (normalized(R, r, n_r) < 0 || normalized(N, nr, n_nr) < 0) return -1;
    f->r_and_nr = meet(R, N);
    if (sb->have_data)
        f->beyond_sent = cum > sb->snd_max || (R->n && R->v[R->n - 1].hi > sb->snd_max) ||
                         (N->n && N->v[N->n - 1].hi > sb->snd_max);
    f->stale = sb->cum_known && cum < sb->cum;
    int news = !sb->cum_known || cum > sb->cum;
    if (!f->stale && news) {
        f->acked_units = sb->cum_known ? cum - sb->cum : 0;
        const weights_t *w = weights_of(sb);
        iset_trim_below(&sb->sacked, cum, w);
        iset_trim_below(&sb->nracked, cum, w);
        sb->acked_bytes += iset_trim_below(&sb->sent, cum, w);  /* last: the weights go next */
        if (sb->tsn_units) weights_drop_below(&sb->weights, cum);
        sb->cum = cum;
        sb->cum_known = 1;
    }
    /* R and NR blocks together join sacked (before the revocation test: a unit not sacked before is news) */
    const iset_t *reported = N->n ? R->n ? all : N : R;
    if (reported == all) {
        if (normalized(all, R->v, R->n) < 0) return -1;
        if (all->n + N->n > all->cap) {
            ival_t *grown = core_realloc(all->v, (all->n + N->n) * sizeof *grown);
            if (!grown) return -1;
            all->v = grown;
            all->cap = all->n + N->n;
        }
        memcpy(all->v + all->n, N->v, N->n * sizeof *N->v);
        all->n = ivals_normalize(all->v, all->n + N->n);
    }
    uint64_t sacked_weight = 0, sacked_units = sb->sacked.units;
    if (join_clipped(sb, &sb->sacked, reported, &sacked_weight) < 0) return -1;
    news |= sb->sacked.units > sacked_units;
    if (!f->stale) {
        /* Acks of one path arrive in the order they were sent; across paths the capture cannot order
         * two acks of the same cum. One that tells nothing new, on another path than the last ack
         * that did, may have been sent before it (rules.md NR-03): it judges no revocation. */
        f->older = !news && sb->news_known && path != sb->news_path;
        if (news) {
            sb->news_path = path;
            sb->news_known = 1;
        }
        sb->gap_open = (R->n && R->v[R->n - 1].hi > cum) || (N->n && N->v[N->n - 1].hi > cum);
        if (revoke != REVOKE_NONE && !f->older && find_revoked(sb, revoke, f) < 0) return -1;
    }
    f->gap_open = sb->gap_open;
    uint64_t nr_units = sb->nracked.units;  /* the NR blocks join nracked */
    if (join_clipped(sb, &sb->nracked, N, &f->freed_bytes) < 0) return -1;
    f->freed_units = sb->nracked.units - nr_units;
    return 0;
}

int sb_received(scoreboard_t *sb, const ival_t *r, size_t n_r) {
    iset_t *R = &sb->work[WORK_R];
    uint64_t added = 0;
    if (normalized(R, r, n_r) < 0) return -1;
    return join_clipped(sb, &sb->sacked, R, &added);
}

void sb_figures(const scoreboard_t *sb, sb_figures_t *f) {
    f->rtxq_sack = sb->sent.weight;
    f->sacked = sb->sacked.weight;
    f->nr_acked = sb->nracked.weight;
    f->rtxq_nr = f->rtxq_sack - f->nr_acked;
    f->rtxq_whatif = f->rtxq_sack - f->sacked;
    f->units_sack = sb->sent.units;
    f->units_sacked = sb->sacked.units;
    f->units_nr = sb->nracked.units;
}

int sb_blocked(const sb_figures_t *f, uint64_t sndbuf, uint64_t full_packet, int nr_in_use) {
    uint64_t rtxq = nr_in_use ? f->rtxq_nr : f->rtxq_sack;
    return rtxq + full_packet > sndbuf;  /* B - rtxq < S, without unsigned underflow */
}

uint64_t sb_bytes(const scoreboard_t *sb, uint64_t lo, uint64_t hi) { return weights_sum(weights_of(sb), lo, hi); }

ival_t sctp_gap_block(uint64_t cum_tsn, uint16_t start, uint16_t end) {
    return (ival_t){cum_tsn + start, cum_tsn + (uint64_t)end + 1};
}
