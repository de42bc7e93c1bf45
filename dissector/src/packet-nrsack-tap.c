/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tshark -z nrsack,stat[,FILTER]: per flow direction data bytes, max and mean RtxQ (SACK and NR-SACK
 * semantics), blocked time and p/q with the B nrsack.blocked uses (given or estimated, said per direction),
 * and rule counts.
 * Statistics > NR-SACK in Wireshark's GUI (and tshark -z nrsack,tree): the same per direction data
 * bytes, RtxQ (count, mean, min, max), blocked frames and rule counts as a stats tree, the form
 * Wireshark gives plugins a Statistics menu entry in; blocked time and p/q stay in -z nrsack,stat. */
#include "nrsack.h"

#include <inttypes.h>

#include <stdio.h>
#include <epan/tap.h>
#include <epan/stat_tap_ui.h>
#include <epan/stats_tree.h>
#include <epan/wmem_scopes.h>

static int nrsack_tap = -1;

typedef struct {
    shown_dir_t *dir;
    guint64 data_bytes;
    guint64 max_sack, max_nr;
    double sum_sack, sum_nr;
    guint n_samples;
    gboolean started;
    double first_data_t, last_t, q_end_t;
    gboolean last_blocked, last_gap, complete;
    double blocked_s, p_s;
    sndbuf_view_t view;   /* B as of the direction's last frame */
} dir_stats_t;

typedef struct {
    char *filter;
    GHashTable *dirs;   /* flow_dir_t* -> dir_stats_t* */
    GPtrArray *order;   /* first-seen order */
    guint rule_count[RULE_COUNT];
    double last_frame_t;
    gboolean have_clock;
    gint64 clock_raw_ns, clock_ns; /* the last frame's time as written, and as the statistics count it */
} nrsack_stat_t;

/* The capture clock as the analyzer reads it (analyzer/read/_reader.c capture_clock, GEN-02,
 * decisions.md 30), so q, b and p never run backwards: a step forward beyond a day counts as no
 * time; a step back beyond a second is a new clock, time going on from the frame before; a frame a
 * little older than the one before is held at that one's time. -> seconds since the first frame. */
#define CLOCK_STEP_NS (G_GUINT64_CONSTANT(86400) * 1000000000)
#define CLOCK_BACK_NS G_GUINT64_CONSTANT(1000000000)
static double stat_clock(nrsack_stat_t *st, const packet_info *pinfo)
{
    gint64 raw = nrsack_time_ns(pinfo);
    if (!st->have_clock) {
        st->have_clock = TRUE;
        st->clock_raw_ns = raw;
        st->clock_ns = 0;
    } else if (raw >= st->clock_raw_ns) {
        guint64 step = (guint64)raw - (guint64)st->clock_raw_ns; /* unsigned: times +-2^62 apart fit */
        if (step <= CLOCK_STEP_NS)
            st->clock_ns += (gint64)step;
        st->clock_raw_ns = raw;
    } else if ((guint64)st->clock_raw_ns - (guint64)raw > CLOCK_BACK_NS) {
        st->clock_raw_ns = raw;
    }
    return st->clock_ns / 1e9;
}

static void stat_reset(void *p)
{
    nrsack_stat_t *st = (nrsack_stat_t *)p;
    g_hash_table_remove_all(st->dirs);
    g_ptr_array_set_size(st->order, 0);
    memset(st->rule_count, 0, sizeof(st->rule_count));
    st->last_frame_t = 0;
    st->have_clock = FALSE;
}

/* Integrates blocked and blocked-during-loss-recovery time up to t (metrics.md: b and p). */
static void integrate(dir_stats_t *s, double t)
{
    double dt = t - s->last_t;
    if (dt > 0 && s->last_blocked) {
        s->blocked_s += dt;
        if (s->last_gap)
            s->p_s += dt;
    }
    s->last_t = t;
}

static tap_packet_status stat_packet(void *p, packet_info *pinfo, epan_dissect_t *edt, const void *data, tap_flags_t flags)
{
    nrsack_stat_t *st = (nrsack_stat_t *)p;
    const frame_record_t *rec = (const frame_record_t *)data;
    double t = stat_clock(st, pinfo);
    st->last_frame_t = t;
    for (const finding_t *f = rec->findings; f; f = f->next)
        st->rule_count[f->rule]++;
    for (guint i = 0; i < rec->n_updates; i++) {
        const shown_update_t *u = frame_record_update(rec, i);
        dir_stats_t *s = (dir_stats_t *)g_hash_table_lookup(st->dirs, u->dir);
        if (!s) {
            s = g_new0(dir_stats_t, 1);
            s->dir = u->dir;
            g_hash_table_insert(st->dirs, (gpointer)u->dir, s);
            g_ptr_array_add(st->order, s);
        }
        if (u->has_data && !s->started) {
            s->started = TRUE;
            s->first_data_t = s->last_t = t;
        }
        if (!s->started)
            continue;
        if (!s->complete)
            integrate(s, t);
        s->data_bytes += u->new_data_bytes;
        s->max_sack = MAX(s->max_sack, u->rtxq_sack);
        s->max_nr = MAX(s->max_nr, u->rtxq_nr);
        s->sum_sack += (double)u->rtxq_sack;
        s->sum_nr += (double)u->rtxq_nr;
        s->n_samples++;
        rtxq_sndbuf_view(u->dir, rec->shown_again, &s->view);
        s->last_blocked = rtxq_blocked(u->dir, u, pinfo->num, &s->view);
        s->last_gap = u->gap_open;
        /* q ends with the ack that cum-acks the last data seen (metrics.md; a later ack of nothing
         * new, the peer's FIN-ACK, leaves it there); new data reopens it */
        gboolean was_complete = s->complete;
        s->complete = u->is_ack && u->rtxq_sack == 0;
        if (s->complete && !was_complete)
            s->q_end_t = t;
    }
    return TAP_PACKET_REDRAW;
}

/* The line under a direction's row: which B its blocked time used, and how it was obtained. */
static void print_sndbuf(const dir_stats_t *s)
{
    const sndbuf_view_t *v = &s->view;
    if (v->given) {
        printf("       B %u bytes, given\n", v->sndbuf);
        return;
    }
    static const char *const verdicts[] = {"held back", "never", "cannot tell"};
    char *reason = rtxq_sndbuf_reason(s->dir, v, NULL);
    char bytes[32] = "none";  /* never held back, or cannot tell */
    if (v->sndbuf)
        snprintf(bytes, sizeof(bytes), "%u bytes", v->sndbuf);
    printf("       B %s, %s, %s: %s\n", bytes, v->whole ? "estimated from the whole capture" : "estimated so far",
           verdicts[v->r.verdict], reason);
    wmem_free(NULL, reason);
}

static void stat_draw(void *p)
{
    nrsack_stat_t *st = (nrsack_stat_t *)p;
    printf("\n================================================================================================================\n");
    printf("NR-SACK statistics (nrsack,stat%s%s); sndbuf preference: %u bytes%s\n", st->filter ? "," : "",
           st->filter ? st->filter : "", nrsack_prefs.sndbuf, nrsack_prefs.sndbuf ? "" : " (0: B estimated per direction)");
    printf("%-6s %-5s %-45s %10s %9s %9s %11s %11s %12s %12s %12s %7s %s\n", "Stream", "Proto", "Sender -> Receiver",
           "Data B", "MaxSACK", "MaxNR", "MeanSACK", "MeanNR", "Blocked s", "p s", "q s", "p/q", "Complete");
    for (guint i = 0; i < st->order->len; i++) {
        dir_stats_t *s = (dir_stats_t *)g_ptr_array_index(st->order, i);
        if (!s->started)
            continue;
        if (!s->complete)
            integrate(s, st->last_frame_t);
        double q = (s->complete ? s->q_end_t : st->last_frame_t) - s->first_data_t;
        /* b and p only where B is known: given, or estimated with a verdict (never: no blocked time) */
        gboolean known = s->view.given || s->view.r.verdict != SBE_CANNOT_TELL;
        char pq[32] = "-", b[32] = "-", p_s[32] = "-";
        if (known && q > 0)
            snprintf(pq, sizeof(pq), "%.4f", s->p_s / q);
        if (known) {
            snprintf(b, sizeof(b), "%.6f", s->blocked_s);
            snprintf(p_s, sizeof(p_s), "%.6f", s->p_s);
        }
        printf("%-6u %-5s %-45s %10" G_GUINT64_FORMAT " %9" G_GUINT64_FORMAT " %9" G_GUINT64_FORMAT " %11.1f %11.1f %12s %12s %12.6f %7s %s\n",
               s->dir->stream, s->dir->protocol, s->dir->name, s->data_bytes, s->max_sack, s->max_nr,
               s->n_samples ? s->sum_sack / s->n_samples : 0.0, s->n_samples ? s->sum_nr / s->n_samples : 0.0,
               b, p_s, q, pq, s->complete ? "yes" : "no");
        print_sndbuf(s);
    }
    printf("Rule findings:");
    gboolean any = FALSE;
    for (guint r = 0; r < RULE_COUNT; r++)
        if (st->rule_count[r]) {
            printf(" %s=%u", rule_name((rule_t)r), st->rule_count[r]);
            any = TRUE;
        }
    printf("%s\n", any ? "" : " none");
    guint64 without_data, with_data;
    open_flows_released(&without_data, &with_data);
    if (without_data + with_data)
        printf("Flows finished early: %" PRIu64 ", more than %u being open at once (nrsack.max_open_flows): %" PRIu64
               " without data, %" PRIu64 " with data finished at their last packet.\n",
               without_data + with_data, nrsack_prefs.max_open_flows, without_data, with_data);
    printf("(Mean RtxQ: over the frames that change the direction's scoreboard.)\n");
    printf("================================================================================================================\n");
}

static NRSACK_STAT_INIT_RESULT stat_init(const char *opt_arg, void *userdata)
{
    nrsack_stat_t *st = g_new0(nrsack_stat_t, 1);
    const char *prefix = "nrsack,stat,";
    if (opt_arg && g_str_has_prefix(opt_arg, prefix) && opt_arg[strlen(prefix)])
        st->filter = g_strdup(opt_arg + strlen(prefix));
    st->dirs = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
    st->order = g_ptr_array_new();
    GString *err = register_tap_listener("nrsack", st, st->filter, TL_REQUIRES_NOTHING, stat_reset, stat_packet, stat_draw, NULL);
    if (err) {
        fprintf(stderr, "tshark: Couldn't register nrsack,stat tap: %s\n", err->str);
        g_string_free(err, TRUE);
        NRSACK_STAT_INIT_FAILED;
    }
    NRSACK_STAT_INIT_STARTED;
}

static int tree_rules_node;

static void tree_init(stats_tree *st)
{
    tree_rules_node = stats_tree_create_node(st, "Rule findings", 0, STAT_DT_INT, TRUE);
}

static tap_packet_status tree_packet(stats_tree *st, packet_info *pinfo, epan_dissect_t *edt _U_, const void *data,
                                     tap_flags_t flags _U_)
{
    const frame_record_t *rec = (const frame_record_t *)data;
    for (const finding_t *f = rec->findings; f; f = f->next) {
        tick_stat_node(st, "Rule findings", 0, TRUE);
        tick_stat_node(st, rule_name(f->rule), tree_rules_node, FALSE);
    }
    for (guint i = 0; i < rec->n_updates; i++) {
        const shown_update_t *u = frame_record_update(rec, i);
        char name[256];
        snprintf(name, sizeof(name), "Stream %u %s %s", u->dir->stream, u->dir->protocol, u->dir->name);
        int dir_node = tick_stat_node(st, name, 0, TRUE);
        increase_stat_node(st, "Data bytes", dir_node, FALSE, (gint)u->new_data_bytes);
        avg_stat_node_add_value_int(st, "RtxQ bytes (NR-SACK)", dir_node, FALSE, (gint)u->rtxq_nr);
        avg_stat_node_add_value_int(st, "RtxQ bytes (SACK semantics)", dir_node, FALSE, (gint)u->rtxq_sack);
        sndbuf_view_t v;
        rtxq_sndbuf_view(u->dir, rec->shown_again, &v);
        if (rtxq_blocked(u->dir, u, pinfo->num, &v))
            tick_stat_node(st, "Send-buffer blocked frames", dir_node, FALSE);
    }
    return TAP_PACKET_REDRAW;
}

/* Stats trees register in the tap listener phase, after every protocol and tap exists. */
static void tree_register(void)
{
    stats_tree_register_plugin("nrsack", "nrsack", "NR-SACK", 0, tree_packet, tree_init, NULL);
}

static stat_tap_ui nrsack_stat_ui = {REGISTER_STAT_GROUP_GENERIC, "NR-SACK statistics", "nrsack,stat", stat_init, 0, NULL};

void nrsack_tap_register(void)
{
    nrsack_tap = register_tap("nrsack");
    register_stat_tap_ui(&nrsack_stat_ui, NULL);
    static tap_plugin tree_plugin = {tree_register};
    tap_register_plugin(&tree_plugin);
}

void nrsack_tap_queue(packet_info *pinfo, const frame_record_t *rec)
{
    tap_queue_packet(nrsack_tap, pinfo, rec);
}
