/* SPDX-License-Identifier: GPL-2.0-or-later */
/* packet-nrsack.c
 * NR-SACK analysis of SCTP, TCP and MPTCP: registration (protocol, fields, subtrees, expert info,
 * preferences), the items of every field, the rules' findings, the handles that follow Wireshark's SCTP
 * and TCP dissectors with ours on the same bytes, and the per-frame result cache that makes every pass
 * show the same analysis. The other packet-nrsack-*.c files decode and analyze; only this one adds items.
 *
 * Fields: docs/fields.md is their table (names, labels, descriptions); the Lua plugin registers the same
 * ones, and tests/test_fields_table.py checks both against it through `tshark -G fields`. */
#include "nrsack.h"

#include <epan/prefs.h>
#include <epan/proto.h>
#include <epan/to_str.h>
#include <epan/wmem_scopes.h>
#include <epan/exceptions.h>
#include <epan/ipproto.h>
#include <stdarg.h>
#include <wiretap/wtap.h>

#include "tcp.h"

#ifndef PLUGIN_VERSION
#error "PLUGIN_VERSION comes from VERSION (CMakeLists.txt)"
#endif

WS_DLL_PUBLIC_DEF const gchar plugin_version[] = PLUGIN_VERSION;
WS_DLL_PUBLIC_DEF const int plugin_want_major = WIRESHARK_VERSION_MAJOR;
WS_DLL_PUBLIC_DEF const int plugin_want_minor = WIRESHARK_VERSION_MINOR;
WS_DLL_PUBLIC void plugin_register(void);
#if NRSACK_HAS_PLUGIN_DESCRIBE
WS_DLL_PUBLIC uint32_t plugin_describe(void);

uint32_t plugin_describe(void)
{
    return WS_PLUGIN_DESC_DISSECTOR | WS_PLUGIN_DESC_TAP_LISTENER;
}
#endif

static int proto_nrsack = -1;

static int hf_nrsack_fsack_type = -1;
static int hf_nrsack_fsack_timestamp = -1;
static int hf_nrsack_fsack_address_v4 = -1;
static int hf_nrsack_fsack_address_v6 = -1;
static int hf_nrsack_fsack_rtt_ms = -1;
static int hf_nrsack_sctp_ext_nr_sack = -1;
static int hf_nrsack_sctp_ext_fsack = -1;
static int hf_nrsack_tcp_exid = -1;
static int hf_nrsack_tcp_permitted = -1;
static int hf_nrsack_tcp_flags = -1;
static int hf_nrsack_tcp_never_renege = -1;
static int hf_nrsack_tcp_block_count = -1;
static int hf_nrsack_tcp_block_left = -1;
static int hf_nrsack_tcp_block_right = -1;
static int hf_nrsack_mptcp_capable = -1;
static int hf_nrsack_mptcp_wide = -1;
static int hf_nrsack_mptcp_block_count = -1;
static int hf_nrsack_mptcp_block_start = -1;
static int hf_nrsack_mptcp_block_end = -1;
static int hf_nrsack_stream = -1;
static int hf_nrsack_direction = -1;
static int hf_nrsack_rtxq_bytes = -1;
static int hf_nrsack_rtxq_sack_bytes = -1;
static int hf_nrsack_rtxq_nr_acked_bytes = -1;
static int hf_nrsack_rtxq_nr_bytes = -1;
static int hf_nrsack_rtxq_sacked_bytes = -1;
static int hf_nrsack_rtxq_whatif_bytes = -1;
static int hf_nrsack_freed_bytes = -1;
static int hf_nrsack_blocked = -1;
static int hf_nrsack_sndbuf_bytes = -1;
static int hf_nrsack_sndbuf_source = -1;
static int hf_nrsack_sndbuf_verdict = -1;
static int hf_nrsack_sndbuf_reason = -1;
static int hf_nrsack_sndbuf_waits = -1;
static int hf_nrsack_gap_open = -1;
static int hf_nrsack_revoked = -1;

static int ett_nrsack = -1;
static int ett_nrsack_option = -1;
static int ett_nrsack_fsack = -1;

static expert_field ei_nrsack_rule_nr01 = EI_INIT;
static expert_field ei_nrsack_rule_nr01_note = EI_INIT;
static expert_field ei_nrsack_rule_nr02 = EI_INIT;
static expert_field ei_nrsack_rule_nr03 = EI_INIT;
static expert_field ei_nrsack_rule_nr04 = EI_INIT;
static expert_field ei_nrsack_rule_nr04_note = EI_INIT;
static expert_field ei_nrsack_rule_nr05 = EI_INIT;
static expert_field ei_nrsack_rule_nr06 = EI_INIT;
static expert_field ei_nrsack_rule_nr07 = EI_INIT;
static expert_field ei_nrsack_rule_nr08 = EI_INIT;
static expert_field ei_nrsack_rule_nr09 = EI_INIT;
static expert_field ei_nrsack_rule_nr09_note = EI_INIT;
static expert_field ei_nrsack_rule_tn01 = EI_INIT;
static expert_field ei_nrsack_rule_tn01_note = EI_INIT;
static expert_field ei_nrsack_rule_tn02 = EI_INIT;
static expert_field ei_nrsack_rule_tn03 = EI_INIT;
static expert_field ei_nrsack_rule_tn04 = EI_INIT;
static expert_field ei_nrsack_rule_tn04_note = EI_INIT;
static expert_field ei_nrsack_rule_tn05 = EI_INIT;
static expert_field ei_nrsack_rule_mn01 = EI_INIT;
static expert_field ei_nrsack_rule_mn01_note = EI_INIT;
static expert_field ei_nrsack_rule_mn02 = EI_INIT;
static expert_field ei_nrsack_rule_mn03 = EI_INIT;
static expert_field ei_nrsack_rule_mn04 = EI_INIT;
static expert_field ei_nrsack_rule_mn04_note = EI_INIT;
static expert_field ei_nrsack_rule_mn05 = EI_INIT;
static expert_field ei_nrsack_rule_fs01 = EI_INIT;
static expert_field ei_nrsack_rule_fs02 = EI_INIT;
static expert_field ei_nrsack_rule_fs03 = EI_INIT;
static expert_field ei_nrsack_rule_fs04 = EI_INIT;
static expert_field ei_nrsack_rule_fs05 = EI_INIT;
static expert_field ei_nrsack_rule_fs06 = EI_INIT;
static expert_field ei_nrsack_rule_fs06_note = EI_INIT;
static expert_field ei_nrsack_rule_gen01 = EI_INIT;
nrsack_prefs_t nrsack_prefs = {
    .sndbuf = 0,
    .tcp_exid = 0x4E52,
    .fsack_init = 0xA0,
    .fsack_ack = 0xA1,
    .fsack_complete = 0xA2,
    .sctp_udp_port = 9899,
    .max_open_flows = 10000,
};

static int proto_sctp = -1, proto_tcp = -1, proto_icmp = -1, proto_icmpv6 = -1;
static protocol_t *nrsack_protocol;
static dissector_table_t builtin_table;                         /* LAYER_SCTP / LAYER_TCP -> Wireshark's own */
static dissector_handle_t sctp_then_nrsack, tcp_then_nrsack;    /* ours, in their places */
static guint32 next_stream;
static guint sctp_udp_port_registered;
static dissector_handle_t sctp_udp_port_previous;              /* what that port had before */

guint32 nrsack_new_stream_index(void)
{
    return next_stream++;
}

char *nrsack_endpoint_str(wmem_allocator_t *scope, const address *addr, guint16 port)
{
    /* raw SCTP (LINKTYPE_SCTP) names no address: 0.0.0.0, as the analyzer's reader (decisions 43) */
    if (addr->type == AT_NONE)
        return wmem_strdup_printf(scope, "0.0.0.0:%u", port);
    char *a = address_to_str(NULL, addr);
    /* IPv6 in brackets, as the analyzer names endpoints */
    char *s = wmem_strdup_printf(scope, addr->type == AT_IPv6 ? "[%s]:%u" : "%s:%u", a, port);
    wmem_free(NULL, a);
    return s;
}

/* Each frame's record, by frame number, in chunks of RECORDS_PER_CHUNK (no per-frame allocation,
 * no list walk, no copying as the capture grows). */
#define RECORDS_PER_CHUNK 4096
static GPtrArray *record_chunks;

static void init_state(void)
{
    next_stream = 0;
    open_flows_reset();
    if (!record_chunks)
        record_chunks = g_ptr_array_new();
    g_ptr_array_set_size(record_chunks, 0);
    sctp_init_state();
    tcp_init_state();
    mptcp_init_state();
}

/* The records live in the file's memory, which goes with the file; the scoreboards still open are the
 * core's (malloc) and are freed here. */
static void cleanup_state(void)
{
    flow_dirs_release_all();
    tcp_cleanup_state();
    if (record_chunks)
        g_ptr_array_set_size(record_chunks, 0);
}

static frame_record_t *frame_record(guint32 num)
{
    guint c = num / RECORDS_PER_CHUNK;
    if (c >= record_chunks->len)
        g_ptr_array_set_size(record_chunks, c + 1);
    frame_record_t *chunk = (frame_record_t *)g_ptr_array_index(record_chunks, c);
    if (!chunk) {
        chunk = wmem_alloc0_array(wmem_file_scope(), frame_record_t, RECORDS_PER_CHUNK);
        g_ptr_array_index(record_chunks, c) = chunk;
    }
    return &chunk[num % RECORDS_PER_CHUNK];
}

/* the figures are queue sizes; clamp rather than wrap if a corrupt capture makes them huge */
static guint32 clamp32(guint64 v)
{
    return (guint32)MIN(v, G_MAXUINT32);
}

static void keep_update(shown_update_t *k, const rtxq_update_t *u)
{
    *k = (shown_update_t){
        .dir = u->dir->shown,
        .rtxq = clamp32(u->rtxq),
        .rtxq_sack = clamp32(u->fig.rtxq_sack),
        .rtxq_nr = clamp32(u->fig.rtxq_nr),
        .nr_acked = clamp32(u->fig.nr_acked),
        .sacked = clamp32(u->fig.sacked),
        .rtxq_whatif = clamp32(u->fig.rtxq_whatif),
        .freed_bytes = clamp32(u->freed_bytes),
        .new_data_bytes = clamp32(u->new_data_bytes),
        .is_ack = u->is_ack,
        .has_data = u->has_data,
        .blocked = u->blocked,
        .gap_open = u->gap_open,
        .after_new_sack = clamp32(u->after_new[SBE_SACK]),
        .after_new_nr = clamp32(u->after_new[SBE_NR]),
        .n_revoked = u->n_revoked,
        .revoked = u->revoked,
    };
}

static void keep_result(frame_record_t *rec, const frame_result_t *fr)
{
    rec->has_stream = fr->has_stream;
    rec->stream = fr->stream;
    rec->has_rtt = fr->has_rtt;
    rec->rtt_ms = fr->rtt_ms;
    rec->findings = fr->findings;
    rec->n_updates = fr->n_updates;
    if (fr->n_updates)
        rec->updates = wmem_alloc_array(wmem_file_scope(), shown_update_t, fr->n_updates);
    for (guint i = 0; i < fr->n_updates; i++)
        keep_update(&rec->updates[i], &fr->upd[i]);
}

/* ---- items ---- */

static void add_generated_uint(proto_tree *tree, int hf, tvbuff_t *tvb, guint32 value)
{
    proto_item *pi = proto_tree_add_uint(tree, hf, tvb, 0, 0, value);
    proto_item_set_generated(pi);
}

void nrsack_tree_sctp_extensions(proto_tree *tree, tvbuff_t *tvb, int off, int len, gboolean nr_sack, gboolean fsack)
{
    proto_tree_add_boolean(tree, hf_nrsack_sctp_ext_nr_sack, tvb, off, len, nr_sack);
    proto_tree_add_boolean(tree, hf_nrsack_sctp_ext_fsack, tvb, off, len, fsack);
}

proto_tree *nrsack_tree_fsack_chunk(proto_tree *tree, tvbuff_t *tvb, int off, int len, const char *name, guint8 type)
{
    proto_tree *st = proto_tree_add_subtree(tree, tvb, off, len, ett_nrsack_fsack, NULL, name);
    proto_tree_add_uint(st, hf_nrsack_fsack_type, tvb, off, 1, type);
    return st;
}

void nrsack_tree_fsack_timestamp(proto_tree *chunk_tree, tvbuff_t *tvb, int off)
{
    proto_tree_add_item(chunk_tree, hf_nrsack_fsack_timestamp, tvb, off, 4, ENC_BIG_ENDIAN);
}

void nrsack_tree_fsack_address(proto_tree *chunk_tree, tvbuff_t *tvb, int off, gboolean ipv6)
{
    if (ipv6)
        proto_tree_add_item(chunk_tree, hf_nrsack_fsack_address_v6, tvb, off, 16, ENC_NA);
    else
        proto_tree_add_item(chunk_tree, hf_nrsack_fsack_address_v4, tvb, off, 4, ENC_BIG_ENDIAN);
}

void nrsack_tree_tcp_option(proto_tree *tree, tvbuff_t *tvb, guint8 kind, const nr_option_t *o)
{
    int len = tvb_reported_length(tvb);
    proto_item *ti = proto_tree_add_item(tree, proto_nrsack, tvb, 0, len, ENC_NA);
    proto_item_set_text(ti, "NR-SACK %s (kind %u)", o->permitted ? "Permitted" : "blocks", kind);
    proto_tree *st = proto_item_add_subtree(ti, ett_nrsack_option);
    proto_tree_add_item(st, hf_nrsack_tcp_exid, tvb, 2, 2, ENC_BIG_ENDIAN);
    if (o->permitted) {
        proto_tree_add_boolean(st, hf_nrsack_tcp_permitted, tvb, 0, len, TRUE);
        proto_tree_add_item(st, hf_nrsack_tcp_flags, tvb, 4, 1, ENC_BIG_ENDIAN);
        proto_tree_add_boolean(st, hf_nrsack_tcp_never_renege, tvb, 4, 1, o->flags & 0x01);
        proto_tree_add_boolean(st, hf_nrsack_mptcp_capable, tvb, 4, 1, o->flags & 0x02);
    } else {
        proto_tree_add_uint(st, hf_nrsack_tcp_block_count, tvb, 1, 1, o->n_blocks);
        for (guint i = 0; i < o->n_blocks; i++) {
            proto_tree_add_item(st, hf_nrsack_tcp_block_left, tvb, 4 + 8 * i, 4, ENC_BIG_ENDIAN);
            proto_tree_add_item(st, hf_nrsack_tcp_block_right, tvb, 8 + 8 * i, 4, ENC_BIG_ENDIAN);
        }
    }
}

void nrsack_tree_mptcp_blocks(proto_tree *tree, tvbuff_t *tvb, const dss_t *d)
{
    if (!d->has_nr || !tree)
        return;
    int bs = (d->flags & DSS_n) ? 16 : 8, w = bs / 2;
    proto_tree *st = proto_tree_add_subtree(tree, tvb, d->k_off ? d->k_off : 0, 2 + (int)d->n_blocks * bs,
                                            ett_nrsack_option, NULL, "MPTCP DSS NR blocks");
    proto_tree_add_boolean(st, hf_nrsack_mptcp_wide, tvb, d->k_off, 1, (d->flags & DSS_n) != 0);
    if (d->k_off)
        proto_tree_add_uint(st, hf_nrsack_mptcp_block_count, tvb, d->k_off, 1, d->k);
    for (guint i = 0; i < d->n_blocks; i++) {
        proto_tree_add_uint64(st, hf_nrsack_mptcp_block_start, tvb, d->block_off[i], w, d->data_ack + d->start[i]);
        proto_tree_add_uint64(st, hf_nrsack_mptcp_block_end, tvb, d->block_off[i] + w, w, d->data_ack + d->end[i]);
    }
}

/* verdicts as the analyzer's summary says them (sndbuf_verdict) */
static const char *const sbe_verdicts[] = {"held back", "never", "cannot tell"};

/* Which B nrsack.blocked used and how it was obtained (docs/fields.md). */
static void add_sndbuf(proto_tree *tree, tvbuff_t *tvb, packet_info *pinfo, const shown_dir_t *d, const sndbuf_view_t *v)
{
    proto_item *pi;
    if (v->sndbuf)
        add_generated_uint(tree, hf_nrsack_sndbuf_bytes, tvb, v->sndbuf);
    pi = proto_tree_add_string(tree, hf_nrsack_sndbuf_source, tvb, 0, 0,
                               v->given ? "given" : v->whole ? "estimated from the whole capture" : "estimated so far");
    proto_item_set_generated(pi);
    if (v->given)
        return;
    pi = proto_tree_add_string(tree, hf_nrsack_sndbuf_verdict, tvb, 0, 0, sbe_verdicts[v->r.verdict]);
    proto_item_set_generated(pi);
    pi = proto_tree_add_string(tree, hf_nrsack_sndbuf_reason, tvb, 0, 0, rtxq_sndbuf_reason(d, v, pinfo->pool));
    proto_item_set_generated(pi);
    add_generated_uint(tree, hf_nrsack_sndbuf_waits, tvb, (guint32)MIN(v->r.waits, G_MAXUINT32));
}

/* The analysis's figures after this frame, for each direction it touched (generated items). */
static void add_results(proto_tree *tree, tvbuff_t *tvb, packet_info *pinfo, const frame_record_t *rec)
{
    proto_item *pi;
    if (rec->has_stream) {
        pi = proto_tree_add_uint(tree, hf_nrsack_stream, tvb, 0, 0, rec->stream);
        proto_item_set_generated(pi);
    }
    if (rec->has_rtt) {
        pi = proto_tree_add_uint(tree, hf_nrsack_fsack_rtt_ms, tvb, 0, 0, rec->rtt_ms);
        proto_item_set_generated(pi);
    }
    for (guint i = 0; i < rec->n_updates; i++) {
        const shown_update_t *u = frame_record_update(rec, i);
        pi = proto_tree_add_string(tree, hf_nrsack_direction, tvb, 0, 0, u->dir->name);
        proto_item_set_generated(pi);
        add_generated_uint(tree, hf_nrsack_rtxq_bytes, tvb, u->rtxq);
        add_generated_uint(tree, hf_nrsack_rtxq_sack_bytes, tvb, u->rtxq_sack);
        add_generated_uint(tree, hf_nrsack_rtxq_nr_bytes, tvb, u->rtxq_nr);
        add_generated_uint(tree, hf_nrsack_rtxq_nr_acked_bytes, tvb, u->nr_acked);
        add_generated_uint(tree, hf_nrsack_rtxq_sacked_bytes, tvb, u->sacked);
        add_generated_uint(tree, hf_nrsack_rtxq_whatif_bytes, tvb, u->rtxq_whatif);
        if (u->is_ack)
            add_generated_uint(tree, hf_nrsack_freed_bytes, tvb, u->freed_bytes);
        sndbuf_view_t v;
        rtxq_sndbuf_view(u->dir, rec->shown_again, &v);
        if (v.given || v.r.verdict != SBE_CANNOT_TELL) {  /* cannot tell: no verdict on the frame, the reason says why */
            pi = proto_tree_add_boolean(tree, hf_nrsack_blocked, tvb, 0, 0, rtxq_blocked(u->dir, u, pinfo->num, &v));
            proto_item_set_generated(pi);
        }
        add_sndbuf(tree, tvb, pinfo, u->dir, &v);
        pi = proto_tree_add_boolean(tree, hf_nrsack_gap_open, tvb, 0, 0, u->gap_open);
        proto_item_set_generated(pi);
        for (guint k = 0; k < u->n_revoked; k++)
            add_generated_uint(tree, hf_nrsack_revoked, tvb, u->revoked[k]);
    }
}

/* ---- the rules of docs/rules.md: findings are computed once per frame (first pass) and kept in the
 * frame's result, so every later pass shows the same ones ---- */

typedef struct {
    const char *id;           /* "NR-03" */
    expert_field *ei;         /* its finding */
    expert_field *ei_note;    /* its note variant ("cannot be decided from this capture"), or NULL */
    const char *description;  /* both variants' field description (docs/fields.md, as the Lua plugin's) */
} rule_info_t;

static const rule_info_t rule_table[RULE_COUNT] = {
    [NR01] = {"NR-01", &ei_nrsack_rule_nr01, &ei_nrsack_rule_nr01_note,
        "An NR-SACK chunk is sent in an association where INIT and INIT-ACK did not both list 0x10 in Supported Extensions"},
    [NR02] = {"NR-02", &ei_nrsack_rule_nr02, NULL,
        "A TSN lies in both an R gap block and an NR gap block of the same NR-SACK"},
    [NR03] = {"NR-03", &ei_nrsack_rule_nr03, NULL,
        "A TSN NR-acked earlier is neither cum-acked nor NR-acked by a later NR-SACK of the same direction"},
    [NR04] = {"NR-04", &ei_nrsack_rule_nr04, &ei_nrsack_rule_nr04_note,
        "The data sender retransmits a TSN after it has received an NR-SACK or SACK that NR-acked or cum-acked it"},
    [NR05] = {"NR-05", &ei_nrsack_rule_nr05, NULL,
        "A gap block has Start < 2 or Start > End, the blocks of one list are not ascending or overlap, or the counts disagree with the chunk length"},
    [NR06] = {"NR-06", &ei_nrsack_rule_nr06, NULL,
        "A plain SACK is sent after NR-SACK was negotiated"},
    [NR07] = {"NR-07", &ei_nrsack_rule_nr07, NULL,
        "The cumulative TSN ack is lower than an earlier one of the same direction: a reordered or stale ack"},
    [NR08] = {"NR-08", &ei_nrsack_rule_nr08, NULL,
        "Two blocks of one list touch (End + 1 = next Start): legal to decode, but they should have been one block"},
    [NR09] = {"NR-09", &ei_nrsack_rule_nr09, &ei_nrsack_rule_nr09_note,
        "An ack (cum, R or NR block) covers a TSN that was never sent"},
    [TN01] = {"TN-01", &ei_nrsack_rule_tn01, &ei_nrsack_rule_tn01_note,
        "A TCP NR-SACK block option appears without NR-SACK-Permitted on both SYN and SYN-ACK"},
    [TN02] = {"TN-02", &ei_nrsack_rule_tn02, NULL,
        "A byte lies in both a SACK block and an NR-SACK block of the same segment"},
    [TN03] = {"TN-03", &ei_nrsack_rule_tn03, NULL,
        "Bytes NR-acked earlier are neither cum-acked nor NR-acked by a later ack of the same direction"},
    [TN04] = {"TN-04", &ei_nrsack_rule_tn04, &ei_nrsack_rule_tn04_note,
        "The data sender retransmits bytes after they were NR-acked or cum-acked"},
    [TN05] = {"TN-05", &ei_nrsack_rule_tn05, NULL,
        "The NR-SACK option has a wrong length, a block with left >= right, or a block at or below the ack"},
    [MN01] = {"MN-01", &ei_nrsack_rule_mn01, &ei_nrsack_rule_mn01_note,
        "A DSS with flag N appears although the SYN and SYN-ACK of the initial subflow did not both carry NR-SACK-Permitted with flag 0x02"},
    [MN02] = {"MN-02", &ei_nrsack_rule_mn02, NULL,
        "A DSS has flag N without a DATA ACK, or a block count that disagrees with the option length"},
    [MN03] = {"MN-03", &ei_nrsack_rule_mn03, NULL,
        "Data-level bytes NR-acked earlier are neither DATA-ACKed nor NR-acked by a later ack of the same direction"},
    [MN04] = {"MN-04", &ei_nrsack_rule_mn04, &ei_nrsack_rule_mn04_note,
        "The data sender sends data-level bytes again, on any subflow, after they were NR-acked or DATA-ACKed"},
    [MN05] = {"MN-05", &ei_nrsack_rule_mn05, NULL,
        "An MPTCP NR block has Start >= End, or the blocks are not ascending or overlap"},
    [FS01] = {"FS-01", &ei_nrsack_rule_fs01, NULL,
        "An FSACK-ACK carries a timestamp that no earlier FSACK-INIT of the association carried"},
    [FS02] = {"FS-02", &ei_nrsack_rule_fs02, NULL,
        "An FSACK-INIT is answered on fewer return paths than the receiver has addresses"},
    [FS03] = {"FS-03", &ei_nrsack_rule_fs03, NULL,
        "FSACK-COMPLETE names a path other than the one whose FSACK-ACK arrived first"},
    [FS04] = {"FS-04", &ei_nrsack_rule_fs04, NULL,
        "After FSACK-COMPLETE, the receiver sends a SACK or NR-SACK on a path other than the FSACK path"},
    [FS05] = {"FS-05", &ei_nrsack_rule_fs05, NULL,
        "During data transfer the FSACK path is not confirmed or updated within the maximum update interval (1 s by default)"},
    [FS06] = {"FS-06", &ei_nrsack_rule_fs06, &ei_nrsack_rule_fs06_note,
        "FSACK chunks are sent although INIT and INIT-ACK did not both list 0xA0 in Supported Extensions"},
    [GEN01] = {"GEN-01", &ei_nrsack_rule_gen01, NULL,
        "A truncated chunk or a bad length prevents analysis of the packet; analysis continues with the next packet"},
};

const char *rule_name(rule_t rule)
{
    return rule_table[rule].id;
}

void rules_raise(frame_result_t *fr, rule_t rule, gboolean note, const char *fmt, ...)
{
    if (!fr)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *detail = wmem_strdup_vprintf(wmem_file_scope(), fmt, ap);
    va_end(ap);
    finding_t *f = wmem_new0(wmem_file_scope(), finding_t);
    f->rule = rule;
    f->note = note && rule_table[rule].ei_note;
    f->message = wmem_strdup_printf(wmem_file_scope(), "%s: %s", rule_table[rule].id, detail);
    if (fr->last_finding)
        fr->last_finding->next = f;
    else
        fr->findings = f;
    fr->last_finding = f;
}

void rules_emit(const finding_t *findings, packet_info *pinfo, proto_item *item)
{
    for (const finding_t *f = findings; f; f = f->next)
        expert_add_info_format(pinfo, item, f->note ? rule_table[f->rule].ei_note : rule_table[f->rule].ei, "%s", f->message);
}

/* ---- analysis ---- */

/* The frame's first SCTP or TCP layer is analyzed, not one quoted inside an ICMP error: whether the
 * layer Wireshark appended at `position` of the frame's layer list is that one (protocol IDs, no string
 * compares). Inner layers finish dissecting before outer ones, so each checks for itself. */
static gboolean first_transport(const packet_info *pinfo, guint position)
{
    guint i = 0;
    for (wmem_list_frame_t *l = wmem_list_head(pinfo->layers); l; l = wmem_list_frame_next(l), i++) {
        int id = GPOINTER_TO_INT(wmem_list_frame_data(l));
        if (id == proto_icmp || id == proto_icmpv6 || (i < position && (id == proto_sctp || id == proto_tcp)))
            return FALSE;
    }
    return TRUE;
}

static void decode_layer(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, guint8 layer, frame_result_t *fr)
{
    if (layer == LAYER_SCTP) {
        /* chunks are read within the captured bytes (a snap length cuts the packet short) */
        guint captured = tvb_captured_length(tvb);
        sctp_dissect(captured < tvb_reported_length(tvb) ? tvb_new_subset_length(tvb, 0, captured) : tvb, pinfo, tree, fr);
    } else {
        tcp_dissect(tvb, pinfo, tree, fr);
    }
}

/* The first pass: the analysis, kept in the frame's record, also what it found before an item of a
 * malformed packet threw. */
static void analyze_once(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, guint8 layer, frame_record_t *rec)
{
    /* static: it must survive a longjmp, and Wireshark dissects one frame at a time */
    static frame_result_t result;
    memset(&result, 0, sizeof(result));
    result.num = pinfo->num;
    result.ns = nrsack_time_ns(pinfo);
    rec->analyzed = TRUE; /* never twice */
    TRY {
        decode_layer(tvb, pinfo, tree, layer, &result);
    }
    FINALLY {
        keep_result(rec, &result);
        /* after the frame's directions are kept: the budget may free them; its note joins the frame's */
        open_flows_enforce(&result);
        rec->findings = result.findings;
        tcp_free_ended();
    }
    ENDTRY;
}

/* Decodes and (first pass) analyzes the SCTP or TCP layer in `tvb`, the bytes Wireshark handed to its
 * own dissector: IP and UDP have set its reported length from their headers (TCP payload lengths,
 * link-layer padding). Every later pass shows the first pass's results. */
static void analyze_layer(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, guint8 layer, guint position)
{
    if (!proto_is_protocol_enabled(nrsack_protocol) || !first_transport(pinfo, position))
        return;
    frame_record_t *rec = frame_record(pinfo->num);
    /* our items go at the top level after every layer, on the frame's bytes, as a postdissector's would */
    while (tree && tree->parent)
        tree = tree->parent;
    tvbuff_t *frame_tvb = get_data_source_tvb((const struct data_source *)pinfo->data_src->data);
    const char *saved_proto = pinfo->current_proto;
    pinfo->current_proto = "NRSACK"; /* expert info names the protocol that raised it */

    /* items only where someone looks at them (a visible tree, a filter or field naming nrsack);
     * the analysis runs either way, and findings always get their expert info */
    gboolean items = tree && proto_field_is_referenced(tree, proto_nrsack);
    proto_item *ti = items ? proto_tree_add_item(tree, proto_nrsack, frame_tvb, 0, 0, ENC_NA) : NULL;
    proto_tree *nt = items ? proto_item_add_subtree(ti, ett_nrsack) : NULL;
    rec->shown_again = rec->analyzed;
    if (rec->analyzed)
        decode_layer(tvb, pinfo, nt, layer, NULL);
    else
        analyze_once(tvb, pinfo, nt, layer, rec);
    if (items)
        add_results(nt, frame_tvb, pinfo, rec);
    if (rec->findings) {
        if (!ti)
            ti = proto_tree_add_item(tree, proto_nrsack, frame_tvb, 0, 0, ENC_NA);
        rules_emit(rec->findings, pinfo, ti);
    }
    nrsack_tap_queue(pinfo, rec);
    pinfo->current_proto = saved_proto;
}

/* A layer whose dissection threw (a malformed chunk or payload): it is still analyzed, at the end of the
 * frame, after Wireshark has marked the frame malformed, so the tree reads as a postdissector left it.
 * Frame-end routines take no arguments; dissection is one frame at a time. */
static struct {
    tvbuff_t *tvb;
    packet_info *pinfo;
    proto_tree *tree;
    guint8 layer;
    guint position;
} pending;

static void analyze_pending(void)
{
    analyze_layer(pending.tvb, pending.pinfo, pending.tree, pending.layer, pending.position);
}

static void defer_analysis(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, guint8 layer, guint position)
{
    /* an inner layer's exception passes the outer layer too: the outer one (analyzed) replaces it */
    if (!g_slist_find(pinfo->frame_end_routines, (gpointer)analyze_pending))
        pinfo->frame_end_routines = g_slist_append(pinfo->frame_end_routines, (gpointer)analyze_pending);
    pending.tvb = tvb;
    pending.pinfo = pinfo;
    pending.tree = tree;
    pending.layer = layer;
    pending.position = position;
}

/* Wireshark's own SCTP or TCP dissector, then ours on the same bytes. This sits where IP, UDP and the
 * SCTP link type hand over to SCTP and TCP, instead of a postdissector: enabling one makes Wireshark
 * call every registered postdissector on every frame, and finding the layer again costs tree look-ups.
 * Our handles carry SCTP's and TCP's protocol, so the frame's layer list gets the layer as before; the
 * built-in dissector is then called through our own table, which adds no second entry. */
static int dissect_transport(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data, guint8 layer)
{
    guint position = wmem_list_count(pinfo->layers) - 1;
    volatile int len = 0;
    TRY {
        len = dissector_try_uint_with_data(builtin_table, layer, tvb, pinfo, tree, FALSE, data);
    }
    CATCH_ALL {
        defer_analysis(tvb, pinfo, tree, layer, position);
        RETHROW;
    }
    ENDTRY;
    if (len > 0)
        analyze_layer(tvb, pinfo, tree, layer, position);
    return len;
}

static int dissect_sctp_then_nrsack(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    return dissect_transport(tvb, pinfo, tree, data, LAYER_SCTP);
}

static int dissect_tcp_then_nrsack(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    return dissect_transport(tvb, pinfo, tree, data, LAYER_TCP);
}

/* Puts `ours` where `table` hands `key` to `builtin`. */
static void take_over(const char *table, guint32 key, dissector_handle_t builtin, dissector_handle_t ours)
{
    dissector_table_t t = find_dissector_table(table);
    if (t && builtin && dissector_get_uint_handle(t, key) == builtin)
        dissector_add_uint(table, key, ours);
}

static void apply_prefs(void)
{
    guint port = nrsack_prefs.sctp_udp_port, old = sctp_udp_port_registered;
    if (!sctp_then_nrsack || port == old)
        return;
    if (old) {
        if (sctp_udp_port_previous)
            dissector_add_uint("udp.port", old, sctp_udp_port_previous);
        else
            dissector_delete_uint("udp.port", old, sctp_then_nrsack);
    }
    if (port) {
        sctp_udp_port_previous = dissector_get_uint_handle(find_dissector_table("udp.port"), port);
        dissector_add_uint("udp.port", port, sctp_then_nrsack);
    }
    sctp_udp_port_registered = port;
}

static void proto_register_nrsack(void)
{
    static hf_register_info hf[] = {
        {&hf_nrsack_fsack_type,
          {"FSACK chunk type", "nrsack.fsack.type", FT_UINT8, BASE_HEX, NULL, 0x0,
           "Type of this FSACK chunk: FSACK-INIT, FSACK-ACK or FSACK-COMPLETE (0xA0, 0xA1, 0xA2 unless the preferences say otherwise)", HFILL}},
        {&hf_nrsack_fsack_timestamp,
          {"FSACK timestamp (ms)", "nrsack.fsack.timestamp", FT_UINT32, BASE_DEC, NULL, 0x0,
           "Sender's clock in milliseconds, modulo 2^32, sent in an FSACK-INIT and echoed in the FSACK-ACK", HFILL}},
        {&hf_nrsack_fsack_address_v4,
          {"FSACK path address", "nrsack.fsack.address_v4", FT_IPv4, BASE_NONE, NULL, 0x0,
           "IPv4 address an FSACK-COMPLETE names as the path SACKs must take", HFILL}},
        {&hf_nrsack_fsack_address_v6,
          {"FSACK path address", "nrsack.fsack.address_v6", FT_IPv6, BASE_NONE, NULL, 0x0,
           "IPv6 address an FSACK-COMPLETE names as the path SACKs must take", HFILL}},
        {&hf_nrsack_fsack_rtt_ms,
          {"FSACK RTT (ms)", "nrsack.fsack.rtt_ms", FT_UINT32, BASE_DEC, NULL, 0x0,
           "On an FSACK-ACK seen at the sender: its arrival time minus the timestamp it echoes, in milliseconds", HFILL}},
        {&hf_nrsack_sctp_ext_nr_sack,
          {"Supported Extensions lists NR-SACK (0x10)", "nrsack.sctp.ext_nr_sack", FT_BOOLEAN, BASE_NONE, NULL, 0x0,
           "The INIT or INIT-ACK Supported Extensions parameter lists chunk type 0x10 (NR-SACK)", HFILL}},
        {&hf_nrsack_sctp_ext_fsack,
          {"Supported Extensions lists FSACK-INIT", "nrsack.sctp.ext_fsack", FT_BOOLEAN, BASE_NONE, NULL, 0x0,
           "The INIT or INIT-ACK Supported Extensions parameter lists the FSACK-INIT chunk type", HFILL}},
        {&hf_nrsack_tcp_exid,
          {"Experiment ID", "nrsack.tcp.exid", FT_UINT16, BASE_HEX, NULL, 0x0,
           "RFC 6994 experiment ID of the TCP NR-SACK option", HFILL}},
        {&hf_nrsack_tcp_permitted,
          {"NR-SACK-Permitted", "nrsack.tcp.permitted", FT_BOOLEAN, BASE_NONE, NULL, 0x0,
           "The option is NR-SACK-Permitted (SYN or SYN-ACK)", HFILL}},
        {&hf_nrsack_tcp_flags,
          {"NR-SACK-Permitted flags", "nrsack.tcp.flags", FT_UINT8, BASE_HEX, NULL, 0x0,
           "Flags octet of NR-SACK-Permitted: 0x01 never renege, 0x02 MPTCP data-level NR-SACK", HFILL}},
        {&hf_nrsack_tcp_never_renege,
          {"Never renege", "nrsack.tcp.never_renege", FT_BOOLEAN, BASE_NONE, NULL, 0x0,
           "NR-SACK-Permitted flag 0x01: this endpoint never reneges, so its SACK blocks count as NR-acked", HFILL}},
        {&hf_nrsack_tcp_block_count,
          {"NR-SACK blocks", "nrsack.tcp.block_count", FT_UINT8, BASE_DEC, NULL, 0x0,
           "Number of NR-SACK blocks in the option", HFILL}},
        {&hf_nrsack_tcp_block_left,
          {"NR-SACK block left edge", "nrsack.tcp.block.left", FT_UINT32, BASE_DEC, NULL, 0x0,
           "First sequence number of an NR-SACK block (absolute)", HFILL}},
        {&hf_nrsack_tcp_block_right,
          {"NR-SACK block right edge", "nrsack.tcp.block.right", FT_UINT32, BASE_DEC, NULL, 0x0,
           "Sequence number just after an NR-SACK block (absolute)", HFILL}},
        {&hf_nrsack_mptcp_capable,
          {"MPTCP data-level NR-SACK capable", "nrsack.mptcp.capable", FT_BOOLEAN, BASE_NONE, NULL, 0x0,
           "NR-SACK-Permitted flag 0x02: NR blocks may follow in MPTCP DSS options", HFILL}},
        {&hf_nrsack_mptcp_wide,
          {"8-octet block offsets", "nrsack.mptcp.wide", FT_BOOLEAN, BASE_NONE, NULL, 0x0,
           "DSS flag n: the NR block offsets are 8 octets wide, else 4", HFILL}},
        {&hf_nrsack_mptcp_block_count,
          {"NR blocks", "nrsack.mptcp.block_count", FT_UINT8, BASE_DEC, NULL, 0x0,
           "Number of NR blocks in the DSS option", HFILL}},
        {&hf_nrsack_mptcp_block_start,
          {"NR block start (DSN)", "nrsack.mptcp.block.start", FT_UINT64, BASE_DEC, NULL, 0x0,
           "First data sequence number of an MPTCP NR block (absolute)", HFILL}},
        {&hf_nrsack_mptcp_block_end,
          {"NR block end (DSN, exclusive)", "nrsack.mptcp.block.end", FT_UINT64, BASE_DEC, NULL, 0x0,
           "Data sequence number just after an MPTCP NR block (absolute)", HFILL}},
        {&hf_nrsack_stream,
          {"Stream index", "nrsack.stream", FT_UINT32, BASE_DEC, NULL, 0x0,
           "Index of the SCTP association or TCP / MPTCP connection, counted as tcp.stream is", HFILL}},
        {&hf_nrsack_direction,
          {"Data sender direction", "nrsack.direction", FT_STRING, BASE_NONE, NULL, 0x0,
           "Sender -> receiver of the data whose retransmission queue the figures that follow describe", HFILL}},
        {&hf_nrsack_rtxq_bytes,
          {"RtxQ (bytes)", "nrsack.rtxq.bytes", FT_UINT32, BASE_DEC, NULL, 0x0,
           "After this packet: the sender's retransmission queue under the semantics the capture used (NR-SACK when negotiated or seen, else SACK)", HFILL}},
        {&hf_nrsack_rtxq_sack_bytes,
          {"RtxQ under SACK semantics (bytes)", "nrsack.rtxq.sack_bytes", FT_UINT32, BASE_DEC, NULL, 0x0,
           "After this packet: bytes sent and not yet cumulatively acked, as a plain SACK sender keeps them", HFILL}},
        {&hf_nrsack_rtxq_nr_acked_bytes,
          {"NR-acked above the cum ack (bytes)", "nrsack.rtxq.nr_acked_bytes", FT_UINT32, BASE_DEC, NULL, 0x0,
           "After this packet: bytes above the cumulative ack that an ack reported non-renegable", HFILL}},
        {&hf_nrsack_rtxq_nr_bytes,
          {"RtxQ under NR-SACK semantics (bytes)", "nrsack.rtxq.nr_bytes", FT_UINT32, BASE_DEC, NULL, 0x0,
           "After this packet: the SACK-semantics queue minus the NR-acked bytes, as a sender that honors NR-SACKs keeps it", HFILL}},
        {&hf_nrsack_rtxq_sacked_bytes,
          {"Gap-acked above the cum ack (bytes)", "nrsack.rtxq.sacked_bytes", FT_UINT32, BASE_DEC, NULL, 0x0,
           "After this packet: bytes above the cumulative ack that any gap block (renegable or not) reported", HFILL}},
        {&hf_nrsack_rtxq_whatif_bytes,
          {"RtxQ had every SACK been an NR-SACK (bytes)", "nrsack.rtxq.whatif_bytes", FT_UINT32, BASE_DEC, NULL, 0x0,
           "After this packet: the SACK-semantics queue minus the gap-acked bytes, the queue had every SACK been an NR-SACK", HFILL}},
        {&hf_nrsack_freed_bytes,
          {"Freed beyond the cum ack (bytes)", "nrsack.freed_bytes", FT_UINT32, BASE_DEC, NULL, 0x0,
           "Bytes this ack reports non-renegable for the first time: what it lets the sender free beyond what the cumulative ack frees", HFILL}},
        {&hf_nrsack_blocked,
          {"Send buffer blocked", "nrsack.blocked", FT_BOOLEAN, BASE_NONE, NULL, 0x0,
           "After this packet the send buffer is full of sent data: with the sndbuf preference, no room for another full-size packet; without it, as estimated from the capture (nrsack.sndbuf.*); absent where the capture cannot tell", HFILL}},
        {&hf_nrsack_sndbuf_bytes,
          {"Send buffer B (bytes)", "nrsack.sndbuf.bytes", FT_UINT32, BASE_DEC, NULL, 0x0,
           "The B in payload bytes nrsack.blocked uses for this direction: the sndbuf preference, or the estimate where the capture shows the sender held back", HFILL}},
        {&hf_nrsack_sndbuf_source,
          {"Send buffer B from", "nrsack.sndbuf.source", FT_STRING, BASE_NONE, NULL, 0x0,
           "How B was obtained: given (the sndbuf preference), estimated from the whole capture (second pass, or the flow ended), or estimated so far (one pass)", HFILL}},
        {&hf_nrsack_sndbuf_verdict,
          {"Send buffer verdict", "nrsack.sndbuf.verdict", FT_STRING, BASE_NONE, NULL, 0x0,
           "Estimated B: the sender was held back by a full send buffer at times, never, or the capture cannot tell (then no frame is marked blocked)", HFILL}},
        {&hf_nrsack_sndbuf_reason,
          {"Send buffer evidence", "nrsack.sndbuf.reason", FT_STRING, BASE_NONE, NULL, 0x0,
           "Estimated B: the waits for acks the verdict rests on, or why the capture cannot tell", HFILL}},
        {&hf_nrsack_sndbuf_waits,
          {"Send buffer waits", "nrsack.sndbuf.waits", FT_UINT32, BASE_DEC, NULL, 0x0,
           "Estimated B: the sender's waits for an ack that ended in new data, the evidence B is estimated from", HFILL}},
        {&hf_nrsack_gap_open,
          {"Gap open", "nrsack.gap_open", FT_BOOLEAN, BASE_NONE, NULL, 0x0,
           "The last ack of this direction reports a gap block above its cumulative ack: data is out of order at the receiver (loss recovery)", HFILL}},
        {&hf_nrsack_revoked,
          {"Revoked TSN / byte", "nrsack.revoked", FT_UINT32, BASE_DEC, NULL, 0x0,
           "A TSN, or the first byte of a range, that this ack revokes after an earlier ack reported it non-renegable", HFILL}},
    };
    static int *ett[] = {
        &ett_nrsack,
        &ett_nrsack_option,
        &ett_nrsack_fsack,
    };
    static ei_register_info ei[] = {
        {&ei_nrsack_rule_nr01, {"nrsack.rule.NR01", PI_PROTOCOL, PI_ERROR, "NR-01: NR-SACK without 0x10 in both INIT and INIT-ACK Supported Extensions", EXPFILL}},
        {&ei_nrsack_rule_nr01_note, {"nrsack.rule.NR01.note", PI_PROTOCOL, PI_NOTE,
          "NR-01: NR-SACK without 0x10 in both INIT and INIT-ACK Supported Extensions (cannot be decided from this capture)", EXPFILL}},
        {&ei_nrsack_rule_nr02, {"nrsack.rule.NR02", PI_PROTOCOL, PI_ERROR, "NR-02: TSN in both an R and an NR gap block", EXPFILL}},
        {&ei_nrsack_rule_nr03, {"nrsack.rule.NR03", PI_SEQUENCE, PI_ERROR, "NR-03: NR-acked TSN revoked", EXPFILL}},
        {&ei_nrsack_rule_nr04, {"nrsack.rule.NR04", PI_SEQUENCE, PI_WARN, "NR-04: Retransmission of a TSN already NR-acked or cum-acked", EXPFILL}},
        {&ei_nrsack_rule_nr04_note, {"nrsack.rule.NR04.note", PI_SEQUENCE, PI_NOTE,
          "NR-04: Retransmission of a TSN already NR-acked or cum-acked (cannot be decided from this capture)", EXPFILL}},
        {&ei_nrsack_rule_nr05, {"nrsack.rule.NR05", PI_MALFORMED, PI_ERROR, "NR-05: Malformed NR-SACK / SACK gap blocks", EXPFILL}},
        {&ei_nrsack_rule_nr06, {"nrsack.rule.NR06", PI_PROTOCOL, PI_WARN, "NR-06: Plain SACK after NR-SACK was negotiated", EXPFILL}},
        {&ei_nrsack_rule_nr07, {"nrsack.rule.NR07", PI_SEQUENCE, PI_NOTE, "NR-07: Cumulative TSN ack moves backwards", EXPFILL}},
        {&ei_nrsack_rule_nr08, {"nrsack.rule.NR08", PI_PROTOCOL, PI_WARN, "NR-08: Adjacent gap blocks should have been merged", EXPFILL}},
        {&ei_nrsack_rule_nr09, {"nrsack.rule.NR09", PI_SEQUENCE, PI_ERROR, "NR-09: Ack covers a TSN never sent", EXPFILL}},
        {&ei_nrsack_rule_nr09_note, {"nrsack.rule.NR09.note", PI_SEQUENCE, PI_NOTE,
          "NR-09: Ack covers a TSN never sent (cannot be decided from this capture)", EXPFILL}},
        {&ei_nrsack_rule_tn01, {"nrsack.rule.TN01", PI_PROTOCOL, PI_ERROR, "TN-01: TCP NR-SACK blocks without NR-SACK-Permitted on SYN and SYN-ACK", EXPFILL}},
        {&ei_nrsack_rule_tn01_note, {"nrsack.rule.TN01.note", PI_PROTOCOL, PI_NOTE,
          "TN-01: TCP NR-SACK blocks without NR-SACK-Permitted on SYN and SYN-ACK (cannot be decided from this capture)", EXPFILL}},
        {&ei_nrsack_rule_tn02, {"nrsack.rule.TN02", PI_PROTOCOL, PI_ERROR, "TN-02: Byte in both a SACK block and an NR-SACK block", EXPFILL}},
        {&ei_nrsack_rule_tn03, {"nrsack.rule.TN03", PI_SEQUENCE, PI_ERROR, "TN-03: NR-acked bytes revoked", EXPFILL}},
        {&ei_nrsack_rule_tn04, {"nrsack.rule.TN04", PI_SEQUENCE, PI_WARN, "TN-04: Retransmission of bytes already NR-acked or cum-acked", EXPFILL}},
        {&ei_nrsack_rule_tn04_note, {"nrsack.rule.TN04.note", PI_SEQUENCE, PI_NOTE,
          "TN-04: Retransmission of bytes already NR-acked or cum-acked (cannot be decided from this capture)", EXPFILL}},
        {&ei_nrsack_rule_tn05, {"nrsack.rule.TN05", PI_MALFORMED, PI_ERROR, "TN-05: Malformed TCP NR-SACK option", EXPFILL}},
        {&ei_nrsack_rule_mn01, {"nrsack.rule.MN01", PI_PROTOCOL, PI_ERROR, "MN-01: DSS NR blocks without MPTCP NR-SACK capability on SYN and SYN-ACK", EXPFILL}},
        {&ei_nrsack_rule_mn01_note, {"nrsack.rule.MN01.note", PI_PROTOCOL, PI_NOTE,
          "MN-01: DSS NR blocks without MPTCP NR-SACK capability on SYN and SYN-ACK (cannot be decided from this capture)", EXPFILL}},
        {&ei_nrsack_rule_mn02, {"nrsack.rule.MN02", PI_MALFORMED, PI_ERROR, "MN-02: DSS flag N without DATA ACK, or count disagrees with length", EXPFILL}},
        {&ei_nrsack_rule_mn03, {"nrsack.rule.MN03", PI_SEQUENCE, PI_ERROR, "MN-03: NR-acked data-level bytes revoked", EXPFILL}},
        {&ei_nrsack_rule_mn04, {"nrsack.rule.MN04", PI_SEQUENCE, PI_WARN, "MN-04: Data-level retransmission of bytes already NR-acked or DATA-ACKed", EXPFILL}},
        {&ei_nrsack_rule_mn04_note, {"nrsack.rule.MN04.note", PI_SEQUENCE, PI_NOTE,
          "MN-04: Data-level retransmission of bytes already NR-acked or DATA-ACKed (cannot be decided from this capture)", EXPFILL}},
        {&ei_nrsack_rule_mn05, {"nrsack.rule.MN05", PI_MALFORMED, PI_ERROR, "MN-05: Malformed MPTCP NR blocks", EXPFILL}},
        {&ei_nrsack_rule_fs01, {"nrsack.rule.FS01", PI_PROTOCOL, PI_ERROR, "FS-01: FSACK-ACK timestamp never sent in an FSACK-INIT", EXPFILL}},
        {&ei_nrsack_rule_fs02, {"nrsack.rule.FS02", PI_PROTOCOL, PI_WARN, "FS-02: FSACK-INIT answered on fewer return paths than receiver addresses", EXPFILL}},
        {&ei_nrsack_rule_fs03, {"nrsack.rule.FS03", PI_PROTOCOL, PI_WARN, "FS-03: FSACK-COMPLETE names a path other than the first FSACK-ACK's", EXPFILL}},
        {&ei_nrsack_rule_fs04, {"nrsack.rule.FS04", PI_PROTOCOL, PI_ERROR, "FS-04: SACK sent off the FSACK path", EXPFILL}},
        {&ei_nrsack_rule_fs05, {"nrsack.rule.FS05", PI_SEQUENCE, PI_WARN, "FS-05: FSACK path not updated within the maximum update interval", EXPFILL}},
        {&ei_nrsack_rule_fs06, {"nrsack.rule.FS06", PI_PROTOCOL, PI_ERROR, "FS-06: FSACK chunks without 0xA0 in both INIT and INIT-ACK Supported Extensions", EXPFILL}},
        {&ei_nrsack_rule_fs06_note, {"nrsack.rule.FS06.note", PI_PROTOCOL, PI_NOTE,
          "FS-06: FSACK chunks without 0xA0 in both INIT and INIT-ACK Supported Extensions (cannot be decided from this capture)", EXPFILL}},
        {&ei_nrsack_rule_gen01, {"nrsack.rule.GEN01", PI_MALFORMED, PI_ERROR, "GEN-01: Malformed packet prevents analysis", EXPFILL}},
    };

    proto_nrsack = proto_register_protocol("NR-SACK analysis", "NRSACK", "nrsack");
    proto_register_field_array(proto_nrsack, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    /* An expert item's filter field takes its description from the template EXPFILL leaves empty
     * (`tshark -G fields` would show none); each rule's description fills it for both variants. */
    for (guint i = 0; i < array_length(ei); i++)
        for (guint r = 0; r < RULE_COUNT; r++)
            if (ei[i].ids == rule_table[r].ei || ei[i].ids == rule_table[r].ei_note)
                ei[i].eiinfo.hf_info.hfinfo.blurb = rule_table[r].description;
    expert_module_t *expert_nrsack = expert_register_protocol(proto_nrsack);
    expert_register_field_array(expert_nrsack, ei, array_length(ei));

    module_t *m = prefs_register_protocol(proto_nrsack, apply_prefs);
    prefs_register_uint_preference(m, "sndbuf", "Send buffer B (bytes)",
                                   "Send buffer size in payload bytes for nrsack.blocked; 0 = estimated from the capture", 10, &nrsack_prefs.sndbuf);
    prefs_register_uint_preference(m, "tcp_exid", "TCP NR-SACK ExID", "RFC 6994 experiment ID of the TCP NR-SACK options", 16,
                                   &nrsack_prefs.tcp_exid);
    prefs_register_uint_preference(m, "fsack_init_type", "FSACK-INIT chunk type", NULL, 16, &nrsack_prefs.fsack_init);
    prefs_register_uint_preference(m, "fsack_ack_type", "FSACK-ACK chunk type", NULL, 16, &nrsack_prefs.fsack_ack);
    prefs_register_uint_preference(m, "fsack_complete_type", "FSACK-COMPLETE chunk type", NULL, 16, &nrsack_prefs.fsack_complete);
    prefs_register_uint_preference(m, "max_open_flows", "Flows held open at most",
                                   "Past this many open flows the least recently active are finished early, those without data first; 0 = no bound",
                                   10, &nrsack_prefs.max_open_flows);
    prefs_register_uint_preference(m, "sctp_udp_port", "SCTP over UDP port", "UDP port of RFC 6951 encapsulation; 0 = none added",
                                   10, &nrsack_prefs.sctp_udp_port);

    builtin_table = register_dissector_table("nrsack.builtin", "SCTP and TCP dissectors NR-SACK analysis follows",
                                             proto_nrsack, FT_UINT8, BASE_DEC);
    register_init_routine(init_state);
    register_cleanup_routine(cleanup_state);
    nrsack_tap_register();
}

static void proto_reg_handoff_nrsack(void)
{
    proto_sctp = proto_get_id_by_filter_name("sctp");
    proto_tcp = proto_get_id_by_filter_name("tcp");
    proto_icmp = proto_get_id_by_filter_name("icmp");
    proto_icmpv6 = proto_get_id_by_filter_name("icmpv6");
    nrsack_protocol = find_protocol_by_id(proto_nrsack);
    dissector_handle_t sctp_handle = find_dissector("sctp"), tcp_handle = find_dissector("tcp");
    if (!sctp_handle || !tcp_handle)
        return;
    dissector_add_uint("nrsack.builtin", LAYER_SCTP, sctp_handle);
    dissector_add_uint("nrsack.builtin", LAYER_TCP, tcp_handle);
    sctp_then_nrsack = create_dissector_handle_with_name_and_description(dissect_sctp_then_nrsack, proto_sctp,
                                                                          "sctp_nrsack", "SCTP, NR-SACK analyzed");
    tcp_then_nrsack = create_dissector_handle_with_name_and_description(dissect_tcp_then_nrsack, proto_tcp,
                                                                         "tcp_nrsack", "TCP, NR-SACK analyzed");
    take_over("ip.proto", IP_PROTO_SCTP, sctp_handle, sctp_then_nrsack);
    take_over("ip.proto", IP_PROTO_TCP, tcp_handle, tcp_then_nrsack);
    take_over("udp.port", 9899, sctp_handle, sctp_then_nrsack);            /* SCTP's own RFC 6951 port */
    take_over("wtap_encap", WTAP_ENCAP_SCTP, sctp_handle, sctp_then_nrsack);
    tcp_register_option_handoff(proto_nrsack);
    apply_prefs();
}

void plugin_register(void)
{
    static proto_plugin plug;
    plug.register_protoinfo = proto_register_nrsack;
    plug.register_handoff = proto_reg_handoff_nrsack;
    proto_register_plugin(&plug);
}
