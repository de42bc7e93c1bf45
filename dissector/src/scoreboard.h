/* Scoreboard of one sender direction: interval sets over unwrapped 64-bit sequence space.
 * Units are bytes (TCP, MPTCP data level) or TSNs (SCTP, each TSN weighted by its payload size). */
#ifndef NRSACK_SCOREBOARD_H
#define NRSACK_SCOREBOARD_H

#include <glib.h>

typedef struct {
    guint64 lo, hi; /* [lo, hi) */
} ival_t;

/* Sorted, disjoint, non-adjacent intervals. */
typedef struct {
    ival_t *v;
    guint n, cap;
} iset_t;

void iset_add(iset_t *s, guint64 lo, guint64 hi);
void iset_trim_below(iset_t *s, guint64 x);
gboolean iset_overlaps(const iset_t *s, guint64 lo, guint64 hi);
gboolean iset_covers(const iset_t *s, guint64 lo, guint64 hi);

/* Maps SCTP TSNs to payload bytes: off[i] = bytes of TSNs base .. base+i-1. */
typedef struct {
    guint64 base;
    guint64 *off;
    guint n, cap;
} tsn_sizes_t;

typedef struct {
    gboolean tsn_units;  /* SCTP */
    gboolean anchored;   /* ref holds a real value */
    guint64 ref;         /* highest unwrapped number seen, reference for unwrapping */
    gboolean cum_known;
    guint64 cum;         /* highest cumulative ack: first unit not cum-acked */
    guint64 snd_max;     /* end of the highest unit sent */
    iset_t sent;         /* first transmissions seen, above cum */
    iset_t sacked;       /* gap-acked (R or NR), sticky, above cum */
    iset_t nracked;      /* reported non-renegable, sticky, above cum */
    tsn_sizes_t sizes;
} scoreboard_t;

typedef struct {
    guint64 rtxq_sack, nr_acked, sacked, rtxq_nr, rtxq_whatif;
} sb_figures_t;

/* How far above the oldest unacked TSN a new TSN may lie: bounds the TSN -> bytes table (8 MiB). */
#define SB_TSN_WINDOW (1u << 20)

typedef struct {
    gboolean out_of_window; /* a TSN too far from the others (corrupt input): not analysed */
    guint64 new_bytes;      /* first-transmission bytes */
    gboolean below_cum;     /* part of it was cum-acked before */
    gboolean was_nracked;   /* part of it was NR-acked before */
} sb_data_result_t;

#define SB_MAX_REPORTED 16
typedef struct {
    gboolean stale;             /* cum below the highest seen (NR-07) */
    gboolean beyond_sent;       /* cum or a block covers units never sent (NR-09) */
    guint64 freed_bytes;        /* newly non-renegable bytes above the cum ack */
    gboolean gap_open;
    guint n_revoked;            /* revoked intervals (first SB_MAX_REPORTED kept) */
    ival_t revoked[SB_MAX_REPORTED];
} sb_ack_result_t;

void sb_init(scoreboard_t *sb, gboolean tsn_units);
guint64 sb_unwrap(scoreboard_t *sb, guint32 v);
guint64 sb_unwrap64(scoreboard_t *sb, guint64 v); /* 64-bit numbers only anchor */
void sb_data(scoreboard_t *sb, guint64 lo, guint64 hi, guint32 tsn_size, sb_data_result_t *res);
/* Which NR-acked units above the cum ack a later (non-stale) ack must still report (docs/decisions.md 16). */
typedef enum {
    REVOKE_NONE,     /* this ack says nothing about non-renegable data (SCTP SACK) */
    REVOKE_ALL,      /* every one (SCTP NR-SACK: no room limit) */
    REVOKE_IN_SPAN,  /* those inside its R blocks or inside the span of its NR blocks (TCP, MPTCP) */
} sb_revoke_t;

/* r and nr may be unsorted or overlapping (malformed input). */
void sb_ack(scoreboard_t *sb, guint64 cum, const ival_t *r, guint n_r, const ival_t *nr, guint n_nr,
            sb_revoke_t revoke, sb_ack_result_t *res);
/* Units known received above the cum ack without being reported as a block (MPTCP: DSNs a subflow ack
 * covers, docs/decisions.md 12): sacked, clipped to the data sent; no revocation, no NR. */
void sb_received(scoreboard_t *sb, const ival_t *r, guint n_r);
void sb_figures(const scoreboard_t *sb, sb_figures_t *f);
guint64 sb_bytes(const scoreboard_t *sb, guint64 lo, guint64 hi);

#endif
