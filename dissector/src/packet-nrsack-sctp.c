/* SPDX-License-Identifier: GPL-2.0-or-later */
/* SCTP: NR-SACK / SACK / DATA events, Supported Extensions negotiation and FSACK chunks.
 * SCTP's chunk switch is closed to plugins, so plugin.c hands us the bytes Wireshark's SCTP dissector
 * had and we re-read them here: decode fields on every pass, analysis once (fr != NULL). */
#include "nrsack.h"

#include <epan/address.h>
#include <epan/to_str.h>
#include <epan/wmem_scopes.h>

#define CHUNK_DATA 0x00
#define CHUNK_INIT 0x01
#define CHUNK_INIT_ACK 0x02
#define CHUNK_SACK 0x03
#define CHUNK_ABORT 0x06
#define CHUNK_SHUTDOWN_COMPLETE 0x0E
#define CHUNK_COOKIE_ECHO 0x0A
#define CHUNK_NR_SACK 0x10
#define FSACK_MAX_UPDATE_INTERVAL_NS G_GINT64_CONSTANT(1000000000)
#define PARAM_IPV4 5
#define PARAM_IPV6 6
#define PARAM_SUPPORTED_EXT 0x8008
#define MAX_ADDRS 8
#define MAX_FSACK_TS 32
#define MAX_BLOCKS 256

typedef struct {
    open_flow_t open;         /* first: the budget's lists hold the association by it */
    guint32 stream;
    guint16 port[2];          /* endpoint 0: INIT sender (or first data sender seen) */
    guint32 tag[2];
    gboolean tag_known[2];
    gboolean init_seen, init_ack_seen;
    gboolean ext_nr[2], ext_fsack[2];  /* listed in INIT (0) / INIT-ACK (1) */
    handshake_t hs;
    address addrs[2][MAX_ADDRS];
    guint n_addrs[2];
    flow_dir_t dir[2];                 /* dir[i]: data sent by endpoint i */
    guint32 fsack_ts[MAX_FSACK_TS];
    guint n_fsack_ts;
    gboolean first_fsack_ack_seen;
    address first_fsack_ack_src;
    gboolean fsack_path_set[2];        /* FSACK path of the acks endpoint i sends */
    address fsack_path[2];
    gboolean complete_seen[2], data_seen[2]; /* FS-05: endpoint i's last FSACK-COMPLETE and DATA */
    gint64 complete_ns[2], last_data_ns[2];
} sctp_assoc_t;

static wmem_map_t *assoc_by_endpoint; /* (port << 32 | tag) -> assoc: the endpoint owning the tag */
static wmem_map_t *assoc_pending;     /* (src port << 16 | dst port) -> assoc whose dst tag is unknown */

static gint64 endpoint_id(guint16 port, guint32 tag)
{
    return ((gint64)port << 32) | tag;
}

static gint64 *endpoint_key(guint16 port, guint32 tag)
{
    gint64 *k = wmem_new(wmem_file_scope(), gint64);
    *k = endpoint_id(port, tag);
    return k;
}

static gpointer lookup_endpoint(guint16 port, guint32 tag)
{
    gint64 k = endpoint_id(port, tag);
    return wmem_map_lookup(assoc_by_endpoint, &k);
}

void sctp_init_state(void)
{
    assoc_by_endpoint = wmem_map_new(wmem_file_scope(), g_int64_hash, g_int64_equal);
    assoc_pending = wmem_map_new(wmem_file_scope(), g_direct_hash, g_direct_equal);
}

static void learn_tag(sctp_assoc_t *a, int ep, guint32 tag)
{
    if (a->tag_known[ep])
        return;
    a->tag_known[ep] = TRUE;
    a->tag[ep] = tag;
    wmem_map_insert(assoc_by_endpoint, endpoint_key(a->port[ep], tag), a);
}

static void add_addr(sctp_assoc_t *a, int ep, const address *addr)
{
    for (guint i = 0; i < a->n_addrs[ep]; i++)
        if (addresses_equal(&a->addrs[ep][i], addr))
            return;
    if (a->n_addrs[ep] < MAX_ADDRS)
        copy_address_wmem(wmem_file_scope(), &a->addrs[ep][a->n_addrs[ep]++], addr);
}

static void finish_assoc(open_flow_t *f);

static sctp_assoc_t *new_assoc(packet_info *pinfo, guint16 sport, guint16 dport)
{
    sctp_assoc_t *a = wmem_new0(wmem_file_scope(), sctp_assoc_t);
    a->open.finish = finish_assoc;
    a->stream = nrsack_new_stream_index();
    a->port[0] = sport;
    a->port[1] = dport;
    a->hs.vantage = VANTAGE_UNKNOWN;
    for (int i = 0; i < 2; i++) {
        flow_dir_init(&a->dir[i], a->stream, i, "sctp", TRUE, NR04, NR03);
        a->dir[i].vantage = &a->hs.vantage;
    }
    flow_dir_set_endpoints(&a->dir[0], wmem_file_scope(), &pinfo->net_src, sport, &pinfo->net_dst, dport);
    flow_dir_set_endpoints(&a->dir[1], wmem_file_scope(), &pinfo->net_dst, dport, &pinfo->net_src, sport);
    return a;
}

/* Finds (or creates) the association of a packet; *from gets the sending endpoint's index. */
static sctp_assoc_t *find_assoc(packet_info *pinfo, guint16 sport, guint16 dport, guint32 vtag,
                                gboolean is_init, guint32 init_tag, int *from)
{
    sctp_assoc_t *a;
    if (is_init) {
        a = (sctp_assoc_t *)lookup_endpoint(sport, init_tag);
        if (!a) {
            a = new_assoc(pinfo, sport, dport);
            learn_tag(a, 0, init_tag);
        }
        *from = 0;
        return a;
    }
    a = (sctp_assoc_t *)lookup_endpoint(dport, vtag);
    if (a) {
        *from = (a->tag_known[1] && a->tag[1] == vtag && a->port[1] == dport) ? 0 : 1;
        return a;
    }
    guint key = ((guint)sport << 16) | dport;
    a = (sctp_assoc_t *)wmem_map_lookup(assoc_pending, GUINT_TO_POINTER(key));
    if (a) {
        /* the reverse direction of an association first seen mid-stream */
        wmem_map_remove(assoc_pending, GUINT_TO_POINTER(key));
        *from = 1;
        learn_tag(a, 0, vtag);
        return a;
    }
    a = new_assoc(pinfo, sport, dport);
    learn_tag(a, 1, vtag);
    wmem_map_insert(assoc_pending, GUINT_TO_POINTER(((guint)dport << 16) | sport), a);
    *from = 0;
    return a;
}

/* The association ended (SHUTDOWN-COMPLETE, ABORT): its scoreboards go and it leaves the lookups, so a
 * later packet with its tags starts a new one, as a capture starting mid-association would (decisions.md
 * 44); the frames keep what they showed (their records point at its directions, so it stays). */
static void end_assoc(sctp_assoc_t *a)
{
    for (int ep = 0; ep < 2; ep++) {
        gint64 k = endpoint_id(a->port[ep], a->tag[ep]);
        if (a->tag_known[ep] && wmem_map_lookup(assoc_by_endpoint, &k) == a)
            wmem_map_remove(assoc_by_endpoint, &k);
        guint pending = ((guint)a->port[1 - ep] << 16) | a->port[ep];
        if (wmem_map_lookup(assoc_pending, GUINT_TO_POINTER(pending)) == a)
            wmem_map_remove(assoc_pending, GUINT_TO_POINTER(pending));
    }
    open_flow_remove(&a->open);
    flow_dir_release(&a->dir[0]);
    flow_dir_release(&a->dir[1]);
}

/* The budget of open flows finishes the association early (decisions.md 84). */
static void finish_assoc(open_flow_t *f)
{
    end_assoc((sctp_assoc_t *)f);
}

/* ---- INIT / INIT-ACK ---- */

static void dissect_init_params(tvbuff_t *tvb, int off, int end, packet_info *pinfo, proto_tree *tree,
                                sctp_assoc_t *a, int ep, frame_result_t *fr)
{
    while (off + 4 <= end) {
        guint16 type = tvb_get_ntohs(tvb, off), len = tvb_get_ntohs(tvb, off + 2);
        if (len < 4 || off + len > end) {
            rules_raise(fr, GEN01, FALSE, "INIT parameter at offset %d has bad length %u", off, len);
            return;
        }
        if (type == PARAM_SUPPORTED_EXT) {
            gboolean nr = FALSE, fs = FALSE;
            for (int i = off + 4; i < off + len; i++) {
                guint8 ct = tvb_get_uint8(tvb, i);
                nr |= ct == CHUNK_NR_SACK;
                fs |= ct == nrsack_prefs.fsack_init;
            }
            nrsack_tree_sctp_extensions(tree, tvb, off, len, nr, fs);
            if (a) {
                a->ext_nr[ep] = nr;
                a->ext_fsack[ep] = fs;
            }
        } else if (a && (type == PARAM_IPV4 && len == 8)) {
            address addr;
            set_address_tvb(&addr, AT_IPv4, 4, tvb, off + 4);
            add_addr(a, ep, &addr);
        } else if (a && (type == PARAM_IPV6 && len == 20)) {
            address addr;
            set_address_tvb(&addr, AT_IPv6, 16, tvb, off + 4);
            add_addr(a, ep, &addr);
        }
        off += (len + 3) & ~3;
    }
}

/* ---- SACK / NR-SACK ---- */

/* Reads and checks one block list (NR-05, NR-08); returns the blocks as unwrapped [lo, hi). */
static guint read_blocks(tvbuff_t *tvb, int off, guint n, guint64 cum_tsn, const char *list,
                         ival_t *out, frame_result_t *fr)
{
    guint kept = 0;
    guint32 prev_end = 0;
    for (guint i = 0; i < n; i++, off += 4) {
        guint16 start = tvb_get_ntohs(tvb, off), end = tvb_get_ntohs(tvb, off + 2);
        if (start < 2 || start > end)
            rules_raise(fr, NR05, FALSE, "%s block %u is %u-%u (Start must be >= 2 and <= End)", list, i + 1, start, end);
        else if (i && start <= prev_end)
            rules_raise(fr, NR05, FALSE, "%s block %u (%u-%u) is not above the previous one", list, i + 1, start, end);
        else if (i && start == prev_end + 1)
            rules_raise(fr, NR08, FALSE, "%s blocks %u and %u touch (%u-%u): should be one block", list, i, i + 1, prev_end, start);
        if (start <= end) {
            if (kept < MAX_BLOCKS)
                out[kept++] = (ival_t){cum_tsn + start, cum_tsn + end + 1};
            prev_end = MAX(prev_end, end);
        }
    }
    return kept;
}

static void analyze_sack(tvbuff_t *tvb, int off, guint8 type, guint16 len, packet_info *pinfo,
                         sctp_assoc_t *a, int from, frame_result_t *fr)
{
    gboolean nr_sack = type == CHUNK_NR_SACK;
    int hdr = nr_sack ? 20 : 16;
    if (len < hdr) {
        rules_raise(fr, GEN01, FALSE, "%s chunk too short (%u bytes)", nr_sack ? "NR-SACK" : "SACK", len);
        return;
    }
    flow_dir_t *d = &a->dir[1 - from]; /* the acks of endpoint `from` are about the other's data */
    guint32 cum = tvb_get_ntohl(tvb, off + 4);
    guint n_r = tvb_get_ntohs(tvb, off + 12), n_nr = 0, n_dup;
    if (nr_sack) {
        n_nr = tvb_get_ntohs(tvb, off + 14);
        n_dup = tvb_get_ntohs(tvb, off + 16);
    } else {
        n_dup = tvb_get_ntohs(tvb, off + 14);
    }
    guint need = hdr + 4 * (n_r + n_nr + n_dup);
    if (need != len) {
        /* counts the chunk cannot hold: nothing of it is trusted, so nothing reaches the scoreboard */
        rules_raise(fr, nr_sack ? NR05 : GEN01, FALSE, "block counts (%u R, %u NR, %u dup) need %u bytes, chunk has %u; not analyzed",
                    n_r, n_nr, n_dup, need, len);
        return;
    }
    gboolean handshake = a->init_seen && a->init_ack_seen;
    if (nr_sack) {
        d->nr_mode = TRUE;
        if (!(a->ext_nr[0] && a->ext_nr[1]))
            rules_raise(fr, NR01, !handshake, "NR-SACK although INIT and INIT-ACK did not both list 0x10");
    } else if (a->ext_nr[0] && a->ext_nr[1]) {
        rules_raise(fr, NR06, FALSE, "SACK sent although NR-SACK was negotiated");
    }
    if (a->fsack_path_set[from] && !addresses_equal(&pinfo->net_src, &a->fsack_path[from]))
        rules_raise(fr, FS04, FALSE, "%s sent from %s, FSACK path is %s", nr_sack ? "NR-SACK" : "SACK",
                    address_to_str(pinfo->pool, &pinfo->net_src), address_to_str(pinfo->pool, &a->fsack_path[from]));

    guint64 cum64;
    if (!rtxq_unwrap(fr, d, "cumulative TSN ack", cum, &cum64))
        return;
    ival_t *r = wmem_alloc_array(pinfo->pool, ival_t, MAX_BLOCKS), *nr = wmem_alloc_array(pinfo->pool, ival_t, MAX_BLOCKS);
    guint kr = read_blocks(tvb, off + hdr, n_r, cum64, "R gap", r, fr);
    guint knr = read_blocks(tvb, off + hdr + 4 * n_r, n_nr, cum64, "NR gap", nr, fr);
    sb_ack_facts_t res;
    /* the path: the ack's address pair (CMT acks return on several) */
    guint64 path = add_address_to_hash64(add_address_to_hash64(0, &pinfo->net_src), &pinfo->net_dst);
    rtxq_on_ack(fr, d, cum64 + 1, r, kr, nr, knr, nr_sack ? REVOKE_ALL : REVOKE_NONE, path, &res);
    if (res.r_and_nr)
        rules_raise(fr, NR02, FALSE, "a TSN lies in both an R and an NR gap block");
    if (res.stale)
        rules_raise(fr, NR07, FALSE, "cumulative TSN ack %u is below %u", cum, (guint32)(d->sb.cum - 1));
    /* an ack before any DATA of the capture also covers TSNs it never saw sent (the core judges only
     * after some data); a note when the direction's initial TSN (INIT / INIT-ACK) was not captured */
    if (res.beyond_sent || (!d->released && !d->sb.have_data))
        rules_raise(fr, NR09, !(d->sender_side == 0 ? a->init_seen : a->init_ack_seen),
                    "ack covers TSNs never sent (highest sent %u)", (guint32)(d->sb.snd_max - 1));
}

/* ---- FSACK ---- */

static gboolean fsack_type(guint8 t)
{
    return t == nrsack_prefs.fsack_init || t == nrsack_prefs.fsack_ack || t == nrsack_prefs.fsack_complete;
}

static void dissect_fsack(tvbuff_t *tvb, int off, guint8 type, guint16 len, packet_info *pinfo, proto_tree *tree,
                          sctp_assoc_t *a, int from, frame_result_t *fr)
{
    const char *name = type == nrsack_prefs.fsack_init ? "FSACK-INIT" : type == nrsack_prefs.fsack_ack ? "FSACK-ACK" : "FSACK-COMPLETE";
    proto_tree *st = nrsack_tree_fsack_chunk(tree, tvb, off, len, name, type);
    gboolean handshake = a && a->init_seen && a->init_ack_seen;
    if (a && !(a->ext_fsack[0] && a->ext_fsack[1]))
        rules_raise(fr, FS06, !handshake, "%s although INIT and INIT-ACK did not both list 0x%02X", name, nrsack_prefs.fsack_init);

    if (type != nrsack_prefs.fsack_complete) {
        if (len != 8) {
            rules_raise(fr, GEN01, FALSE, "%s chunk length %u, expected 8", name, len);
            if (len < 8)
                return;
        }
        guint32 ts = tvb_get_ntohl(tvb, off + 4);
        nrsack_tree_fsack_timestamp(st, tvb, off + 4);
        if (!a)
            return;
        if (type == nrsack_prefs.fsack_init) {
            if (a->n_fsack_ts < MAX_FSACK_TS)
                a->fsack_ts[a->n_fsack_ts++] = ts;
            else
                a->fsack_ts[a->n_fsack_ts++ % MAX_FSACK_TS] = ts;
            a->first_fsack_ack_seen = FALSE;
            return;
        }
        gboolean known = FALSE;
        for (guint i = 0; i < MIN(a->n_fsack_ts, MAX_FSACK_TS); i++)
            known |= a->fsack_ts[i] == ts;
        if (!known) {
            rules_raise(fr, FS01, FALSE, "FSACK-ACK timestamp %u was in no earlier FSACK-INIT", ts);
            return;
        }
        /* capture at the sender: arrival time in ms minus the timestamp, mod 2^32 */
        guint64 now_ms = (guint64)pinfo->abs_ts.secs * 1000 + pinfo->abs_ts.nsecs / 1000000;
        fr->has_rtt = TRUE;
        fr->rtt_ms = (guint32)now_ms - ts;
        if (!a->first_fsack_ack_seen) {
            a->first_fsack_ack_seen = TRUE;
            copy_address_wmem(wmem_file_scope(), &a->first_fsack_ack_src, &pinfo->net_src);
        }
        return;
    }

    /* FSACK-COMPLETE: one address parameter */
    address addr = ADDRESS_INIT_NONE;
    guint16 ptype = len >= 8 ? tvb_get_ntohs(tvb, off + 4) : 0, plen = len >= 8 ? tvb_get_ntohs(tvb, off + 6) : 0;
    if (ptype == PARAM_IPV4 && plen == 8 && len >= 12) {
        nrsack_tree_fsack_address(st, tvb, off + 8, FALSE);
        set_address_tvb(&addr, AT_IPv4, 4, tvb, off + 8);
    } else if (ptype == PARAM_IPV6 && plen == 20 && len >= 24) {
        nrsack_tree_fsack_address(st, tvb, off + 8, TRUE);
        set_address_tvb(&addr, AT_IPv6, 16, tvb, off + 8);
    } else {
        rules_raise(fr, GEN01, FALSE, "FSACK-COMPLETE without a valid address parameter");
        return;
    }
    if (!a)
        return;
    if (a->first_fsack_ack_seen && !addresses_equal(&addr, &a->first_fsack_ack_src))
        rules_raise(fr, FS03, FALSE, "FSACK-COMPLETE names %s, first FSACK-ACK came from %s",
                    address_to_str(pinfo->pool, &addr), address_to_str(pinfo->pool, &a->first_fsack_ack_src));
    int receiver = 1 - from;
    if (a->fsack_path_set[receiver])
        free_address_wmem(wmem_file_scope(), &a->fsack_path[receiver]);
    copy_address_wmem(wmem_file_scope(), &a->fsack_path[receiver], &addr);
    a->fsack_path_set[receiver] = TRUE;
    a->complete_seen[from] = TRUE;
    a->complete_ns[from] = nrsack_time_ns(pinfo);
}

/* FS-05 on the first DATA of each whole update interval after the sender's last FSACK-COMPLETE
 * (decisions 20), judged against the sender's previous DATA. */
static void check_fsack_update_interval(packet_info *pinfo, sctp_assoc_t *a, int from, frame_result_t *fr)
{
    gint64 now = nrsack_time_ns(pinfo);
    if (a->complete_seen[from] && a->data_seen[from]) {
        gint64 since = a->complete_ns[from];
        gint64 overdue = (now - since) / FSACK_MAX_UPDATE_INTERVAL_NS;
        gint64 before = MAX(0, (a->last_data_ns[from] - since) / FSACK_MAX_UPDATE_INTERVAL_NS);
        if (overdue >= 1 && overdue > before)
            rules_raise(fr, FS05, FALSE, "DATA %.3f s after the last FSACK-COMPLETE; the path must be confirmed every 1 s",
                        (double)(now - since) / 1e9);
    }
    a->data_seen[from] = TRUE;
    a->last_data_ns[from] = now;
}

/* ---- the packet ---- */

void sctp_dissect(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, frame_result_t *fr)
{
    guint reported = tvb_reported_length(tvb), captured = tvb_captured_length(tvb);
    if (captured < 12) {
        rules_raise(fr, GEN01, FALSE, "SCTP common header truncated");
        return;
    }
    guint16 sport = tvb_get_ntohs(tvb, 0), dport = tvb_get_ntohs(tvb, 2);
    guint32 vtag = tvb_get_ntohl(tvb, 4);

    sctp_assoc_t *a = NULL;
    int from = 0;
    if (fr) {
        gboolean is_init = captured >= 20 && tvb_get_uint8(tvb, 12) == CHUNK_INIT;
        a = find_assoc(pinfo, sport, dport, vtag, is_init, is_init ? tvb_get_ntohl(tvb, 16) : 0, &from);
        fr->has_stream = TRUE;
        fr->stream = a->stream;
        add_addr(a, from, &pinfo->net_src);
        open_flow_touch(&a->open, a->dir[0].sb.have_data || a->dir[1].sb.have_data);
    }

    gboolean data_checked = FALSE;
    guint off = 12;
    while (off + 4 <= reported) {
        if (off + 4 > captured) {
            rules_raise(fr, GEN01, FALSE, "chunk header at offset %u truncated by the capture", off);
            return;
        }
        guint8 type = tvb_get_uint8(tvb, off);
        guint16 len = tvb_get_ntohs(tvb, off + 2);
        if (len < 4 || off + len > reported) {
            rules_raise(fr, GEN01, FALSE, "chunk type %u at offset %u has bad length %u", type, off, len);
            return;
        }
        if (off + len > captured) {
            rules_raise(fr, GEN01, FALSE, "chunk type %u at offset %u truncated by the capture", type, off);
            return;
        }
        if (a && (type == CHUNK_INIT || type == CHUNK_INIT_ACK || type == CHUNK_COOKIE_ECHO))
            handshake_step(&a->hs, type == CHUNK_INIT ? 0 : type == CHUNK_INIT_ACK ? 1 : 2, pinfo);
        if ((type == CHUNK_INIT || type == CHUNK_INIT_ACK) && len >= 20) {
            int ep = type == CHUNK_INIT ? 0 : 1;
            if (a) {
                if (type == CHUNK_INIT)
                    a->init_seen = TRUE;
                else {
                    a->init_ack_seen = TRUE;
                    learn_tag(a, from, tvb_get_ntohl(tvb, off + 4));
                }
                if (from != ep)
                    a = NULL; /* an INIT-ACK from the initiator: collision, leave the state alone */
                else /* the sender's initial TSN anchors its direction (docs/scoreboard.md "anchor") */
                    serial_anchor(&a->dir[ep].sb.space, tvb_get_ntohl(tvb, off + 16));
            }
            dissect_init_params(tvb, off + 20, off + len, pinfo, tree, a, ep, fr);
            if (a && type == CHUNK_INIT_ACK && a->ext_nr[0] && a->ext_nr[1])
                a->dir[0].nr_mode = a->dir[1].nr_mode = TRUE;
        } else if (type == CHUNK_DATA && a) {
            if (len < 16) {
                rules_raise(fr, GEN01, FALSE, "DATA chunk too short (%u bytes)", len);
            } else {
                flow_dir_t *d = &a->dir[from];
                guint64 tsn;
                if (!data_checked) {
                    check_fsack_update_interval(pinfo, a, from, fr);
                    /* the budget's lists: from this packet on, a flow with data (as TCP's segment with payload) */
                    if (!a->open.has_data)
                        open_flow_touch(&a->open, TRUE);
                }
                data_checked = TRUE;
                if (rtxq_unwrap(fr, d, "TSN", tvb_get_ntohl(tvb, off + 4), &tsn)) {
                    rtxq_data_path(d, add_address_to_hash64(add_address_to_hash64(0, &pinfo->net_src), &pinfo->net_dst));
                    rtxq_on_data(fr, d, tsn, tsn + 1, len - 16);
                }
            }
        } else if ((type == CHUNK_SACK || type == CHUNK_NR_SACK) && a) {
            analyze_sack(tvb, off, type, len, pinfo, a, from, fr);
        } else if (fsack_type(type)) {
            dissect_fsack(tvb, off, type, len, pinfo, tree, a, from, fr);
        } else if ((type == CHUNK_SHUTDOWN_COMPLETE || type == CHUNK_ABORT) && a) {
            end_assoc(a);
            a = NULL; /* the packet's later chunks come after the end: not analyzed, as in the analyzer */
        }
        off += (len + 3) & ~3u;
    }
}
