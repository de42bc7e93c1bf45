/* SPDX-License-Identifier: GPL-2.0-or-later */
/* TCP: the NR-SACK options (kind 253/254 with our ExID) in the tcp.option table, and the per-connection
 * analysis of SACK / NR-SACK blocks. Every other ExID goes to Wireshark's own handler unchanged. */
#include "tcp.h"

#include <epan/address.h>
#include <epan/wmem_scopes.h>

#define OPT_EOL 0
#define OPT_NOP 1
#define OPT_SACK_PERM 4
#define OPT_SACK 5
#define OPT_MPTCP 30
#define OPT_EXP_FD 253
#define OPT_EXP_FE 254

static dissector_handle_t builtin_exp_handle[2]; /* Wireshark's handlers for 253 and 254 */
static wmem_map_t *conn_table;
/* Every connection of the file not yet freed: they live in GLib's memory, not the file's, since a flood
 * makes and ends them by the million and the file's allocator would not reuse their room (decisions.md 84). */
static GHashTable *all_conns;
/* Connections ended during the frame being analyzed: freed only once the frame's record has copied what
 * its updates point at (tcp_free_ended), since a FIN's ack or a RST ends the connection it updated. */
static GPtrArray *ended_conns;

/* ---- the option ---- */

gboolean nr_option_parse(tvbuff_t *tvb, int off, int len, nr_option_t *o)
{
    memset(o, 0, sizeof(*o));
    if (len < 4 || tvb_get_ntohs(tvb, off + 2) != nrsack_prefs.tcp_exid)
        return FALSE;
    o->ours = TRUE;
    if (len == 5) {
        o->permitted = TRUE;
        o->flags = tvb_get_uint8(tvb, off + 4);
        return TRUE;
    }
    if ((len - 4) % 8 != 0 || len == 4 || (len - 4) / 8 > TCP_MAX_BLOCKS) {
        o->bad_length = TRUE;
    }
    guint n = MIN((guint)(len - 4) / 8, TCP_MAX_BLOCKS);
    for (guint i = 0; i < n; i++) {
        o->left[i] = tvb_get_ntohl(tvb, off + 4 + 8 * i);
        o->right[i] = tvb_get_ntohl(tvb, off + 8 + 8 * i);
    }
    o->n_blocks = n;
    return TRUE;
}

static int dissect_option(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    guint8 kind = tvb_get_uint8(tvb, 0);
    int len = tvb_reported_length(tvb);
    nr_option_t o;
    if (len > (int)tvb_captured_length(tvb) || !nr_option_parse(tvb, 0, len, &o)) {
        dissector_handle_t builtin = builtin_exp_handle[kind == OPT_EXP_FE];
        if (builtin)
            return call_dissector_with_data(builtin, tvb, pinfo, tree, data);
        return 0;
    }
    nrsack_tree_tcp_option(tree, tvb, kind, &o);
    return len;
}

void tcp_register_option_handoff(int proto)
{
    dissector_table_t options = find_dissector_table("tcp.option");
    if (!options)
        return;
    builtin_exp_handle[0] = dissector_get_uint_handle(options, OPT_EXP_FD);
    builtin_exp_handle[1] = dissector_get_uint_handle(options, OPT_EXP_FE);
    /* Wireshark names each option in the TCP options summary after its handle's protocol: keep the
     * built-in "Experimental" so that other experiments' options read exactly as before. */
    int proto_exp = builtin_exp_handle[0] ? dissector_handle_get_protocol_index(builtin_exp_handle[0]) : -1;
    dissector_handle_t h = create_dissector_handle(dissect_option, proto_exp >= 0 ? proto_exp : proto);
    dissector_add_uint("tcp.option", OPT_EXP_FD, h);
    dissector_add_uint("tcp.option", OPT_EXP_FE, h);
}

/* ---- the segment ---- */

static gboolean parse_segment(tvbuff_t *tvb, tcp_seg_t *s)
{
    memset(s, 0, sizeof(*s));
    if (tvb_captured_length(tvb) < 20)
        return FALSE;
    s->sport = tvb_get_ntohs(tvb, 0);
    s->dport = tvb_get_ntohs(tvb, 2);
    s->seq = tvb_get_ntohl(tvb, 4);
    s->ack = tvb_get_ntohl(tvb, 8);
    s->hlen = (tvb_get_uint8(tvb, 12) >> 4) * 4;
    s->flags = tvb_get_uint8(tvb, 13);
    if (s->hlen < 20 || s->hlen > tvb_captured_length(tvb))
        return FALSE;
    guint off = 20;
    while (off < s->hlen) {
        guint8 kind = tvb_get_uint8(tvb, off);
        if (kind == OPT_EOL)
            break;
        if (kind == OPT_NOP) {
            off++;
            continue;
        }
        if (off + 2 > s->hlen)
            break;
        guint8 len = tvb_get_uint8(tvb, off + 1);
        if (len < 2 || off + len > s->hlen) {
            /* Wireshark's TCP dissector reports the bad option; ours is also TN-05 */
            s->nr_overruns = (kind == OPT_EXP_FD || kind == OPT_EXP_FE) && off + 4 <= s->hlen &&
                             tvb_get_ntohs(tvb, off + 2) == nrsack_prefs.tcp_exid;
            break;
        }
        if (kind == OPT_SACK_PERM) {
            s->sack_permitted = TRUE;
        } else if (kind == OPT_SACK) {
            s->has_sack = TRUE;
            for (guint i = 0; i < (guint)(len - 2) / 8 && s->n_sack < TCP_MAX_BLOCKS; i++, s->n_sack++) {
                s->sack_left[s->n_sack] = tvb_get_ntohl(tvb, off + 2 + 8 * i);
                s->sack_right[s->n_sack] = tvb_get_ntohl(tvb, off + 6 + 8 * i);
            }
        } else if ((kind == OPT_EXP_FD || kind == OPT_EXP_FE) && !s->has_nr) {
            s->has_nr = nr_option_parse(tvb, off, len, &s->nr);
        } else if (kind == OPT_MPTCP && s->n_mptcp < TCP_MAX_MPTCP_OPTS) {
            s->mptcp_off[s->n_mptcp] = off;
            s->mptcp_len[s->n_mptcp++] = len;
        }
        off += len;
    }
    return TRUE;
}

/* Connections are keyed by both endpoints, lower one first, so both directions find the same entry. */
typedef struct conn_key {
    guint8 data[40];
    guint len;
} conn_key_t;

static void make_key(conn_key_t *k, const address *a, guint16 pa, const address *b, guint16 pb)
{
    int order = cmp_address(a, b);
    if (order > 0 || (order == 0 && pa > pb)) {
        const address *t = a; a = b; b = t;
        guint16 tp = pa; pa = pb; pb = tp;
    }
    memset(k, 0, sizeof(*k));
    guint la = MIN((guint)a->len, 16u), lb = MIN((guint)b->len, 16u);
    memcpy(k->data, a->data, la);
    memcpy(k->data + 16, b->data, lb);
    k->data[32] = (guint8)(pa >> 8); k->data[33] = (guint8)pa;
    k->data[34] = (guint8)(pb >> 8); k->data[35] = (guint8)pb;
    k->data[36] = (guint8)a->type;
    k->len = 40;
}

static guint key_hash(gconstpointer p)
{
    const conn_key_t *k = (const conn_key_t *)p;
    guint h = 2166136261u; /* FNV-1a */
    for (guint i = 0; i < k->len; i++)
        h = (h ^ k->data[i]) * 16777619u;
    return h;
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
    return memcmp(a, b, sizeof(conn_key_t)) == 0;
}

static void free_conn_memory(gpointer p)
{
    tcp_conn_t *c = (tcp_conn_t *)p;
    g_free(c->table_key);
    for (int i = 0; i < 2; i++) {
        free_address_wmem(NULL, &c->addr[i]);
        if (c->dir[i].protocol)
            flow_dir_free(&c->dir[i]);
    }
    g_free(c);
}

void tcp_cleanup_state(void)
{
    if (ended_conns)
        g_ptr_array_set_size(ended_conns, 0);  /* still in all_conns: freed below */
    if (all_conns)
        g_hash_table_remove_all(all_conns);  /* frees each */
}

void tcp_free_ended(void)
{
    if (!ended_conns)
        return;
    for (guint i = 0; i < ended_conns->len; i++)
        g_hash_table_remove(all_conns, g_ptr_array_index(ended_conns, i));  /* frees it */
    g_ptr_array_set_size(ended_conns, 0);
}

void tcp_init_state(void)
{
    if (!all_conns)
        all_conns = g_hash_table_new_full(g_direct_hash, g_direct_equal, free_conn_memory, NULL);
    if (!ended_conns)
        ended_conns = g_ptr_array_new();
    tcp_cleanup_state();
    conn_table = wmem_map_new(wmem_file_scope(), key_hash, key_equal);
}

/* A connection or subflow that ended leaves the table at once and its memory after the frame (tcp_free_ended):
 * a later segment on its endpoints starts a new one, and its frames show what they keep (shown_dir_t); a
 * subflow's connection keeps nothing of it (mptcp_subflow_ended). */
static void retire_conn(tcp_conn_t *c)
{
    if (wmem_map_lookup(conn_table, c->table_key) == c)
        wmem_map_remove(conn_table, c->table_key);
    g_ptr_array_add(ended_conns, c);
}

/* The connection (or subflow) ended: its state goes (decisions.md 44); its frames keep what they showed. */
static void end_conn(tcp_conn_t *c)
{
    if (c->ended)
        return;
    c->ended = TRUE;
    open_flow_remove(&c->open);
    if (c->is_mptcp)
        mptcp_subflow_ended(c);
    if (c->dir[0].protocol) {
        flow_dir_release(&c->dir[0]);
        flow_dir_release(&c->dir[1]);
    }
    retire_conn(c);
}

void tcp_end_conn(tcp_conn_t *c)
{
    end_conn(c);
}

/* The budget of open flows finishes the connection early (decisions.md 84). */
static void finish_conn(open_flow_t *f)
{
    end_conn((tcp_conn_t *)f);
}

static tcp_conn_t *find_conn(packet_info *pinfo, const tcp_seg_t *s, gboolean create, int *from)
{
    conn_key_t k;
    make_key(&k, &pinfo->net_src, s->sport, &pinfo->net_dst, s->dport);
    tcp_conn_t *c = (tcp_conn_t *)wmem_map_lookup(conn_table, &k);
    /* a new SYN (not a retransmission of the first) after the old connection's data starts a new one;
     * so does any segment after its end, as in a capture starting mid-connection (decisions.md 44) */
    if (c && create && (c->ended || ((s->flags & (TCP_FLAG_SYN | TCP_FLAG_ACK)) == TCP_FLAG_SYN &&
                                     c->isn_known[0] && c->isn[0] != s->seq && c->dir[0].sb.snd_max))) {
        end_conn(c); /* superseded: it will see no more segments */
        c = NULL;
    }
    if (!c) {
        if (!create)
            return NULL;
        c = g_new0(tcp_conn_t, 1);
        g_hash_table_add(all_conns, c);
        c->open.finish = finish_conn;
        gboolean reversed = (s->flags & (TCP_FLAG_SYN | TCP_FLAG_ACK)) == (TCP_FLAG_SYN | TCP_FLAG_ACK);
        /* a SYN-ACK seen first: its receiver is the initiator */
        copy_address_wmem(NULL, &c->addr[reversed], &pinfo->net_src);
        copy_address_wmem(NULL, &c->addr[!reversed], &pinfo->net_dst);
        c->port[reversed] = s->sport;
        c->port[!reversed] = s->dport;
        c->hs.vantage = VANTAGE_UNKNOWN;
        conn_key_t *kk = g_new(conn_key_t, 1);
        *kk = k;
        c->table_key = kk;
        wmem_map_insert(conn_table, kk, c);
    }
    *from = (c->port[0] == s->sport && addresses_equal(&c->addr[0], &pinfo->net_src)) ? 0 : 1;
    return c;
}

static void init_tcp_dirs(tcp_conn_t *c)
{
    c->stream = nrsack_new_stream_index();
    for (int i = 0; i < 2; i++) {
        flow_dir_init(&c->dir[i], c->stream, i, "tcp", FALSE, TN04, TN03);
        c->dir[i].vantage = &c->hs.vantage;
        flow_dir_set_endpoints(&c->dir[i], NULL, &c->addr[i], c->port[i], &c->addr[1 - i], c->port[1 - i]);
    }
}

/* The 32-bit edges of wire blocks, each the serial nearest to the ack's (as the analyzer reads them):
 * blocks lie within a window of the ack, and an edge alone must not move the space's reference. */
static void blocks_near(guint64 cum, const guint32 *left, const guint32 *right, guint n, ival_t *out)
{
    for (guint i = 0; i < n; i++)
        out[i] = (ival_t){serial_near(cum, left[i]), serial_near(cum, right[i])};
}

static void analyze_tcp(const tcp_seg_t *s, packet_info *pinfo, guint32 payload_len, tcp_conn_t *c, int from,
                        frame_result_t *fr)
{
    flow_dir_t *mine = &c->dir[from], *peer = &c->dir[1 - from];
    guint64 seq;
    if (payload_len && rtxq_unwrap(fr, mine, "sequence number", s->seq, &seq))
        rtxq_on_data(fr, mine, seq, seq + payload_len, payload_len);
    if (s->nr_overruns)
        rules_raise(fr, TN05, FALSE, "NR-SACK option length runs past the end of the TCP options");
    if (s->has_nr && !s->nr.permitted) {
        gboolean handshake = c->syn_seen[0] && c->syn_seen[1];
        if (!(c->nr_permitted[0] && c->nr_permitted[1]))
            rules_raise(fr, TN01, !handshake, "NR-SACK block option without NR-SACK-Permitted on both SYN and SYN-ACK");
        if (s->nr.bad_length)
            rules_raise(fr, TN05, FALSE, "NR-SACK option length is not 4 + 8n with n = 1..4; its blocks are not analyzed");
        for (guint i = 0; i < s->nr.n_blocks; i++) {
            if ((gint32)(s->nr.right[i] - s->nr.left[i]) <= 0)
                rules_raise(fr, TN05, FALSE, "NR-SACK block %u: left %u >= right %u", i + 1, s->nr.left[i], s->nr.right[i]);
            else if ((s->flags & TCP_FLAG_ACK) && (gint32)(s->nr.left[i] - s->ack) <= 0)
                rules_raise(fr, TN05, FALSE, "NR-SACK block %u (%u-%u) at or below the ack %u", i + 1, s->nr.left[i],
                            s->nr.right[i], s->ack);
        }
        for (guint i = 0; i < s->nr.n_blocks; i++)
            for (guint j = 0; j < s->n_sack; j++)
                if ((gint32)(s->nr.left[i] - s->sack_right[j]) < 0 && (gint32)(s->sack_left[j] - s->nr.right[i]) < 0) {
                    rules_raise(fr, TN02, FALSE, "SACK block %u-%u and NR-SACK block %u-%u overlap", s->sack_left[j],
                                s->sack_right[j], s->nr.left[i], s->nr.right[i]);
                    i = s->nr.n_blocks;
                    break;
                }
        peer->nr_mode = TRUE;
    }
    if (!(s->flags & TCP_FLAG_ACK) || peer->released)
        return;

    guint64 cum;
    ival_t sack[TCP_MAX_BLOCKS], nr_opt[TCP_MAX_BLOCKS], nr[2 * TCP_MAX_BLOCKS];
    if (!rtxq_unwrap(fr, peer, "ack", s->ack, &cum))
        return;
    blocks_near(cum, s->sack_left, s->sack_right, s->n_sack, sack);
    /* an NR-SACK option that fails its own length check feeds nothing (docs/scoreboard.md); the
     * segment's ack then says nothing reliable about non-renegable data either */
    gboolean nr_usable = s->has_nr && !s->nr.permitted && !s->nr.bad_length;
    guint n_nr_opt = nr_usable ? s->nr.n_blocks : 0;
    blocks_near(cum, s->nr.left, s->nr.right, n_nr_opt, nr_opt);
    /* never-renege receiver (decisions 9): its SACK blocks are non-renegable */
    gboolean never_renege = c->nr_permitted[from] && (c->nr_flags[from] & 0x01);
    guint n_sack = never_renege ? 0 : s->n_sack, n_nr = 0;
    if (never_renege)
        for (guint i = 0; i < s->n_sack; i++)
            nr[n_nr++] = sack[i];
    for (guint i = 0; i < n_nr_opt; i++)
        nr[n_nr++] = nr_opt[i];
    sb_ack_facts_t res;
    gboolean nr_bad = s->has_nr && !s->nr.permitted && s->nr.bad_length;
    if (!peer->sb.have_data) /* the SYN-ACK, or a capture that starts mid-connection */
        rtxq_ack_before_data(fr, peer, cum, sack, n_sack, nr, n_nr);
    else
        rtxq_on_ack(fr, peer, cum, sack, n_sack, nr, n_nr, nr_bad ? REVOKE_NONE : REVOKE_IN_SPAN, 0, &res);
}

/* RST, or a FIN each way each acked by the other end, ends the connection (or subflow). */
static void track_end(tcp_conn_t *c, const tcp_seg_t *s, guint32 payload_len, int from)
{
    if (c->ended)
        return;
    if (s->flags & TCP_FLAG_FIN) {
        c->fin_seen[from] = TRUE;
        c->fin_seq[from] = s->seq + payload_len;
    }
    int peer = 1 - from;
    if ((s->flags & TCP_FLAG_ACK) && c->fin_seen[peer] && (gint32)(s->ack - c->fin_seq[peer]) > 0)
        c->fin_acked[peer] = TRUE;
    if ((s->flags & TCP_FLAG_RST) || (c->fin_acked[0] && c->fin_acked[1]))
        end_conn(c);
}

void tcp_dissect(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, frame_result_t *fr)
{
    tcp_seg_t s;
    if (!parse_segment(tvb, &s)) {
        rules_raise(fr, GEN01, FALSE, "TCP header truncated or bad data offset");
        return;
    }
    /* as Wireshark's tcp.len: what IP says follows the header (a snap length may cut the bytes short) */
    guint reported = tvb_reported_length(tvb);
    guint32 payload_len = reported > s.hlen ? reported - s.hlen : 0;
    int from = 0;
    tcp_conn_t *c = find_conn(pinfo, &s, fr != NULL, &from);
    if (!c) {
        /* shown again after its connection ended: the DSS fields need no state */
        static tcp_conn_t no_state;
        if (!fr && mptcp_options_present(&s))
            mptcp_segment(tvb, pinfo, tree, &s, payload_len, &no_state, 0, NULL);
        return;
    }
    if (fr) {
        open_flow_touch(tcp_open_flow(c), payload_len > 0);
        gboolean syn = s.flags & TCP_FLAG_SYN;
        if (syn)
            handshake_step(&c->hs, (s.flags & TCP_FLAG_ACK) ? 1 : 0, pinfo);
        else if ((s.flags & TCP_FLAG_ACK) && from == 0)
            handshake_step(&c->hs, 2, pinfo);
        if (syn) {
            int ep = (s.flags & TCP_FLAG_ACK) ? 1 : 0;
            c->syn_seen[ep] = TRUE;
            c->nr_permitted[from] = s.has_nr && s.nr.permitted;
            c->nr_flags[from] = c->nr_permitted[from] ? s.nr.flags : 0;
            c->isn_known[from] = TRUE;
            c->isn[from] = s.seq;
        }
        if (!c->is_mptcp && !c->dir[0].protocol) {
            if (mptcp_options_present(&s))
                c->is_mptcp = TRUE;
            else
                init_tcp_dirs(c);
        }
        if (syn && c->dir[0].protocol && !c->is_mptcp) {
            /* both ends permitted NR-SACK: the RtxQ is that of an NR-SACK sender */
            gboolean negotiated = c->nr_permitted[0] && c->nr_permitted[1];
            c->dir[0].nr_mode |= negotiated;
            c->dir[1].nr_mode |= negotiated;
            /* the ISN anchors the direction: its first byte follows the SYN (docs/scoreboard.md) */
            serial_anchor(&c->dir[from].sb.space, s.seq + 1);
        }
    }
    if (c->is_mptcp) {
        mptcp_segment(tvb, pinfo, tree, &s, payload_len, c, from, fr);
    } else if (fr) {
        fr->has_stream = TRUE;
        fr->stream = c->stream;
        analyze_tcp(&s, pinfo, payload_len, c, from, fr);
    }
    if (fr)
        track_end(c, &s, payload_len, from);
}
