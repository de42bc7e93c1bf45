/* Interval sets and the per-direction scoreboard (architecture.md: "the scoreboard is an interval set").
 * Everything is unwrapped to 64 bits once, here; callers do plain arithmetic after that. */
#include "scoreboard.h"

#include <string.h>
#include <epan/wmem_scopes.h>

/* Numbers start at 2^32 + first value so that values slightly below the first one stay positive. */
#define UNWRAP_ORIGIN (G_GUINT64_CONSTANT(1) << 32)

static void iset_reserve(iset_t *s, guint need)
{
    if (need <= s->cap)
        return;
    guint cap = s->cap ? s->cap * 2 : 4;
    while (cap < need)
        cap *= 2;
    s->v = (ival_t *)wmem_realloc(wmem_file_scope(), s->v, cap * sizeof(ival_t));
    s->cap = cap;
}

void iset_add(iset_t *s, guint64 lo, guint64 hi)
{
    if (lo >= hi)
        return;
    /* first interval that ends at or after lo (touching intervals merge) */
    guint i = 0;
    while (i < s->n && s->v[i].hi < lo)
        i++;
    guint j = i;
    while (j < s->n && s->v[j].lo <= hi) {
        lo = MIN(lo, s->v[j].lo);
        hi = MAX(hi, s->v[j].hi);
        j++;
    }
    if (j == i) {
        iset_reserve(s, s->n + 1);
        memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof(ival_t));
        s->n++;
    } else if (j > i + 1) {
        memmove(&s->v[i + 1], &s->v[j], (s->n - j) * sizeof(ival_t));
        s->n -= j - i - 1;
    }
    s->v[i].lo = lo;
    s->v[i].hi = hi;
}

void iset_trim_below(iset_t *s, guint64 x)
{
    guint i = 0;
    while (i < s->n && s->v[i].hi <= x)
        i++;
    if (i) {
        memmove(&s->v[0], &s->v[i], (s->n - i) * sizeof(ival_t));
        s->n -= i;
    }
    if (s->n && s->v[0].lo < x)
        s->v[0].lo = x;
}

gboolean iset_overlaps(const iset_t *s, guint64 lo, guint64 hi)
{
    for (guint i = 0; i < s->n && s->v[i].lo < hi; i++)
        if (s->v[i].hi > lo)
            return TRUE;
    return FALSE;
}

gboolean iset_covers(const iset_t *s, guint64 lo, guint64 hi)
{
    for (guint i = 0; i < s->n; i++)
        if (s->v[i].lo <= lo && s->v[i].hi >= hi)
            return TRUE;
    return lo >= hi;
}

/* ---- TSN -> payload bytes ---- */

static guint64 sizes_prefix(const tsn_sizes_t *z, guint64 tsn)
{
    if (!z->n || tsn <= z->base)
        return 0;
    guint64 i = tsn - z->base;
    return z->off[MIN(i, (guint64)z->n - 1)];
}

static gboolean sizes_in_window(const tsn_sizes_t *z, guint64 tsn)
{
    return !z->n || (tsn >= z->base && tsn - z->base < SB_TSN_WINDOW);
}

static void sizes_set(tsn_sizes_t *z, guint64 tsn, guint32 size)
{
    if (!z->n) {
        z->base = tsn;
        z->cap = 64;
        z->off = (guint64 *)wmem_alloc0(wmem_file_scope(), z->cap * sizeof(guint64));
        z->n = 1;
    }
    if (tsn < z->base)
        return; /* below the window: already cum-acked, a retransmission */
    guint64 i = tsn - z->base;
    while ((guint64)z->n < i + 2) {
        if (z->n == z->cap) {
            z->cap *= 2;
            z->off = (guint64 *)wmem_realloc(wmem_file_scope(), z->off, z->cap * sizeof(guint64));
        }
        z->off[z->n] = z->off[z->n - 1];
        z->n++;
    }
    /* a hole filled late (reordered capture) shifts every later prefix */
    for (guint k = (guint)i + 1; k < z->n; k++)
        z->off[k] += size;
}

/* Drop prefixes far below the cum ack so memory stays bounded on long captures. */
static void sizes_compact(tsn_sizes_t *z, guint64 cum)
{
    if (!z->n || cum <= z->base)
        return;
    guint64 drop = cum - z->base;
    if (drop < 4096 || drop * 2 < z->n)
        return;
    drop = MIN(drop, (guint64)z->n - 1);
    guint64 removed = z->off[drop];
    memmove(&z->off[0], &z->off[drop], (z->n - drop) * sizeof(guint64));
    z->n -= (guint)drop;
    for (guint k = 0; k < z->n; k++)
        z->off[k] -= removed;
    z->base += drop;
}

guint64 sb_bytes(const scoreboard_t *sb, guint64 lo, guint64 hi)
{
    if (lo >= hi)
        return 0;
    if (!sb->tsn_units)
        return hi - lo;
    return sizes_prefix(&sb->sizes, hi) - sizes_prefix(&sb->sizes, lo);
}

static guint64 iset_bytes(const scoreboard_t *sb, const iset_t *s)
{
    guint64 total = 0;
    for (guint i = 0; i < s->n; i++)
        total += sb_bytes(sb, s->v[i].lo, s->v[i].hi);
    return total;
}

/* ---- scoreboard ---- */

void sb_init(scoreboard_t *sb, gboolean tsn_units)
{
    memset(sb, 0, sizeof(*sb));
    sb->tsn_units = tsn_units;
}

guint64 sb_unwrap(scoreboard_t *sb, guint32 v)
{
    if (!sb->anchored) {
        sb->anchored = TRUE;
        sb->ref = UNWRAP_ORIGIN + v;
        return sb->ref;
    }
    gint32 delta = (gint32)(v - (guint32)sb->ref);
    guint64 x = sb->ref + (gint64)delta;
    if (x > sb->ref)
        sb->ref = x;
    return x;
}

guint64 sb_unwrap64(scoreboard_t *sb, guint64 v)
{
    if (!sb->anchored || v > sb->ref) {
        sb->anchored = TRUE;
        sb->ref = v;
    }
    return v;
}

void sb_data(scoreboard_t *sb, guint64 lo, guint64 hi, guint32 tsn_size, sb_data_result_t *res)
{
    memset(res, 0, sizeof(*res));
    if (lo >= hi)
        return;
    res->below_cum = sb->cum_known && lo < sb->cum;
    res->was_nracked = iset_overlaps(&sb->nracked, lo, hi);
    guint64 from = (sb->cum_known && sb->cum > lo) ? sb->cum : lo;
    if (from >= hi)
        return;
    if (sb->tsn_units) {
        /* one DATA chunk = one TSN */
        if (!sizes_in_window(&sb->sizes, lo)) {
            res->out_of_window = TRUE;
            return;
        }
        if (!iset_overlaps(&sb->sent, lo, hi)) {
            sizes_set(&sb->sizes, lo, tsn_size);
            iset_add(&sb->sent, lo, hi);
            res->new_bytes = tsn_size;
        }
    } else {
        /* bytes [from, hi) not yet in the sent set are first transmissions */
        guint64 before = iset_bytes(sb, &sb->sent);
        iset_add(&sb->sent, from, hi);
        res->new_bytes = iset_bytes(sb, &sb->sent) - before;
    }
    if (hi > sb->snd_max)
        sb->snd_max = hi;
}

/* Adds block [lo, hi) to set s, clipped to the data actually sent. */
static void add_clipped_to_sent(scoreboard_t *sb, iset_t *s, guint64 lo, guint64 hi)
{
    for (guint i = 0; i < sb->sent.n; i++) {
        guint64 a = MAX(lo, sb->sent.v[i].lo), b = MIN(hi, sb->sent.v[i].hi);
        if (a < b)
            iset_add(s, a, b);
    }
}

static void note_revoked(sb_ack_result_t *res, guint64 lo, guint64 hi)
{
    if (res->n_revoked < SB_MAX_REPORTED)
        res->revoked[res->n_revoked] = (ival_t){lo, hi};
    res->n_revoked++;
}

/* NR-acked units (above the cum ack) inside `claimed` that `reported` leaves out. */
static void find_revoked(const scoreboard_t *sb, const ival_t *r, guint n_r, const ival_t *nr, guint n_nr,
                         sb_revoke_t revoke, sb_ack_result_t *res)
{
    iset_t reported = {0}, claimed = {0};
    for (guint i = 0; i < n_nr; i++)
        iset_add(&reported, nr[i].lo, nr[i].hi);
    if (revoke == REVOKE_ALL) {
        iset_add(&claimed, sb->cum, G_MAXUINT64);
    } else {
        for (guint i = 0; i < n_r; i++)
            iset_add(&claimed, r[i].lo, r[i].hi);
        if (reported.n)
            iset_add(&claimed, reported.v[0].lo, reported.v[reported.n - 1].hi);
    }
    for (guint i = 0; i < sb->nracked.n; i++) {
        for (guint c = 0; c < claimed.n; c++) {
            guint64 lo = MAX(sb->nracked.v[i].lo, claimed.v[c].lo), hi = MIN(sb->nracked.v[i].hi, claimed.v[c].hi);
            if (lo >= hi)
                continue;
            guint64 x = lo; /* walk [lo, hi) past the reported intervals */
            for (guint k = 0; k < reported.n && x < hi; k++) {
                if (reported.v[k].hi <= x)
                    continue;
                if (reported.v[k].lo > x)
                    note_revoked(res, x, MIN(hi, reported.v[k].lo));
                x = MAX(x, reported.v[k].hi);
            }
            if (x < hi)
                note_revoked(res, x, hi);
        }
    }
    wmem_free(wmem_file_scope(), reported.v);
    wmem_free(wmem_file_scope(), claimed.v);
}

void sb_ack(scoreboard_t *sb, guint64 cum, const ival_t *r, guint n_r, const ival_t *nr, guint n_nr,
            sb_revoke_t revoke, sb_ack_result_t *res)
{
    memset(res, 0, sizeof(*res));
    res->stale = sb->cum_known && cum < sb->cum;
    if (!res->stale) {
        sb->cum = cum;
        sb->cum_known = TRUE;
    }
    if (cum > sb->snd_max)
        res->beyond_sent = TRUE;
    iset_trim_below(&sb->sent, sb->cum);
    iset_trim_below(&sb->sacked, sb->cum);
    iset_trim_below(&sb->nracked, sb->cum);

    if (revoke != REVOKE_NONE && !res->stale)
        find_revoked(sb, r, n_r, nr, n_nr, revoke, res);

    if (!res->stale) {
        for (guint i = 0; i < n_r && !res->gap_open; i++)
            res->gap_open = r[i].hi > sb->cum;
        for (guint i = 0; i < n_nr && !res->gap_open; i++)
            res->gap_open = nr[i].hi > sb->cum;
    }
    guint64 nr_before = iset_bytes(sb, &sb->nracked);
    for (guint i = 0; i < n_r; i++) {
        if (r[i].hi > sb->snd_max)
            res->beyond_sent = TRUE;
        add_clipped_to_sent(sb, &sb->sacked, MAX(r[i].lo, sb->cum), r[i].hi);
    }
    for (guint i = 0; i < n_nr; i++) {
        if (nr[i].hi > sb->snd_max)
            res->beyond_sent = TRUE;
        add_clipped_to_sent(sb, &sb->sacked, MAX(nr[i].lo, sb->cum), nr[i].hi);
        add_clipped_to_sent(sb, &sb->nracked, MAX(nr[i].lo, sb->cum), nr[i].hi);
    }
    res->freed_bytes = iset_bytes(sb, &sb->nracked) - nr_before;
    if (sb->tsn_units)
        sizes_compact(&sb->sizes, sb->cum);
}

void sb_received(scoreboard_t *sb, const ival_t *r, guint n_r)
{
    for (guint i = 0; i < n_r; i++)
        if (!sb->cum_known || r[i].hi > sb->cum)
            add_clipped_to_sent(sb, &sb->sacked, sb->cum_known ? MAX(r[i].lo, sb->cum) : r[i].lo, r[i].hi);
}

void sb_figures(const scoreboard_t *sb, sb_figures_t *f)
{
    f->rtxq_sack = iset_bytes(sb, &sb->sent);
    f->nr_acked = iset_bytes(sb, &sb->nracked);
    f->sacked = iset_bytes(sb, &sb->sacked);
    f->rtxq_nr = f->rtxq_sack - f->nr_acked;
    f->rtxq_whatif = f->rtxq_sack - f->sacked;
}
