/* SPDX-License-Identifier: GPL-2.0-or-later */
/* RtxQ bookkeeping of one sender direction (metrics.md, docs/decisions.md 1-9): applies data and ack
 * events to the scoreboard and records the figures after them in the frame's result. */
#include "nrsack.h"

#include <inttypes.h>
#include <string.h>
#include <epan/wmem_scopes.h>

/* Every direction of the file whose scoreboard may still hold memory (a set): the file-close routine frees them. */
static GHashTable *live_dirs;

void flow_dir_init(flow_dir_t *d, guint32 stream, guint8 sender_side, const char *protocol, gboolean tsn_units,
                   rule_t rule_rtx_after_ack, rule_t rule_revoked)
{
    memset(d, 0, sizeof(*d));
    sb_init(&d->sb, tsn_units);
    d->stream = stream;
    d->sender_side = sender_side;
    d->protocol = protocol;
    d->rule_rtx_after_ack = rule_rtx_after_ack;
    d->rule_revoked = rule_revoked;
    if (!live_dirs)
        live_dirs = g_hash_table_new(g_direct_hash, g_direct_equal);
    g_hash_table_add(live_dirs, d);
}

/* sbe_decide_paths per semantics, kept until the estimator is fed again; with `current` FALSE (one pass,
 * the estimate so far) until its events have grown by a sixteenth, so that a long capture costs a few
 * hundred decisions, not one per frame (lua/nrsack.lua decides alike). */
static void decide(flow_dir_t *d, gboolean current)
{
    guint64 fed = d->estimate_changes - d->decided_at;
    if (d->decided_valid && (!fed || (!current && fed < MAX(1, d->decided_at / 16))))
        return;
    /* MPTCP's data level, an association whose DATA went over several address pairs (CMT), or one path:
     * the analyzer's entry for the same direction */
    sbe_paths_t paths = !strcmp(d->protocol, "mptcp") ? SBE_MPTCP_DATA_LEVEL
                        : d->data_paths                ? SBE_CMT_ASSOCIATION
                        : !strcmp(d->protocol, "tcp")  ? SBE_TCP_CONNECTION
                                                       : SBE_ONE_PATH;
    for (int k = 0; k < 2; k++)
        sbe_decide_paths(&d->estimate, k == SBE_NR, paths, &d->decided[k]);
    d->decided_at = d->estimate_changes;
    d->decided_valid = TRUE;
}

/* Where the capture sits for d's sender (VANTAGE_*, or the endpoint index). */
static gint8 vantage_of(const flow_dir_t *d)
{
    return d->vantage ? *d->vantage : VANTAGE_UNKNOWN;
}

/* The shown direction takes what its frames show from the live one. */
static void shown_sync(shown_dir_t *s, const flow_dir_t *d)
{
    s->nr_mode = d->nr_mode;
    s->vantage = vantage_of(d);
    s->last_new_frame = d->last_new_frame;
    s->decided[0] = d->decided[0];
    s->decided[1] = d->decided[1];
}

void flow_dir_release(flow_dir_t *d)
{
    if (d->released)
        return;
    decide(d, TRUE);  /* the flow's estimate is final: its state goes */
    sbe_free(&d->estimate);
    sb_free(&d->sb);
    d->released = TRUE;
    if (d->shown) {
        shown_sync(d->shown, d);
        d->shown->live = NULL;
    }
    if (live_dirs)
        g_hash_table_remove(live_dirs, d);
}

void flow_dir_free(flow_dir_t *d)
{
    flow_dir_release(d);
    wmem_free(d->scope, d->sender);
    wmem_free(d->scope, d->receiver);
    wmem_free(d->scope, d->name);
    d->sender = d->receiver = d->name = NULL;
}

void flow_dirs_release_all(void)
{
    if (!live_dirs)
        return;
    GList *dirs = g_hash_table_get_keys(live_dirs);
    for (GList *l = dirs; l; l = l->next)
        flow_dir_release((flow_dir_t *)l->data);
    g_list_free(dirs);
    g_hash_table_remove_all(live_dirs);
}

/* ---- the budget of open flows (decisions.md 84) ---- */

typedef struct {
    open_flow_t *head, *tail;  /* least recently active first */
} flow_list_t;

static flow_list_t idle_lists[2];  /* [0]: flows that carried no data, [1]: the others */
static guint open_count;
static guint64 released_early[2];  /* finished by the budget: without data, with data */

static void list_unlink(flow_list_t *l, open_flow_t *f)
{
    if (f->prev)
        f->prev->next = f->next;
    else
        l->head = f->next;
    if (f->next)
        f->next->prev = f->prev;
    else
        l->tail = f->prev;
    f->prev = f->next = NULL;
}

void open_flow_remove(open_flow_t *f)
{
    if (!f->listed)
        return;
    list_unlink(&idle_lists[f->has_data], f);
    f->listed = FALSE;
    open_count--;
}

void open_flow_touch(open_flow_t *f, gboolean has_data)
{
    if (f->listed)
        list_unlink(&idle_lists[f->has_data], f);
    else
        open_count++;
    f->listed = TRUE;
    f->has_data |= has_data;
    flow_list_t *l = &idle_lists[f->has_data];
    f->prev = l->tail;
    if (l->tail)
        l->tail->next = f;
    else
        l->head = f;
    l->tail = f;
}

void open_flows_enforce(frame_result_t *fr)
{
    guint budget = nrsack_prefs.max_open_flows;
    if (!budget || open_count <= budget)
        return;
    guint target = MAX(budget - budget / 4, 1);
    guint64 n[2] = {0, 0};
    for (int k = 0; k < 2 && open_count > target; k++) {
        while (open_count > target && idle_lists[k].head) {
            open_flow_t *f = idle_lists[k].head;
            open_flow_remove(f);
            n[k]++;
            f->finish(f);  /* may free f */
        }
    }
    released_early[0] += n[0];
    released_early[1] += n[1];
    rules_raise(fr, GEN01, TRUE,
                "%" PRIu64 " flows finished before their end, more than %u being open at once (nrsack.max_open_flows): "
                "%" PRIu64 " without data, %" PRIu64 " with data finished at their last packet; a later packet of one "
                "starts a new stream", n[0] + n[1], budget, n[0], n[1]);
}

void open_flows_reset(void)
{
    memset(idle_lists, 0, sizeof(idle_lists));
    open_count = 0;
    released_early[0] = released_early[1] = 0;
}

void open_flows_released(guint64 *without_data, guint64 *with_data)
{
    *without_data = released_early[0];
    *with_data = released_early[1];
}

/* The core ran out of memory: this direction's state is incomplete, so it is analyzed no further. */
static void out_of_memory(frame_result_t *fr, flow_dir_t *d)
{
    rules_raise(fr, GEN01, FALSE, "out of memory: %s is not analyzed from here on", d->name ? d->name : "this direction");
    flow_dir_release(d);
}

/* A serial far from the highest seen: counted, reported once per direction (decisions 33: a corrupt
 * capture must not bury the real findings), fed nothing. */
static gboolean far_away(frame_result_t *fr, flow_dir_t *d, const char *what, guint64 v)
{
    d->far_count++;
    if (!d->far_reported) {
        d->far_reported = TRUE;
        rules_raise(fr, GEN01, TRUE, "%s %" G_GUINT64_FORMAT " lies more than 2^30 from the highest seen in %s; not analyzed (later ones: not reported)",
                    what, v, d->name ? d->name : "this direction");
    }
    return FALSE;
}

gboolean rtxq_unwrap(frame_result_t *fr, flow_dir_t *d, const char *what, guint32 v, guint64 *out)
{
    if (d->released)
        return FALSE;
    if (serial_unwrap(&d->sb.space, v, out) == SERIAL_OK)
        return TRUE;
    return far_away(fr, d, what, v);
}

gboolean rtxq_take64(frame_result_t *fr, flow_dir_t *d, const char *what, guint64 v, guint64 wire, guint64 *out)
{
    if (d->released)
        return FALSE;
    if (serial_take64(&d->sb.space, v, out) == SERIAL_OK)
        return TRUE;
    return far_away(fr, d, what, wire);
}

void flow_dir_set_endpoints(flow_dir_t *d, wmem_allocator_t *scope, const address *sender, guint16 sport,
                            const address *receiver, guint16 rport)
{
    d->scope = scope;
    d->sender = nrsack_endpoint_str(scope, sender, sport);
    d->receiver = nrsack_endpoint_str(scope, receiver, rport);
    d->name = wmem_strdup_printf(scope, "%s -> %s", d->sender, d->receiver);
}

/* A frame may touch both directions (SCTP bundling DATA with a SACK): one update per direction. */
static rtxq_update_t *update_for(frame_result_t *fr, flow_dir_t *d)
{
    for (guint i = 0; i < fr->n_updates; i++)
        if (fr->upd[i].dir == d)
            return &fr->upd[i];
    if (fr->n_updates == NRSACK_MAX_UPDATES)
        return NULL;
    rtxq_update_t *u = &fr->upd[fr->n_updates++];
    memset(u, 0, sizeof(*u));
    u->dir = d;
    if (!d->shown) {  /* the direction's frames will show it */
        shown_dir_t *s = wmem_new0(wmem_file_scope(), shown_dir_t);
        s->live = d;
        s->name = wmem_strdup(wmem_file_scope(), d->name);
        s->protocol = d->protocol;
        s->stream = d->stream;
        s->sender_side = d->sender_side;
        d->shown = s;
    }
    return u;
}

static void refresh_figures(rtxq_update_t *u, flow_dir_t *d)
{
    sb_figures(&d->sb, &u->fig);
    if (d->gap_from_sacked)
        d->gap_open = u->fig.sacked > 0;
    u->rtxq = d->nr_mode ? u->fig.rtxq_nr : u->fig.rtxq_sack;
    u->after_new[SBE_SACK] = d->after_new[SBE_SACK];
    u->after_new[SBE_NR] = d->after_new[SBE_NR];
    u->blocked = nrsack_prefs.sndbuf > 0 && d->max_payload > 0 &&
                 sb_blocked(&u->fig, nrsack_prefs.sndbuf, d->max_payload, d->nr_mode);
    u->gap_open = d->gap_open;
}

#define VANTAGE_RATIO 2.5 /* one handshake gap this many times the other puts the capture by one end */

/* Captures can claim any time (a pcapng if_tsresol of whole seconds with huge values): seconds are
 * clamped to +-2^62 ns, about 146 years either side of 1970, so the time and any difference of two
 * times stay inside 64 bits instead of overflowing (undefined behavior in C). */
#define TIME_LIMIT_S (G_GINT64_CONSTANT(4611686018))

gint64 nrsack_time_ns(const packet_info *pinfo)
{
    gint64 secs = CLAMP((gint64)pinfo->abs_ts.secs, -TIME_LIMIT_S, TIME_LIMIT_S);
    return secs * 1000000000 + pinfo->abs_ts.nsecs;
}

void handshake_step(handshake_t *hs, int step, const packet_info *pinfo)
{
    if (hs->seen[step] || (step && !hs->seen[step - 1]))
        return;
    hs->seen[step] = TRUE;
    hs->ns[step] = nrsack_time_ns(pinfo);
    if (step < 2)
        return;
    /* the opener's reply came back late and it confirmed at once: we sit by the opener */
    double reply = (double)(hs->ns[1] - hs->ns[0]), confirm = (double)(hs->ns[2] - hs->ns[1]);
    hs->vantage = reply > VANTAGE_RATIO * confirm ? 0 : confirm > VANTAGE_RATIO * reply ? 1 : VANTAGE_MIDDLE;
}

void rtxq_on_data(frame_result_t *fr, flow_dir_t *d, guint64 lo, guint64 hi, guint32 payload_bytes)
{
    sb_data_facts_t res;
    if (d->released)
        return;
    if (payload_bytes > d->max_payload)
        d->max_payload = payload_bytes;
    /* a TCP keep-alive resends the byte below the ack on purpose (decisions 21) */
    gboolean keepalive = !d->sb.tsn_units && hi - lo <= 1 && d->sb.cum_known && lo + 1 == d->sb.cum;
    if (sb_data(&d->sb, lo, hi, payload_bytes, &res) < 0) {
        out_of_memory(fr, d);
        return;
    }
    if (res.out_of_window) {
        rules_raise(fr, GEN01, FALSE, "TSN %u lies more than %u TSNs above the oldest unacked one; not analyzed",
                    (guint32)lo, (guint32)SB_TSN_WINDOW);
        return;
    }
    if ((res.below_cum || res.was_nracked) && !keepalive) {
        /* strict only where the capture sits by the data sender (decisions 17) */
        gboolean by_sender = d->vantage && *d->vantage == (gint8)d->sender_side;
        rules_raise(fr, d->rule_rtx_after_ack, !by_sender, "%s from %s retransmitted after it was %s%s",
                    d->sb.tsn_units ? "TSN" : "data", d->sender ? d->sender : "?",
                    res.was_nracked ? "NR-acked" : "cum-acked",
                    by_sender ? "" : "; the capture is not at the sender: the ack may have crossed it");
    }
    if (res.new_units) {  /* new data: the estimator's input as analyzer/state/_scoreboard.c note_estimate gives it */
        d->after_new[SBE_SACK] = d->sb.sent.weight;
        d->after_new[SBE_NR] = d->sb.sent.weight - d->sb.nracked.weight;
        d->last_new_frame = fr->num;
        d->estimate_changes++;
        if (sbe_new_data(&d->estimate, d->after_new[SBE_SACK], d->after_new[SBE_NR], res.new_bytes, fr->ns) < 0) {
            out_of_memory(fr, d);
            return;
        }
    }
    if (!res.new_bytes)
        return; /* decisions 4: retransmissions do not change the RtxQ */
    rtxq_update_t *u = update_for(fr, d);
    if (!u)
        return;
    u->has_data = TRUE;
    u->new_data_bytes += res.new_bytes;
    refresh_figures(u, d);
}

void rtxq_on_ack(frame_result_t *fr, flow_dir_t *d, guint64 cum, const ival_t *r, guint n_r,
                 const ival_t *nr, guint n_nr, sb_revoke_t revoke, guint64 path, sb_ack_facts_t *res)
{
    memset(res, 0, sizeof(*res));
    if (d->released)
        return;
    guint64 acked_before = d->sb.acked_bytes;
    if (sb_ack(&d->sb, cum, r, n_r, nr, n_nr, revoke, path, res) < 0) {
        memset(res, 0, sizeof(*res));
        out_of_memory(fr, d);
        return;
    }
    if (d->sb.acked_bytes > acked_before || res->freed_bytes > 0) {  /* an ack that freed room */
        d->estimate_changes++;
        sbe_freeing_ack(&d->estimate, d->sb.gap_open, fr->ns);
    }
    if (!res->stale && !d->gap_from_sacked)
        d->gap_open = res->gap_open;
    rtxq_update_t *u = update_for(fr, d);
    if (!u)
        return;
    u->is_ack = TRUE;
    u->freed_bytes += res->freed_bytes;
    for (guint i = 0; i < MIN(res->n_revoked, (size_t)SB_MAX_REPORTED); i++) {
        /* report each revoked TSN (SCTP) or the first byte of each revoked range (TCP, MPTCP) */
        guint64 x = res->revoked[i].lo;
        do {
            if (!u->revoked)
                u->revoked = wmem_alloc_array(wmem_file_scope(), guint32, NRSACK_MAX_REVOKED);
            if (u->n_revoked < NRSACK_MAX_REVOKED)
                u->revoked[u->n_revoked++] = (guint32)x;
            x++;
        } while (d->sb.tsn_units && x < res->revoked[i].hi && u->n_revoked < NRSACK_MAX_REVOKED);
    }
    if (res->n_revoked)
        rules_raise(fr, d->rule_revoked, FALSE, "%u %s range(s) NR-acked earlier are neither cum-acked nor NR-acked by this ack, first at %u",
                    (guint)res->n_revoked, d->sb.tsn_units ? "TSN" : "byte", (guint32)res->revoked[0].lo);
    refresh_figures(u, d);
}

void rtxq_ack_before_data(frame_result_t *fr, flow_dir_t *d, guint64 cum, const ival_t *r, guint n_r,
                          const ival_t *nr, guint n_nr)
{
    sb_ack_facts_t res;
    if (d->released)
        return;
    if (sb_ack(&d->sb, cum, r, n_r, nr, n_nr, REVOKE_NONE, 0, &res) < 0)
        out_of_memory(fr, d);
    else if (!d->gap_from_sacked)
        d->gap_open = res.gap_open;
}

void rtxq_on_received(frame_result_t *fr, flow_dir_t *d, const ival_t *r, guint n_r)
{
    if (!n_r || d->released)
        return;
    if (sb_received(&d->sb, r, n_r) < 0) {
        out_of_memory(fr, d);
        return;
    }
    rtxq_update_t *u = update_for(fr, d);
    if (u)
        refresh_figures(u, d);
}

void rtxq_data_path(flow_dir_t *d, guint64 path)
{
    if (!d->data_path_seen) {
        d->data_path_seen = TRUE;
        d->data_path = path;
    } else if (path != d->data_path && !d->data_paths) {
        d->data_paths = TRUE;
        d->estimate_changes++;
    }
}

/* Where the capture sits for s's sender, as the analyzer's summary names it (vantage). */
static const char *vantage_name(const shown_dir_t *s)
{
    gint8 v = s->vantage;
    return v == VANTAGE_UNKNOWN ? "unknown" : v == VANTAGE_MIDDLE ? "middle" : v == (gint8)s->sender_side ? "sender" : "receiver";
}

void rtxq_sndbuf_view(shown_dir_t *s, gboolean shown_again, sndbuf_view_t *v)
{
    memset(v, 0, sizeof(*v));
    if (nrsack_prefs.sndbuf) {
        v->given = TRUE;
        v->sndbuf = nrsack_prefs.sndbuf;
        return;
    }
    /* after the first pass (Wireshark's display, tshark -2) the estimator has seen the whole capture; not
     * pinfo->fd->visited, which taps already see set in tshark's single pass */
    v->whole = !s->live || shown_again;
    if (s->live) { /* else synced at its release */
        decide(s->live, v->whole);
        shown_sync(s, s->live);
    }
    v->r = s->decided[s->nr_mode ? SBE_NR : SBE_SACK];
    const char *where = vantage_name(s);
    sbe_vantage(&v->r, !strcmp(where, "sender") || !strcmp(where, "unknown"));
    if (v->r.verdict == SBE_HELD_BACK)
        v->sndbuf = (guint32)MIN(v->r.sndbuf, G_MAXUINT32);
}

gboolean rtxq_blocked(const shown_dir_t *s, const shown_update_t *u, guint32 num, const sndbuf_view_t *v)
{
    if (v->given)
        return u->blocked;
    /* one pass: more new data may follow (the estimate so far) */
    gboolean before_last_new = !v->whole || num < s->last_new_frame;
    return sbe_blocked(&v->r, s->nr_mode ? u->after_new_nr : u->after_new_sack, s->nr_mode ? u->rtxq_nr : u->rtxq_sack,
                       u->gap_open, before_last_new);
}

char *rtxq_sndbuf_reason(const shown_dir_t *s, const sndbuf_view_t *v, wmem_allocator_t *pool)
{
    char line[256];
    sbe_reason(&v->r, vantage_name(s), line, sizeof(line));
    return wmem_strdup(pool, line);
}
