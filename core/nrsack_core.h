/* SPDX-License-Identifier: GPL-2.0-or-later */
/* nrsack's scoreboard core: one sender direction's state machine (docs/scoreboard.md), in plain C11
 * (no Python, no Wireshark headers; the allocator is the build's, see "Memory" below), compiled into
 * the C plugin (CMake) and into the analyzer's extension (setuptools). The Lua plugin translates it
 * line by line with the same names; the simulator keeps its own engines on purpose (the independent
 * oracle).
 *
 * Units are bytes (TCP, MPTCP data level) or TSNs (SCTP: each TSN weighs the payload bytes of its
 * first captured transmission). Serials are 64-bit unwrapped sequence numbers; every figure is kept
 * as the state changes, so reading one costs nothing.
 *
 * Functions that allocate return 0, or -1 when memory ran out (the state is then unchanged or only
 * partly updated and must be freed); callers raise or mark that, they never go on silently.
 *
 * Memory: the core allocates only through core_realloc(p, size) (NULL p: a new block; NULL result: out
 * of memory) and core_free(p), which each build defines in its own nrsack_core_alloc.h on its include
 * path: the analyzer's extension maps them to the C library (analyzer/), the Wireshark plugin to GLib
 * (dissector/src/), since Wireshark code must not call malloc, realloc or free. */
#ifndef NRSACK_CORE_H
#define NRSACK_CORE_H

#include <stddef.h>
#include <stdint.h>

/* ---- serial numbers (docs/scoreboard.md "Units and serial numbers") ---- */

/* The anchor sits at 2^32 + its 32-bit value, so serials a little below it stay positive. */
#define SERIAL_ORIGIN ((uint64_t)1 << 32)
/* A 32-bit value that unwraps further than this from the highest serial seen (the largest TCP
 * window, scale 14) is not adopted unless the next far value agrees with it (a real jump). */
#define SERIAL_FAR ((uint64_t)1 << 30)

typedef struct {
    int anchored;        /* highest holds a real value */
    uint64_t highest;    /* highest serial seen: the reference of the unwrapping rule */
    int candidate_set;   /* a far value waits for confirmation */
    uint64_t candidate;
} serial_space_t;

enum { SERIAL_OK = 0, SERIAL_FAR_AWAY = 1 };

/* The handshake's initial number (INIT / INIT-ACK initial TSN, SYN ISN + 1, MPTCP IDSN's low 32
 * bits) anchors the space; called before any unwrap, or it only fixes the reference again. */
void serial_anchor(serial_space_t *s, uint32_t initial);
/* v -> the 64-bit serial nearest to the highest seen (RFC 1982 distance). Returns SERIAL_FAR_AWAY,
 * leaving *out set but the reference unchanged, when v lands more than SERIAL_FAR away and no
 * earlier far value agrees with it: the caller feeds nothing and reports it (GEN-01 / decisions 33). */
int serial_unwrap(serial_space_t *s, uint32_t v, uint64_t *out);
/* v -> the 64-bit serial nearest to reference, without state: block edges next to their ack. */
uint64_t serial_near(uint64_t reference, uint32_t v);
/* Wire values 64 bits wide (MPTCP DSN / DATA ACK in 8-octet form, made relative by the caller so they
 * stay below 2^63) are taken as they are, under serial_unwrap's far guard and return values. One at
 * or above SERIAL_WIDE_LIMIT is far away and never a candidate: no data level spans 2^53 bytes from
 * its first number, and the Lua twin's doubles hold serials exactly only below it (decisions 70). */
#define SERIAL_WIDE_LIMIT ((uint64_t)1 << 53)
int serial_take64(serial_space_t *s, uint64_t v, uint64_t *out);

/* ---- interval sets ---- */

typedef struct { uint64_t lo, hi; } ival_t; /* [lo, hi) */

/* Sorted, disjoint, non-touching intervals, with their units and weight kept as they change. */
typedef struct {
    ival_t *v;
    size_t n, cap;
    uint64_t units;   /* serials covered */
    uint64_t weight;  /* bytes covered (TSN mode: the TSNs' sizes) */
} iset_t;

/* TSN -> the payload bytes of its first captured transmission, for TSNs in the window (from the
 * lowest outstanding one; grows downwards too, for TSNs that arrive below the first one seen). */
typedef struct {
    uint64_t base;
    uint32_t *size;   /* size[i]: TSN base + i; 0 = not seen */
    size_t n, cap;
} weights_t;

/* How far above the oldest unacked TSN (or, before any ack, the lowest seen) a TSN may lie. */
#define SB_TSN_WINDOW ((uint64_t)1 << 20)

/* Interval set and weights operations (iset.c). A NULL weights_t means byte units (a unit weighs 1). */
uint64_t weights_sum(const weights_t *w, uint64_t lo, uint64_t hi);  /* bytes of [lo, hi) */
int weights_set(weights_t *w, uint64_t unit, uint32_t size);
void weights_drop_below(weights_t *w, uint64_t cut);
void weights_free(weights_t *w);
int weights_copy(weights_t *dst, const weights_t *src);

void iset_free(iset_t *s);
int iset_copy(iset_t *dst, const iset_t *src);
/* Adds [lo, hi); *added_weight (may be NULL) gets the weight newly covered. */
int iset_add(iset_t *s, uint64_t lo, uint64_t hi, const weights_t *w, uint64_t *added_weight);
/* Adds the sorted, disjoint intervals v (ivals_normalize's output): a merge walk when there are many. */
int iset_union(iset_t *s, const ival_t *v, size_t n, const weights_t *w, uint64_t *added_weight);
/* Drops every unit below cut; returns the weight dropped. */
uint64_t iset_trim_below(iset_t *s, uint64_t cut, const weights_t *w);
int iset_overlaps(const iset_t *s, uint64_t lo, uint64_t hi);
int iset_covers(const iset_t *s, uint64_t lo, uint64_t hi);
/* Sorts v by lo and merges overlapping or touching intervals, dropping empty ones: returns the new count. */
size_t ivals_normalize(ival_t *v, size_t n);
/* Appends [lo, hi) to s used as a plain vector (no merge; its units and weight are not kept). */
int iset_append(iset_t *s, uint64_t lo, uint64_t hi);
/* Appends to out (used as a plain vector: its units and weight are not kept) s's parts inside the
 * sorted intervals v, in order. */
int iset_clip(const iset_t *s, const ival_t *v, size_t n, iset_t *out);

/* ---- the scoreboard ---- */

typedef struct {
    int tsn_units;          /* SCTP */
    serial_space_t space;   /* this direction's sequence space (data serials and acks about them) */
    int have_data, cum_known;
    uint64_t cum;           /* first unit not cum-acked; never moves backwards */
    uint64_t snd_max;       /* end of the highest unit sent */
    uint64_t lowest;        /* lowest serial sent: the anchor without a handshake */
    iset_t sent;            /* transmitted at least once, at or above cum */
    iset_t sacked;          /* reported in an R or NR block, sticky above cum */
    iset_t nracked;         /* reported non-renegable, sticky above cum */
    weights_t weights;      /* TSN mode only */
    int gap_open;           /* the last non-stale ack reported a block above its cum */
    int news_known;
    uint64_t news_path;     /* the path of the last non-stale ack that told something new */
    uint64_t data_bytes;    /* first transmissions' bytes since the start */
    uint64_t acked_bytes;   /* of those, the bytes cum-acked */
    iset_t last_revoked;    /* every interval the last ack revoked (the facts keep the first few) */
    iset_t work[4];         /* sb_ack's scratch vectors, kept to spare allocations */
} scoreboard_t;

typedef struct {
    int out_of_window;      /* too far from the oldest unacked unit: fed nothing (GEN-01) */
    int below_cum;          /* part of it was cum-acked before (NR-04 / TN-04 / MN-04) */
    int was_nracked;        /* part of it was NR-acked before */
    int retransmission;     /* no part of it was new */
    uint64_t new_units, new_bytes;
} sb_data_facts_t;

/* Which NR-acked units above the cum ack a later, non-stale ack must still report (decisions 16). */
typedef enum {
    REVOKE_NONE,     /* says nothing about non-renegable data (SCTP SACK, TCP SACK) */
    REVOKE_ALL,      /* every one (SCTP NR-SACK) */
    REVOKE_IN_SPAN,  /* those inside its R blocks or inside the span of its NR blocks (TCP, MPTCP) */
} sb_revoke_t;

#define SB_MAX_REPORTED 16
typedef struct {
    int stale;                  /* cum below the state's (NR-07): only the blocks' union applies */
    int older;                  /* maybe sent before an ack already seen: same cum, nothing new, another
                                   path than the last news (decisions 46); judges no revocation */
    int beyond_sent;            /* after some data: cum or a block ends beyond snd_max (NR-09) */
    int r_and_nr;               /* a unit in both an R and an NR block of this ack (NR-02) */
    int gap_open;
    uint64_t freed_units, freed_bytes; /* reported non-renegable for the first time */
    uint64_t acked_units;       /* cum advance, in units (0 for the first ack) */
    size_t n_revoked;           /* revoked intervals: they stay in nracked (first SB_MAX_REPORTED kept) */
    uint64_t revoked_units;
    ival_t revoked[SB_MAX_REPORTED];
} sb_ack_facts_t;

typedef struct {
    uint64_t rtxq_sack;    /* weight of sent */
    uint64_t sacked;       /* weight of sacked */
    uint64_t nr_acked;     /* weight of nracked */
    uint64_t rtxq_nr;      /* rtxq_sack - nr_acked */
    uint64_t rtxq_whatif;  /* rtxq_sack - sacked */
    uint64_t units_sack, units_sacked, units_nr; /* the same three sets in units */
} sb_figures_t;

void sb_init(scoreboard_t *sb, int tsn_units);
void sb_free(scoreboard_t *sb);
/* dst becomes a copy of src (keep_data 0: only the ack state, cum and gap_open: a path that has not
 * sent yet). dst must be freed or never used. */
int sb_copy(scoreboard_t *dst, const scoreboard_t *src, int keep_data);

/* A transmission of [lo, hi): TCP / MPTCP bytes, or one TSN [tsn, tsn + 1) weighing tsn_size. */
int sb_data(scoreboard_t *sb, uint64_t lo, uint64_t hi, uint32_t tsn_size, sb_data_facts_t *f);
/* A SACK / NR-SACK / TCP SACK and NR options / MPTCP DSS: blocks may be unsorted or overlapping.
 * path: any id equal for the acks of one path (CMT: address pair, MPTCP: subflow; one path: 0). */
int sb_ack(scoreboard_t *sb, uint64_t cum, const ival_t *r, size_t n_r, const ival_t *nr, size_t n_nr,
           sb_revoke_t revoke, uint64_t path, sb_ack_facts_t *f);
/* Units known received above cum without a block (MPTCP subflow acks, decisions 12). */
int sb_received(scoreboard_t *sb, const ival_t *r, size_t n_r);

void sb_figures(const scoreboard_t *sb, sb_figures_t *f);
/* metrics.md: B - rtxq < S, with rtxq_nr when NR-SACK is in use (decisions 7), else rtxq_sack. */
int sb_blocked(const sb_figures_t *f, uint64_t sndbuf, uint64_t full_packet, int nr_in_use);
/* Bytes of [lo, hi) (TSN mode: the sizes of the TSNs in the window). */
uint64_t sb_bytes(const scoreboard_t *sb, uint64_t lo, uint64_t hi);

/* ---- the send buffer from the capture (docs/metrics.md, "Estimating B") ----
 * A sender held back by a buffer full of sent data has nothing unsent: after its last new data it waits
 * for acks to free room, and the waits begin at the same RtxQ, the buffer's size in payload. Where the
 * stack wakes the writer only once enough is free (Linux: a third of the buffer), a wait also outlasts
 * several acks that freed room, which a sender limited by its congestion window answers at once. sbe_*
 * keeps, per semantics (SACK, NR), the RtxQ at the start of each wait for an ack that ended in new data
 * (after the last new data the writer is done: no wait), in bins of SBE_BIN bytes, all waits and apart
 * those that outlasted SBE_LONG_WAIT freeing acks outside loss recovery; sbe_decide reads B from them, or
 * says why it cannot. */
enum { SBE_SACK, SBE_NR, SBE_BIN = 64, SBE_MIN_WAITS = 16, SBE_LONG_WAIT = 3, SBE_SIZES = 33, SBE_CEILING_BAND = 1,
       SBE_MPTCP_BAND = 2 };  /* the packets below the highest level an MPTCP data level is blocked down to */
/* A wait ended paced: its new data left this long or more after the last ack that freed room (a sender that
 * answers an ack does so from the ack's processing or the woken writer's copy, tens of µs; a paced one when its
 * pacing timer fires, a packet's time at the pacing rate: net/ipv4/tcp_output.c tcp_pacing_check) */
#define SBE_PACED_NS 50000
/* top: the highest RtxQ seen in the bin; wait_ns: the waits' time, each from its new data to its last freeing ack;
 * longest_ns: the longest of them; last: the ordinal of its last wait in its levels */
typedef struct { uint64_t bin, waits, top, wait_ns, longest_ns, last; } sbe_bin_t;
typedef struct { sbe_bin_t *v; size_t n, cap; uint64_t waits; } sbe_levels_t;
typedef struct {
    sbe_levels_t all[2], held[2];    /* every wait; the waits that outlasted SBE_LONG_WAIT freeing acks */
    sbe_levels_t settled[2];         /* the waits after the one at the highest level yet (a transient above ends there) */
    uint64_t record[2];              /* the highest level yet */
    sbe_levels_t deep[2];            /* long waits that lasted until a quarter of their level was acked */
    uint64_t after_new[2];           /* the RtxQ after the last new data */
    int64_t first_new_ns, new_at_ns; /* capture times of the first and the last new data */
    int64_t freed_at_ns;             /* capture time of the last ack that freed room */
    uint64_t ended, ended_paced;     /* waits that ended in new data; of them, SBE_PACED_NS or more after the ack */
    uint64_t size_count[SBE_SIZES], size_sum[SBE_SIZES];  /* new data per packet, by power of two */
    uint32_t acks;                   /* freeing acks since the last new data */
    int sent_new;                    /* new data seen */
    int gap_seen;                    /* a gap open since the last new data */
    int gap_ever;                    /* a freeing ack with a gap open seen: loss recovery */
} sbe_t;
typedef enum { SBE_HELD_BACK, SBE_NEVER, SBE_CANNOT_TELL } sbe_verdict_t;
typedef enum {
    SBE_CEILING,      /* held back: 30 % of the waits began within a packet below one level, 10 % above it */
    SBE_LONG_WAITS,   /* held back: long waits, two thirds of them within 15 % of their median level */
    SBE_ONE_FLIGHT,   /* never: all new data left before an ack freed room */
    SBE_ANSWERED,     /* never: no ceiling, and at most 2 % of the waits were long */
    SBE_NO_DATA,      /* cannot tell: no new data */
    SBE_FEW_WAITS,    /* cannot tell: fewer than SBE_MIN_WAITS waits */
    SBE_UNSETTLED,    /* cannot tell: long waits, but at no settled level */
    SBE_DATA_LEVEL,   /* cannot tell: data scheduled over several paths (MPTCP's data level, CMT) */
    SBE_PATHS_TOP_BRIEF,  /* never: CMT or MPTCP, the waits at the highest RtxQ (a payload-counted buffer's only full level) were brief */
    SBE_SETTLED_CEILING,  /* held back: half the waits after the highest level (half the waits or more) within a packet below one level */
    SBE_NO_PILE,      /* never: no level holds a fifth of the waits, and at most 2 % of them were deep above the median level */
    SBE_NOT_BY_SENDER, /* cannot tell: the capture is not by the sender (sbe_vantage) */
    SBE_PATHS_TOP_HELD, /* held back: CMT or MPTCP, the waits at the highest RtxQ took a twentieth of the time or more */
    SBE_PATHS_UNTIMED,  /* cannot tell: CMT or MPTCP, the capture's clock gives the waits no span to read their time in */
    SBE_PATHS_TOP_ONCE, /* cannot tell: CMT or MPTCP, the highest RtxQ's time rests on one wait (a buffer's or a window's peak) */
    SBE_LEFT_CEILING,   /* cannot tell: a ceiling left for good, as many waits after it at lower RtxQs, no loss */
} sbe_why_t;
/* Whose waits a result reads: one path's; a CMT association's; an MPTCP connection's data level; one path's
 * whose sender paces (half its waits or more ended paced: blocked there ends at the first ack that freed room). */
typedef enum { SBE_LEVEL_PATH, SBE_LEVEL_CMT, SBE_LEVEL_MPTCP, SBE_LEVEL_PACED } sbe_level_t;
typedef struct {
    sbe_verdict_t verdict;
    sbe_why_t why;
    uint64_t sndbuf;           /* B (held back), else 0 */
    uint64_t low, high;        /* blocked while the RtxQ after the last new data is in [low, high] (or above, gap open) */
    uint64_t waits, long_waits, at_ceiling, above;  /* the evidence (SBE_NO_PILE, SBE_UNSETTLED: at_ceiling, the fullest band) */
    uint64_t packet;           /* the usual new data per packet */
    uint64_t deep_waits;       /* long waits above the median level that lasted until a quarter of it was acked */
    sbe_level_t level;         /* whose waits: one path's, a CMT association's, an MPTCP data level's (blocked
                                * there ends at the first ack that freed room) */
} sbe_result_t;

void sbe_init(sbe_t *e);
void sbe_free(sbe_t *e);
int sbe_copy(sbe_t *dst, const sbe_t *src);
/* After a first transmission of `bytes` of data at capture time now_ns: the RtxQ of each semantics now.
 * -1: out of memory. */
int sbe_new_data(sbe_t *e, uint64_t rtxq_sack, uint64_t rtxq_nr, uint64_t bytes, int64_t now_ns);
/* After an ack that freed room (moved the cum ack or NR-acked data) at capture time now_ns; gap_open: as of that ack. */
void sbe_freeing_ack(sbe_t *e, int gap_open, int64_t now_ns);
/* The verdict for semantics `nr` (SBE_SACK / SBE_NR). data_level: the waits are those of data scheduled
 * over several paths (MPTCP's data level, a CMT association), whose windows, buffers and scheduler also
 * hold new data back: beyond one flight or too few waits, it cannot tell. */
void sbe_decide(const sbe_t *e, int nr, int data_level, sbe_result_t *r);
/* Who sends the waits sbe_decide_paths reads: one path (sbe_decide's rules); one path of data scheduled
 * over several (the path does not see the buffer they share); an MPTCP connection's data level; an SCTP
 * association whose data took more than one path (CMT); one TCP connection (one path's rules, and a paced
 * sender's blocked ends at the first ack that freed room: level SBE_LEVEL_PACED). */
typedef enum { SBE_ONE_PATH, SBE_A_PATH_OF_SEVERAL, SBE_MPTCP_DATA_LEVEL, SBE_CMT_ASSOCIATION, SBE_TCP_CONNECTION } sbe_paths_t;
/* sbe_decide's verdict, kept where the stack's accounting lets the connection level's waits show the
 * buffer (docs/metrics.md, "Data over several paths"). CMT (usrsctp counts the association's queue in
 * payload, so its RtxQ never exceeds the buffer and a full buffer is the highest level, and resumes the
 * writer at every SACK) keeps a ceiling; otherwise the time of the waits at the highest level tells: a
 * twentieth of the waits' span or more, held back there, else never. MPTCP (Linux counts the connection's
 * queue in payload too, and copies a write as soon as any room is free) reads the highest level's time as
 * CMT beyond one flight and too short, over two packets below it (the write that overshoots the buffer,
 * and the packet B - rtxq < S allows), with blocked ending at the first ack that freed room (level SBE_LEVEL_MPTCP):
 * data written after it may wait in the connection or a subflow, unsent. */
void sbe_decide_paths(const sbe_t *e, int nr, sbe_paths_t paths, sbe_result_t *r);
/* Estimated B: blocked while held back, more new data still to come (`before_last_new`), and the RtxQ
 * after the last new data at the ceiling, or above it while a gap is open (loss recovery); with
 * an MPTCP data level or a paced sender, only while no ack has freed room since (rtxq_now, the RtxQ as of
 * now, still that high). */
int sbe_blocked(const sbe_result_t *r, uint64_t rtxq_after_new, uint64_t rtxq_now, int gap_open, int before_last_new);
/* A capture not by the sender (by_sender 0: by the receiver or in the middle) shows neither when the sender
 * sent nor when acks reached it: beyond one flight, it cannot tell. */
void sbe_vantage(sbe_result_t *r, int by_sender);
/* The evidence or the reason of r as one line (docs/metrics.md, "Estimating B"), at most n bytes with its
 * NUL; vantage names where the capture sits (SBE_NOT_BY_SENDER). Returns snprintf's. */
int sbe_reason(const sbe_result_t *r, const char *vantage, char *buf, size_t n);

/* ---- wire blocks to units ---- */

/* SCTP gap block (start, end offsets from the cum TSN ack) -> TSNs [cum_tsn + start, cum_tsn + end + 1);
 * an inverted block (end + 1 < start) comes out empty (lo >= hi) and sb_ack ignores it. */
ival_t sctp_gap_block(uint64_t cum_tsn, uint16_t start, uint16_t end);

#endif
