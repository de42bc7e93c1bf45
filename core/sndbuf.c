/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The send buffer B from the capture alone (docs/metrics.md, "Estimating B"): the RtxQ at which the sender
 * waited for acks, how long it waited, and whether those waits sat at a ceiling. One estimator for the
 * analyzer and the plugins. */
#include "nrsack_core.h"
#include "nrsack_core_alloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sbe_init(sbe_t *e) { memset(e, 0, sizeof *e); }

enum { SBE_LEVEL_SETS = 8 };  /* all, held, settled and deep, per semantics */

static sbe_levels_t *levels_of(sbe_t *e, int k) {
    return k < 2 ? &e->all[k] : k < 4 ? &e->held[k - 2] : k < 6 ? &e->settled[k - 4] : &e->deep[k - 6];
}

void sbe_free(sbe_t *e) {
    for (int k = 0; k < SBE_LEVEL_SETS; k++) core_free(levels_of(e, k)->v);
    sbe_init(e);
}

int sbe_copy(sbe_t *dst, const sbe_t *src) {
    *dst = *src;
    for (int k = 0; k < SBE_LEVEL_SETS; k++) {
        sbe_levels_t *l = levels_of(dst, k);
        size_t n = l->n;
        const sbe_bin_t *from = l->v;
        l->v = NULL;
        l->n = l->cap = 0;
        if (!n) continue;
        if (!(l->v = core_realloc(NULL, n * sizeof *l->v))) {
            sbe_free(dst);
            return -1;
        }
        memcpy(l->v, from, n * sizeof *l->v);
        l->n = l->cap = n;
    }
    return 0;
}

/* a + b, or UINT64_MAX where it would wrap: waits' times summed over a clock that jumps back and forth
 * (the Lua twin's doubles do not wrap) */
static uint64_t add_saturating(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

static int count_wait(sbe_levels_t *l, uint64_t level, uint64_t waited_ns) {
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
            sbe_bin_t *grown = core_realloc(l->v, cap * sizeof *grown);
            if (!grown) return -1;
            l->v = grown;
            l->cap = cap;
        }
        memmove(l->v + lo + 1, l->v + lo, (l->n - lo) * sizeof *l->v);
        l->v[lo] = (sbe_bin_t){bin, 0, level, 0, 0, 0};
        l->n++;
    }
    l->v[lo].waits++;
    l->v[lo].wait_ns = add_saturating(l->v[lo].wait_ns, waited_ns);
    if (waited_ns > l->v[lo].longest_ns) l->v[lo].longest_ns = waited_ns;
    if (level > l->v[lo].top) l->v[lo].top = level;
    l->v[lo].last = ++l->waits;
    return 0;
}

int sbe_new_data(sbe_t *e, uint64_t rtxq_sack, uint64_t rtxq_nr, uint64_t bytes, int64_t now_ns) {
    if (e->sent_new && e->acks) {  /* a wait for an ack ended in new data: it began at after_new */
        int long_wait = e->acks >= SBE_LONG_WAIT && !e->gap_seen;
        /* its time runs to its last freeing ack, not to the new data: a writer on a buffer full of sent data is
         * resumed by the ack that frees room (usrsctp at every SACK, its data out at once: at most 13 ms later on
         * the lab's 24 CMT runs), so new data long after it was held by something else (the paths' windows,
         * stalled with room free: 1.16 s on a lab CMT run at 49,000 of 65,536) */
        uint64_t waited = e->freed_at_ns > e->new_at_ns ? (uint64_t)e->freed_at_ns - (uint64_t)e->new_at_ns : 0;
        e->ended++;
        if (now_ns > e->freed_at_ns && (uint64_t)now_ns - (uint64_t)e->freed_at_ns >= SBE_PACED_NS) e->ended_paced++;
        for (int k = 0; k < 2; k++) {
            uint64_t rtxq = k == SBE_SACK ? rtxq_sack : rtxq_nr, before = rtxq > bytes ? rtxq - bytes : 0;
            /* deep: a quarter of the level acked before new data left (a writer woken once a third of its
             * buffer is free; a GSO skb's truesize freed only as a whole) */
            int deep = long_wait && e->after_new[k] > before && (e->after_new[k] - before) * 4 >= e->after_new[k];
            if ((deep && count_wait(&e->deep[k], e->after_new[k], waited) < 0) ||
                count_wait(&e->all[k], e->after_new[k], waited) < 0 ||
                (long_wait && count_wait(&e->held[k], e->after_new[k], waited) < 0))
                return -1;
            if (e->after_new[k] > e->record[k]) {  /* a new highest level: what came before is a transient */
                e->record[k] = e->after_new[k];
                e->settled[k].n = 0;
                e->settled[k].waits = 0;
            } else if (count_wait(&e->settled[k], e->after_new[k], waited) < 0) {
                return -1;
            }
        }
    }
    int power = 0;
    while (power < SBE_SIZES - 1 && bytes >> (power + 1)) power++;
    e->size_count[power]++;
    e->size_sum[power] += bytes;
    e->after_new[SBE_SACK] = rtxq_sack;
    e->after_new[SBE_NR] = rtxq_nr;
    if (!e->sent_new) e->first_new_ns = now_ns;
    e->new_at_ns = now_ns;
    e->sent_new = 1;
    e->acks = 0;
    e->gap_seen = 0;
    return 0;
}

void sbe_freeing_ack(sbe_t *e, int gap_open, int64_t now_ns) {
    if (!e->sent_new) return;
    e->acks++;
    e->freed_at_ns = now_ns;
    e->gap_seen |= gap_open;
    e->gap_ever |= gap_open;
}

/* Waits whose level is in [lo, hi]. */
static uint64_t waits_within(const sbe_levels_t *l, uint64_t lo, uint64_t hi) {
    uint64_t count = 0;
    for (size_t k = 0; k < l->n; k++)
        if (l->v[k].top >= lo && l->v[k].top <= hi) count += l->v[k].waits;
    return count;
}

static uint64_t median_level(const sbe_levels_t *l) {
    uint64_t seen = 0;
    for (size_t k = 0; k < l->n; k++)
        if ((seen += l->v[k].waits) * 2 >= l->waits) return l->v[k].top;
    return 0;
}

/* Waits within a packet below the level of bin k, the highest of them (a ceiling's or a pile's band); their
 * time in *waited_ns and the ordinal of the band's last wait in *last when given. */
static uint64_t band_waits(const sbe_levels_t *l, size_t k, uint64_t packet, uint64_t *waited_ns, uint64_t *longest_ns,
                           uint64_t *last) {
    uint64_t x = l->v[k].top, floor = x > packet ? x - packet : 0, count = 0, ns = 0, longest = 0, latest = 0;
    for (size_t j = k + 1; j-- > 0 && l->v[j].top >= floor;) {
        count += l->v[j].waits;
        ns = add_saturating(ns, l->v[j].wait_ns);
        if (l->v[j].longest_ns > longest) longest = l->v[j].longest_ns;
        if (l->v[j].last > latest) latest = l->v[j].last;
    }
    if (waited_ns) *waited_ns = ns;
    if (longest_ns) *longest_ns = longest;
    if (last) *last = latest;
    return count;
}

/* The most waits within a packet below one level, of the levels under `limit`. */
static uint64_t fullest_band_under(const sbe_levels_t *l, uint64_t limit, uint64_t packet) {
    uint64_t most = 0, count = 0;
    size_t lowest = 0;  /* the band of bin j: the bins from `lowest` to j, a packet below its level at most */
    for (size_t j = 0; j < l->n && l->v[j].top < limit; j++) {
        count += l->v[j].waits;
        while (l->v[lowest].top + packet < l->v[j].top) count -= l->v[lowest++].waits;
        if (count > most) most = count;
    }
    return most;
}

/* A ceiling: the highest level x with at least `percent` % of the waits of `l` within a packet below it, at
 * most 10 % above it (excursions in loss recovery), and more than any band of a packet below it: a buffer
 * counted in payload (usrsctp), or a writer woken as soon as a packet's room is free, piles its waits at its
 * level, the most common; a window growing a packet per round trip between losses (Reno, CUBIC) spends its
 * waits on the way up, so its highest band is the end of a slope that holds more further down. r->packet
 * set; fills r, sets *after to the waits of `l` after the band's last one, and returns 1 when found. */
static int find_ceiling(const sbe_levels_t *l, unsigned percent, sbe_result_t *r, sbe_why_t why, uint64_t *after) {
    uint64_t above = 0;
    for (size_t k = l->n; k-- > 0;) {
        if (above * 10 > l->waits) break;
        uint64_t x = l->v[k].top, last, count = band_waits(l, k, r->packet, NULL, NULL, &last);
        if (count >= SBE_MIN_WAITS && count * 100 >= percent * l->waits &&
            count > fullest_band_under(l, x > r->packet ? x - r->packet : 0, r->packet)) {
            *after = l->waits - last;
            r->verdict = SBE_HELD_BACK;
            r->why = why;
            r->sndbuf = r->high = x;
            /* blocked down to SBE_CEILING_BAND packets below: a writer resumes when a few packets' room is
             * free, and the RtxQ after each burst lands within them */
            r->low = x > SBE_CEILING_BAND * r->packet ? x - SBE_CEILING_BAND * r->packet : 0;
            r->at_ceiling = count;
            r->above = above;
            return 1;
        }
        above += l->v[k].waits;
    }
    return 0;
}

/* The most waits within one packet below a level with at most a quarter of the waits above it: where a
 * buffer's waits would pile (above it only loss recovery and transients; a pile with more above is a
 * window's, which moves). */
static uint64_t fullest_band(const sbe_levels_t *l, uint64_t packet) {
    uint64_t most = 0, above = 0;
    for (size_t k = l->n; k-- > 0 && above * 4 <= l->waits;) {
        uint64_t count = band_waits(l, k, packet, NULL, NULL, NULL);
        if (count > most) most = count;
        above += l->v[k].waits;
    }
    return most;
}

/* A ceiling the sender left for good, with as many waits after its last one (all at lower levels) as at it, and
 * no loss recovery in the whole flow: a buffer-limited sender without loss has no cause to send less than its
 * buffer holds, so what held it lower afterwards was a window that shrank with no loss (BBR's model of the path),
 * and such a window may have set the ceiling too (the lab's BBR with GSO: the kernel's cwnd at 2 BDP, a 64 KB
 * skb unsent behind it). Cannot tell. */
static void left_for_good(const sbe_t *e, uint64_t after, sbe_result_t *r) {
    if (e->gap_ever || after < r->at_ceiling) return;
    r->verdict = SBE_CANNOT_TELL;
    r->why = SBE_LEFT_CEILING;
    r->sndbuf = 0;
}

void sbe_decide(const sbe_t *e, int nr, int data_level, sbe_result_t *r) {
    const sbe_levels_t *all = &e->all[nr ? SBE_NR : SBE_SACK], *held = &e->held[nr ? SBE_NR : SBE_SACK];
    memset(r, 0, sizeof *r);
    r->waits = all->waits;
    r->long_waits = held->waits;
    r->verdict = SBE_CANNOT_TELL;
    int usual = 0;  /* the usual packet: the mean size of the most common power of two */
    for (int k = 1; k < SBE_SIZES; k++)
        if (e->size_count[k] > e->size_count[usual]) usual = k;
    if (e->size_count[usual]) r->packet = e->size_sum[usual] / e->size_count[usual];
    if (!e->sent_new || !r->packet) {
        r->why = SBE_NO_DATA;
        return;
    }
    if (!all->waits) {  /* the sender never waited for an ack before sending new data */
        r->verdict = SBE_NEVER;
        r->why = SBE_ONE_FLIGHT;
        return;
    }
    if (all->waits < SBE_MIN_WAITS) {
        r->why = SBE_FEW_WAITS;
        return;
    }
    if (data_level) {  /* on the lab's MPTCP and CMT runs the rules below were as often wrong as right */
        r->why = SBE_DATA_LEVEL;
        return;
    }
    uint64_t after;
    if (find_ceiling(all, 30, r, SBE_CEILING, &after)) {
        left_for_good(e, after, r);
        return;
    }
    /* Long waits, 4 % of the waits or more, two thirds of them within 15 % of their median level: a writer
     * woken only once enough room is free (Linux: sk_stream_write_space), at the buffer's level. */
    if (held->waits >= SBE_MIN_WAITS / 2 && held->waits * 25 >= all->waits) {
        uint64_t m = median_level(held), near = waits_within(held, m - m * 15 / 100, m + m * 15 / 100);
        if (near * 3 >= held->waits * 2) {
            r->verdict = SBE_HELD_BACK;
            r->why = SBE_LONG_WAITS;
            r->sndbuf = m;
            r->low = m - m / 10;  /* blocked within 10 %: the band the long waits cluster in, narrowed */
            r->high = m + m / 10;
            r->at_ceiling = near;
            return;
        }
    }
    /* A transient above the buffer before it settled (Linux with GSO: the tail skb filled up to 64 KB while
     * the buffer is checked only before a new one, tcp_sendmsg_locked in net/ipv4/tcp.c): a ceiling over the
     * waits after the one at the highest level, when they are half the waits or more; with the transient
     * set aside, half of them at the ceiling (a window of a few packets also has a most common top level). */
    const sbe_levels_t *settled = &e->settled[nr ? SBE_NR : SBE_SACK];
    if (settled->waits * 2 >= all->waits && find_ceiling(settled, 50, r, SBE_SETTLED_CEILING, &after)) {
        left_for_good(e, after, r);
        return;
    }
    if (held->waits * 50 <= all->waits) {  /* (almost) every wait ended at the first acks */
        r->verdict = SBE_NEVER;
        r->why = SBE_ANSWERED;
        return;
    }
    /* A writer held back by its buffer resumes either as soon as a packet fits (its waits pile at the
     * buffer's level) or once a good part of the buffer is free (deep waits). Neither: no band of a packet
     * with at most a quarter of the waits above it holds a fifth of them (two thirds of a ceiling's share),
     * and at most 2 % were deep above the median level. A full buffer is the top of the waits (above it only
     * loss recovery and transients), so a deep wait that began where half of the waits reached as high began
     * with room left: BBR pacing its first round trips, the initial window's acks arriving in a burst. */
    uint64_t median = median_level(all);
    r->deep_waits = waits_within(&e->deep[nr ? SBE_NR : SBE_SACK], (median / SBE_BIN + 1) * SBE_BIN, UINT64_MAX);
    uint64_t fullest = fullest_band(all, r->packet);
    r->at_ceiling = fullest;
    if (r->deep_waits * 50 <= all->waits && fullest * 5 < all->waits) {
        r->verdict = SBE_NEVER;
        r->why = SBE_NO_PILE;
        return;
    }
    r->why = SBE_UNSETTLED;
}

int sbe_blocked(const sbe_result_t *r, uint64_t rtxq_after_new, uint64_t rtxq_now, int gap_open, int before_last_new) {
    if (r->verdict != SBE_HELD_BACK || !before_last_new || rtxq_after_new < r->low) return 0;
    if ((r->level == SBE_LEVEL_MPTCP || r->level == SBE_LEVEL_PACED) && rtxq_now < rtxq_after_new) return 0;
    /* above a ceiling in loss recovery: merged skbs let a full buffer hold more payload. Long waits' band
     * spans a tenth either side of their level already; in the lab's GSO runs the buffer held unsent data
     * whenever the RtxQ was beyond it in loss recovery */
    return rtxq_after_new <= r->high || (gap_open && r->why != SBE_LONG_WAITS);
}

/* CMT: usrsctp counts the association's whole queue in payload against its buffer, so the RtxQ never
 * exceeds the buffer and a buffer full of sent data is the highest level: the writer was held back at most
 * as long as the waits that began within `packets` packets of the highest level lasted to their last freeing
 * acks (MPTCP alike). A twentieth of the span of the waits (first to last new data) or more: held back there (a window stalls at its peak but briefly,
 * for the new data after a loss rises above it); less: never (b is below a twentieth); no span (frames
 * without time): cannot tell. A twentieth or more only with the longest wait: cannot tell, for a window-limited
 * sender's timeout at its peak (the lab's usrsctp at 51,000 of 65,536) waits there as long as a full buffer, and
 * a window that peaks there briefly now and then adds waits of an ack's time (the CI's run: 12 waits at 48,000);
 * the level the sender kept returning to shows its time in the other waits too. */
static void top_of_association(const sbe_t *e, int nr, uint64_t packets, sbe_result_t *r) {
    const sbe_levels_t *all = &e->all[nr ? SBE_NR : SBE_SACK];
    size_t k = all->n - 1;  /* waits were counted: the highest bin */
    uint64_t x = all->v[k].top, waited = 0, longest = 0, band = packets * r->packet,
             span = e->new_at_ns > e->first_new_ns ? (uint64_t)e->new_at_ns - (uint64_t)e->first_new_ns : 0,
             twentieth = span / 20 + (span % 20 != 0);  /* waited < twentieth: waited * 20 < span, which may not fit */
    r->at_ceiling = band_waits(all, k, band, &waited, &longest, NULL);
    r->above = 0;
    r->deep_waits = 0;
    r->high = x;
    r->low = x > band ? x - band : 0;
    if (!span) {  /* frames without time, or a clock set back: no twentieth to read */
        r->verdict = SBE_CANNOT_TELL;
        r->why = SBE_PATHS_UNTIMED;
        r->sndbuf = 0;
    } else if (waited < twentieth) {
        r->verdict = SBE_NEVER;
        r->why = SBE_PATHS_TOP_BRIEF;
        r->sndbuf = 0;
    } else if (waited - longest < twentieth) {
        r->verdict = SBE_CANNOT_TELL;
        r->why = SBE_PATHS_TOP_ONCE;
        r->sndbuf = 0;
    } else {
        r->verdict = SBE_HELD_BACK;
        r->why = SBE_PATHS_TOP_HELD;
        r->sndbuf = x;
    }
}

void sbe_decide_paths(const sbe_t *e, int nr, sbe_paths_t paths, sbe_result_t *r) {
    sbe_decide(e, nr, paths == SBE_A_PATH_OF_SEVERAL, r);
    if (paths == SBE_TCP_CONNECTION) {
        /* A paced TCP sender (BBR, fq) sends what the writer copied once an ack freed room only when its
         * pacing timer fires (net/ipv4/tcp_output.c tcp_pacing_check, tcp_wstamp_ns from sk_pacing_rate): the
         * writer was blocked until that ack, the wire shows its data later. An unpaced one sends at the ack or
         * the woken writer's copy, and Linux frees a GSO skb's room only bit by bit (tcp_trim_head) while a
         * write needs sk_stream_memory_free: its writer may stay blocked after a freeing ack, so blocked keeps
         * ending at the new data. Not SCTP: usrsctp's writer sends its own data, so a late one was late to
         * copy too (decisions.md, "A paced TCP sender is blocked until the ack that frees room"). */
        if (r->verdict == SBE_HELD_BACK && e->ended_paced * 2 >= e->ended) r->level = SBE_LEVEL_PACED;
        return;
    }
    if (paths <= SBE_A_PATH_OF_SEVERAL || r->why == SBE_ONE_FLIGHT || r->why == SBE_NO_DATA ||
        r->why == SBE_FEW_WAITS)
        return;
    if (paths == SBE_CMT_ASSOCIATION) {
        r->level = SBE_LEVEL_CMT;
        if (r->why != SBE_CEILING) top_of_association(e, nr, SBE_CEILING_BAND, r);
        return;
    }
    /* MPTCP. The connection's buffer counts payload (mptcp_sendmsg, net/mptcp/protocol.c, charges each
     * write's bytes and a small header per page fragment), so a buffer full of sent data is the highest level,
     * as CMT's, and a writer that copies as soon as any room is free ends its waits at the first ack, as
     * usrsctp's: the highest level's time tells, over two packets (a write is copied whole once any room is
     * free, so the highest level overshoots B by up to one; B - rtxq < S holds a packet below B). What the
     * writer copies after an ack freed room may wait unsent in the connection or a subflow's queue, which the
     * wire does not show: blocked ends at that ack, not at the new data. */
    r->level = SBE_LEVEL_MPTCP;
    top_of_association(e, nr, SBE_MPTCP_BAND, r);
}

void sbe_vantage(sbe_result_t *r, int by_sender) {
    if (by_sender || r->why == SBE_ONE_FLIGHT) return;  /* data seen before any ack left before it, anywhere */
    r->verdict = SBE_CANNOT_TELL;
    r->why = SBE_NOT_BY_SENDER;
}

/* The connection level whose highest RtxQ top_of_association read, as its reasons name it. */
typedef struct {
    const char *name, *ack, *whose;
} sbe_level_words_t;

int sbe_reason(const sbe_result_t *r, const char *vantage, char *buf, size_t n) {
    uint64_t waits = r->waits, long_waits = r->long_waits, at = r->at_ceiling, low = r->low, high = r->high,
             deep = r->deep_waits;
    static const sbe_level_words_t cmt = {"CMT", "an ack", "association's"},
                                   mptcp = {"MPTCP", "a data-level ack", "connection's"};
    const sbe_level_words_t *level = r->level == SBE_LEVEL_MPTCP ? &mptcp : &cmt;
    switch (r->why) {
    case SBE_CEILING:
        return snprintf(buf, n, "%" PRIu64 " of %" PRIu64 " waits for an ack began at an RtxQ of %" PRIu64 "-%" PRIu64 " bytes, %" PRIu64 " above", at,
                        waits, low, high, r->above);
    case SBE_LONG_WAITS:
        return snprintf(buf, n, "%" PRIu64 " of %" PRIu64 " waits for an ack outlasted %d acks, %" PRIu64 " of them at an RtxQ of %" PRIu64 "-%" PRIu64 " bytes",
                        long_waits, waits, SBE_LONG_WAIT, at, low, high);
    case SBE_ONE_FLIGHT: return snprintf(buf, n, "all new data left before an ack freed room");
    case SBE_ANSWERED:
        return snprintf(buf, n, "%" PRIu64 " of %" PRIu64 " waits for an ack ended within %d acks, at no ceiling", waits - long_waits,
                        waits, SBE_LONG_WAIT - 1);
    case SBE_NO_DATA: return snprintf(buf, n, "no new data");
    case SBE_FEW_WAITS: return snprintf(buf, n, "too short: %" PRIu64 " waits for an ack, %d needed", waits, SBE_MIN_WAITS);
    case SBE_UNSETTLED:
        return snprintf(buf, n,
                        "%" PRIu64 " of %" PRIu64 " waits for an ack outlasted %d acks, at no settled RtxQ; %" PRIu64 " of them above the "
                        "median RtxQ until a quarter of their RtxQ was acked, up to %" PRIu64 " within a packet of one RtxQ",
                        long_waits, waits, SBE_LONG_WAIT, deep, at);
    case SBE_DATA_LEVEL:
        return snprintf(buf, n, "a path of data over several paths (MPTCP, CMT): the buffer they share holds the "
                                "connection's data, see its entry");
    case SBE_PATHS_UNTIMED:
        return snprintf(buf, n,
                        "%s: %" PRIu64 " of %" PRIu64 " waits for %s began at the highest RtxQ, %" PRIu64 "-%" PRIu64
                        " bytes, but the capture's clock gives the waits no span to time them in",
                        level->name, at, waits, level->ack, low, high);
    case SBE_PATHS_TOP_ONCE:
        if (at < 2)
            return snprintf(buf, n,
                            "%s: only one wait at the highest RtxQ, %" PRIu64 "-%" PRIu64 " bytes, of %" PRIu64
                            ", took a twentieth of the time or more: a window's timeout at its peak waits as long as a "
                            "full buffer",
                            level->name, low, high, waits);
        return snprintf(buf, n,
                        "%s: %" PRIu64 " of %" PRIu64 " waits for %s began at the highest RtxQ, %" PRIu64 "-%" PRIu64
                        " bytes, and took a twentieth of the time or more only with the longest: a window's timeout "
                        "at its peak waits as long as a full buffer",
                        level->name, at, waits, level->ack, low, high);
    case SBE_PATHS_TOP_BRIEF:
    case SBE_PATHS_TOP_HELD:
        return snprintf(buf, n,
                        "%s: %" PRIu64 " of %" PRIu64 " waits for %s began at the highest RtxQ, %" PRIu64 "-%" PRIu64 " bytes, and took %s: "
                        "the %s buffer counts payload, so %s",
                        level->name, at, waits, level->ack, low, high,
                        r->why == SBE_PATHS_TOP_HELD ? "a twentieth of the time or more" : "less than a twentieth of the time",
                        level->whose, r->why == SBE_PATHS_TOP_HELD ? "it was full there" : "only there could it be full");
    case SBE_SETTLED_CEILING:
        return snprintf(buf, n,
                        "%" PRIu64 " of the %" PRIu64 " waits for an ack began at an RtxQ of %" PRIu64 "-%" PRIu64 " bytes, %" PRIu64 " above, after a "
                        "transient at a higher RtxQ",
                        at, waits, low, high, r->above);
    case SBE_NO_PILE:
        return snprintf(buf, n,
                        "at most %" PRIu64 " of %" PRIu64 " waits for an ack began within a packet of one RtxQ, and %" PRIu64 " above the "
                        "median RtxQ lasted until a quarter of their RtxQ was acked: no sign of a full buffer",
                        at, waits, deep);
    case SBE_NOT_BY_SENDER: return snprintf(buf, n, "the capture is not by the sender (vantage %s)", vantage);
    case SBE_LEFT_CEILING:
        return snprintf(buf, n,
                        "%" PRIu64 " of %" PRIu64 " waits for an ack began at an RtxQ of %" PRIu64 "-%" PRIu64 " bytes, then as many "
                        "lower with no loss: a window that shrank held it lower, and may have held it there",
                        at, waits, low, high);
    }
    return snprintf(buf, n, "?");
}
