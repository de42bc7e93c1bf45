/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Shared declarations of the nrsack plugin: fields, preferences, per-frame results, flow directions. */
#ifndef NRSACK_H
#define NRSACK_H

#include <epan/packet.h>
#include <epan/expert.h>

#include "ws_compat.h"

#include "nrsack_core.h"
#include "rules.h"

typedef struct {
    guint sndbuf;        /* B in payload bytes for nrsack.blocked; 0 = estimated from the capture (core/sndbuf.c) */
    guint tcp_exid;
    guint fsack_init, fsack_ack, fsack_complete;
    guint sctp_udp_port;
    guint max_open_flows; /* the budget of flows held open (decisions.md 84); 0 = none */
} nrsack_prefs_t;
extern nrsack_prefs_t nrsack_prefs;

typedef struct flow_dir flow_dir_t;

/* What the frames of one direction show of it after their first pass: small, kept for the whole file,
 * made at the direction's first update, while the direction's own state (flow_dir_t, with its scoreboard
 * and estimator) goes when its flow ends (decisions.md 44, 84). */
typedef struct {
    flow_dir_t *live;         /* the direction while its flow is open, else NULL */
    const char *name, *protocol;
    guint32 stream;
    guint8 sender_side;
    gint8 vantage;            /* as of the last sync (VANTAGE_*) */
    gboolean nr_mode;
    guint32 last_new_frame;
    sbe_result_t decided[2];  /* as of the last sync; final once the flow ended */
} shown_dir_t;

/* One sender direction of an association / connection (MPTCP: data level). */
struct flow_dir {
    scoreboard_t sb;
    guint32 stream;
    guint8 sender_side;       /* 0: initiator's data, 1: responder's data */
    const char *protocol;     /* "sctp", "tcp", "mptcp" */
    char *sender, *receiver;  /* address:port */
    wmem_allocator_t *scope;  /* of the names: the file's, or NULL (GLib) where they go with the flow */
    char *name;               /* "sender -> receiver" (decisions 13) */
    guint32 max_payload;      /* S */
    gboolean nr_mode;         /* NR-SACK negotiated or seen: rtxq is rtxq_nr */
    gboolean gap_open;
    gboolean gap_from_sacked; /* MPTCP data level: gap_open is sacked > 0 (decisions 12) */
    rule_t rule_rtx_after_ack, rule_revoked;
    const gint8 *vantage;     /* the owner's capture vantage (VANTAGE_*, or the endpoint index) */
    gboolean released;        /* the flow ended: its scoreboard is freed, later events are not analyzed */
    gboolean far_reported;    /* a serial far outside the window was reported (GEN-01 note, once) */
    guint32 far_count;
    /* B from the capture (core/sndbuf.c), fed as the analyzer feeds it (analyzer/state/_scoreboard.c) */
    sbe_t estimate;
    guint64 estimate_changes;   /* events fed: a kept decision is current while this is unchanged */
    guint64 decided_at;
    sbe_result_t decided[2];    /* sbe_decide_paths's per semantics (SBE_SACK, SBE_NR) as of decided_at; final at release */
    gboolean decided_valid;
    guint64 after_new[2];       /* the RtxQ (SACK, NR) after the last new data */
    guint32 last_new_frame;     /* the frame of the last new data */
    guint64 data_path;          /* SCTP: the address pair of the first DATA; data_paths: DATA on another too */
    gboolean data_path_seen, data_paths;
    shown_dir_t *shown;         /* made at the first update; outlives the direction */
};

/* A flow held open (a TCP connection or subflow, an SCTP association), in the budget's lists (decisions.md
 * 84): least recently active first, those that carried no data in a list of their own, finished first. */
typedef struct open_flow {
    struct open_flow *prev, *next;
    gboolean listed, has_data;
    void (*finish)(struct open_flow *f); /* ends the flow early, as the idle bound would: its state goes */
} open_flow_t;

/* Where the capture sits (docs/decisions.md 17): next to endpoint 0 or 1, or: */
#define VANTAGE_UNKNOWN (-2)
#define VANTAGE_MIDDLE (-1)

/* The opening exchange of a flow (INIT, INIT-ACK, COOKIE-ECHO; SYN, SYN-ACK, ACK), first of each. */
typedef struct {
    gboolean seen[3];
    gint64 ns[3];
    gint8 vantage;
} handshake_t;

/* What one frame did to one sender direction's RtxQ, while the frame is analyzed. */
#define NRSACK_MAX_REVOKED 16
typedef struct {
    flow_dir_t *dir;
    gboolean is_ack, has_data;
    guint64 new_data_bytes;
    sb_figures_t fig;
    guint64 rtxq;
    guint64 freed_bytes;
    gboolean blocked, gap_open;
    guint64 after_new[2];
    guint n_revoked;
    guint32 *revoked;         /* NRSACK_MAX_REVOKED entries, allocated on the first one */
} rtxq_update_t;

typedef struct finding {
    rule_t rule;
    gboolean note;
    char *message;
    struct finding *next;
} finding_t;

/* The analysis of one frame (first pass), built on the stack and then kept as a frame_record_t. */
#define NRSACK_MAX_UPDATES 2
struct frame_result {
    guint32 num;              /* the frame */
    gint64 ns;                /* its capture time (nrsack_time_ns) */
    gboolean has_stream;
    guint32 stream;
    guint n_updates;
    rtxq_update_t upd[NRSACK_MAX_UPDATES];
    gboolean has_rtt;
    guint32 rtt_ms;
    finding_t *findings, *last_finding;
};

/* An update as kept and shown: the figures as their 32-bit fields show them (clamped), so that a
 * capture of millions of frames keeps tens of bytes a frame. */
typedef struct {
    shown_dir_t *dir;
    guint32 rtxq, rtxq_sack, rtxq_nr, nr_acked, sacked, rtxq_whatif, freed_bytes, new_data_bytes;
    guint8 is_ack, has_data, blocked, gap_open;
    guint32 after_new_sack, after_new_nr;  /* the direction's RtxQ after its last new data, as of this frame */
    guint32 n_revoked;
    guint32 *revoked;
} shown_update_t;

/* What every pass shows of a frame: its first pass's analysis. One per frame number, in chunks: 32 bytes,
 * the updates apart, since most frames of a flood of flows have none (decisions.md 84). */
typedef struct {
    guint8 analyzed;
    guint8 shown_again;       /* this dissection is not the frame's first (the analysis has seen the whole capture) */
    guint8 has_stream, has_rtt, n_updates;
    guint32 stream, rtt_ms;
    finding_t *findings;
    shown_update_t *updates;  /* n_updates: two where a frame touched both directions (SCTP bundling DATA and a SACK) */
} frame_record_t;

static inline const shown_update_t *frame_record_update(const frame_record_t *rec, guint i)
{
    return &rec->updates[i];
}

enum { LAYER_SCTP, LAYER_TCP };

/* packet-nrsack.c: registration, and the items of every field (the other files decode and analyze) */
guint32 nrsack_new_stream_index(void);
char *nrsack_endpoint_str(wmem_allocator_t *scope, const address *addr, guint16 port);
/* An INIT's or INIT-ACK's Supported Extensions parameter at off: whether it lists NR-SACK and FSACK-INIT. */
void nrsack_tree_sctp_extensions(proto_tree *tree, tvbuff_t *tvb, int off, int len, gboolean nr_sack, gboolean fsack);
/* An FSACK chunk's subtree (named `name`) with its type; its timestamp or address items go under it. */
proto_tree *nrsack_tree_fsack_chunk(proto_tree *tree, tvbuff_t *tvb, int off, int len, const char *name, guint8 type);
void nrsack_tree_fsack_timestamp(proto_tree *chunk_tree, tvbuff_t *tvb, int off);
void nrsack_tree_fsack_address(proto_tree *chunk_tree, tvbuff_t *tvb, int off, gboolean ipv6);

/* packet-nrsack-rtxq.c: the scoreboard events of one direction, recorded in the frame's result */
void flow_dir_init(flow_dir_t *d, guint32 stream, guint8 sender_side, const char *protocol, gboolean tsn_units,
                   rule_t rule_rtx_after_ack, rule_t rule_revoked);
/* Names the direction after its endpoints (address, port), in scope (NULL: GLib, freed by flow_dir_free). */
void flow_dir_set_endpoints(flow_dir_t *d, wmem_allocator_t *scope, const address *sender, guint16 sport,
                            const address *receiver, guint16 rport);
/* The scoreboard's memory (malloc, in the core) goes when the flow ends and, for every flow still
 * open, when the capture file closes. */
void flow_dir_release(flow_dir_t *d);
void flow_dirs_release_all(void);
/* Releases d and frees its names (its frames show their own copy). */
void flow_dir_free(flow_dir_t *d);
/* A packet of flow f was analyzed (has_data: it carried data): f becomes the most recently active. */
void open_flow_touch(open_flow_t *f, gboolean has_data);
/* f ended (or is finished early): it leaves the budget's lists. */
void open_flow_remove(open_flow_t *f);
/* After a frame's analysis: past the budget, the least recently active flows are finished early, those
 * without data first, down to three quarters of it; a note on the frame says how many and why. */
void open_flows_enforce(frame_result_t *fr);
void open_flows_reset(void);
/* How many flows the budget finished early so far in this file: without data, with data. */
void open_flows_released(guint64 *without_data, guint64 *with_data);
/* A 32-bit wire serial of d's space, unwrapped; FALSE (and a GEN-01 note) when it lies far outside
 * the window (decisions 33): the caller then feeds nothing. */
gboolean rtxq_unwrap(frame_result_t *fr, flow_dir_t *d, const char *what, guint32 v, guint64 *out);
/* The same for a 64-bit serial v (the wire value `wire`, as reported, made relative by the caller). */
gboolean rtxq_take64(frame_result_t *fr, flow_dir_t *d, const char *what, guint64 v, guint64 wire, guint64 *out);
void rtxq_on_data(frame_result_t *fr, flow_dir_t *d, guint64 lo, guint64 hi, guint32 payload_bytes);
/* Records step `step` (0..2) of the opening exchange; the vantage follows when all three are seen. */
void handshake_step(handshake_t *hs, int step, const packet_info *pinfo);
gint64 nrsack_time_ns(const packet_info *pinfo);
/* Applies one ack that came on `path` (sb_ack); returns the scoreboard's verdict for the protocol's own rules. */
void rtxq_on_ack(frame_result_t *fr, flow_dir_t *d, guint64 cum, const ival_t *r, guint n_r,
                 const ival_t *nr, guint n_nr, sb_revoke_t revoke, guint64 path, sb_ack_facts_t *res);
/* An ack before any data of d: it sets the state the first data row shows (cum, gap_open), as in the
 * analyzer, but has no row of its own and judges nothing. */
void rtxq_ack_before_data(frame_result_t *fr, flow_dir_t *d, guint64 cum, const ival_t *r, guint n_r,
                          const ival_t *nr, guint n_nr);
/* Units the receiver is known to hold beyond the ack's own blocks (MPTCP: DSNs its subflow ack covers). */
void rtxq_on_received(frame_result_t *fr, flow_dir_t *d, const ival_t *r, guint n_r);
/* SCTP: a DATA chunk of d went over the address pair `path` (several pairs: CMT). */
void rtxq_data_path(flow_dir_t *d, guint64 path);

/* Which B nrsack.blocked uses for a direction as a frame is shown (docs/fields.md, nrsack.sndbuf.*). */
typedef struct {
    gboolean given;          /* the sndbuf preference */
    gboolean whole;          /* estimated from the whole capture (a later pass, or the flow ended), else so far */
    sbe_result_t r;          /* estimated: core/sndbuf.c's verdict, vantage applied */
    guint32 sndbuf;          /* B (given, or estimated and held back), else 0 */
} sndbuf_view_t;
/* shown_again: the frame is dissected after its first pass (frame_record_t), so the estimator has seen all. */
void rtxq_sndbuf_view(shown_dir_t *s, gboolean shown_again, sndbuf_view_t *v);
/* nrsack.blocked of update u of frame `num` under v. */
gboolean rtxq_blocked(const shown_dir_t *s, const shown_update_t *u, guint32 num, const sndbuf_view_t *v);
/* v's reason (estimated), allocated in pool. */
char *rtxq_sndbuf_reason(const shown_dir_t *s, const sndbuf_view_t *v, wmem_allocator_t *pool);

/* packet-nrsack-sctp.c, -tcp.c, -mptcp.c: decode (every pass) and analyze (once, when fr != NULL) */
void sctp_init_state(void);
void sctp_dissect(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, frame_result_t *fr);

void tcp_init_state(void);
/* Frees every connection still held (the file closes). */
void tcp_cleanup_state(void);
/* Frees the connections the frame just analyzed ended, after its record no longer needs them. */
void tcp_free_ended(void);
void tcp_register_option_handoff(int proto);
/* decode of MPTCP DSS NR blocks (every pass) and analysis of the segment (once) */
/* tvb: the TCP segment as Wireshark's TCP dissector had it (its reported length gives the payload's) */
void tcp_dissect(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, frame_result_t *fr);

/* packet-nrsack-tap.c */
void nrsack_tap_register(void);
void nrsack_tap_queue(packet_info *pinfo, const frame_record_t *rec);

#endif
