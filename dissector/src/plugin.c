/* SPDX-License-Identifier: GPL-2.0-or-later */
/* nrsack plugin: registration (protocol, fields, preferences), the handles that follow Wireshark's SCTP
 * and TCP dissectors with ours on the same bytes, and the per-frame result cache that makes every pass
 * show the same analysis. */
#include "nrsack.h"

#include <epan/prefs.h>
#include <epan/proto.h>
#include <epan/to_str.h>
#include <epan/wmem_scopes.h>
#include <epan/exceptions.h>
#include <epan/ipproto.h>
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

int proto_nrsack = -1;
nrsack_hf_t nrsack_hf;
int ett_nrsack = -1, ett_nrsack_option = -1, ett_nrsack_fsack = -1;
nrsack_prefs_t nrsack_prefs = {
    .sndbuf = 0,
    .tcp_exid = 0x4E52,
    .fsack_init = 0xA0,
    .fsack_ack = 0xA1,
    .fsack_complete = 0xA2,
    .sctp_udp_port = 9899,
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

char *nrsack_endpoint_str(const address *addr, guint16 port)
{
    /* raw SCTP (LINKTYPE_SCTP) names no address: 0.0.0.0, as the analyzer's reader (decisions 43) */
    if (addr->type == AT_NONE)
        return wmem_strdup_printf(wmem_file_scope(), "0.0.0.0:%u", port);
    char *a = address_to_str(NULL, addr);
    /* IPv6 in brackets, as the analyzer names endpoints */
    char *s = wmem_strdup_printf(wmem_file_scope(), addr->type == AT_IPv6 ? "[%s]:%u" : "%s:%u", a, port);
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
        .dir = u->dir,
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
    if (fr->n_updates > 0)
        keep_update(&rec->first, &fr->upd[0]);
    if (fr->n_updates > 1) {
        rec->second = wmem_new(wmem_file_scope(), shown_update_t);
        keep_update(rec->second, &fr->upd[1]);
    }
}

static void add_results(proto_tree *tree, tvbuff_t *tvb, const frame_record_t *rec)
{
    proto_item *pi;
    if (rec->has_stream) {
        pi = proto_tree_add_uint(tree, nrsack_hf.stream, tvb, 0, 0, rec->stream);
        proto_item_set_generated(pi);
    }
    if (rec->has_rtt) {
        pi = proto_tree_add_uint(tree, nrsack_hf.fsack_rtt_ms, tvb, 0, 0, rec->rtt_ms);
        proto_item_set_generated(pi);
    }
    for (guint i = 0; i < rec->n_updates; i++) {
        const shown_update_t *u = frame_record_update(rec, i);
#define ADD_U32(hf, v) do { pi = proto_tree_add_uint(tree, hf, tvb, 0, 0, (v)); proto_item_set_generated(pi); } while (0)
        pi = proto_tree_add_string(tree, nrsack_hf.direction, tvb, 0, 0, u->dir->name);
        proto_item_set_generated(pi);
        ADD_U32(nrsack_hf.rtxq_bytes, u->rtxq);
        ADD_U32(nrsack_hf.rtxq_sack_bytes, u->rtxq_sack);
        ADD_U32(nrsack_hf.rtxq_nr_bytes, u->rtxq_nr);
        ADD_U32(nrsack_hf.rtxq_nr_acked_bytes, u->nr_acked);
        ADD_U32(nrsack_hf.rtxq_sacked_bytes, u->sacked);
        ADD_U32(nrsack_hf.rtxq_whatif_bytes, u->rtxq_whatif);
        if (u->is_ack)
            ADD_U32(nrsack_hf.freed_bytes, u->freed_bytes);
        if (nrsack_prefs.sndbuf) {
            pi = proto_tree_add_boolean(tree, nrsack_hf.blocked, tvb, 0, 0, u->blocked);
            proto_item_set_generated(pi);
        }
        pi = proto_tree_add_boolean(tree, nrsack_hf.gap_open, tvb, 0, 0, u->gap_open);
        proto_item_set_generated(pi);
        for (guint k = 0; k < u->n_revoked; k++)
            ADD_U32(nrsack_hf.revoked, u->revoked[k]);
#undef ADD_U32
    }
}

/* The frame's first SCTP or TCP layer is analysed, not one quoted inside an ICMP error: whether the
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
static void analyse_once(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, guint8 layer, frame_record_t *rec)
{
    /* static: it must survive a longjmp, and Wireshark dissects one frame at a time */
    static frame_result_t result;
    memset(&result, 0, sizeof(result));
    rec->analysed = TRUE; /* never twice */
    TRY {
        decode_layer(tvb, pinfo, tree, layer, &result);
    }
    FINALLY {
        keep_result(rec, &result);
    }
    ENDTRY;
}

/* Decodes and (first pass) analyses the SCTP or TCP layer in `tvb`, the bytes Wireshark handed to its
 * own dissector: IP and UDP have set its reported length from their headers (TCP payload lengths,
 * link-layer padding). Every later pass shows the first pass's results. */
static void analyse_layer(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, guint8 layer, guint position)
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
    if (rec->analysed)
        decode_layer(tvb, pinfo, nt, layer, NULL);
    else
        analyse_once(tvb, pinfo, nt, layer, rec);
    if (items)
        add_results(nt, frame_tvb, rec);
    if (rec->findings) {
        if (!ti)
            ti = proto_tree_add_item(tree, proto_nrsack, frame_tvb, 0, 0, ENC_NA);
        rules_emit(rec->findings, pinfo, ti);
    }
    nrsack_tap_queue(pinfo, rec);
    pinfo->current_proto = saved_proto;
}

/* A layer whose dissection threw (a malformed chunk or payload): it is still analysed, at the end of the
 * frame, after Wireshark has marked the frame malformed, so the tree reads as a postdissector left it.
 * Frame-end routines take no arguments; dissection is one frame at a time. */
static struct {
    tvbuff_t *tvb;
    packet_info *pinfo;
    proto_tree *tree;
    guint8 layer;
    guint position;
} pending;

static void analyse_pending(void)
{
    analyse_layer(pending.tvb, pending.pinfo, pending.tree, pending.layer, pending.position);
}

static void defer_analysis(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, guint8 layer, guint position)
{
    /* an inner layer's exception passes the outer layer too: the outer one (analysed) replaces it */
    if (!g_slist_find(pinfo->frame_end_routines, (gpointer)analyse_pending))
        pinfo->frame_end_routines = g_slist_append(pinfo->frame_end_routines, (gpointer)analyse_pending);
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
        analyse_layer(tvb, pinfo, tree, layer, position);
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
        {&nrsack_hf.fsack_type, {"FSACK chunk type", "nrsack.fsack.type", FT_UINT8, BASE_HEX, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.fsack_timestamp, {"FSACK timestamp", "nrsack.fsack.timestamp", FT_UINT32, BASE_DEC, NULL, 0, "Sender's clock in ms, mod 2^32", HFILL}},
        {&nrsack_hf.fsack_address_v4, {"FSACK path address", "nrsack.fsack.address_v4", FT_IPv4, BASE_NONE, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.fsack_address_v6, {"FSACK path address", "nrsack.fsack.address_v6", FT_IPv6, BASE_NONE, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.fsack_rtt_ms, {"FSACK RTT (ms)", "nrsack.fsack.rtt_ms", FT_UINT32, BASE_DEC, NULL, 0, "Arrival time of the FSACK-ACK minus its timestamp", HFILL}},
        {&nrsack_hf.sctp_ext_nr_sack, {"Supported Extensions lists NR-SACK (0x10)", "nrsack.sctp.ext_nr_sack", FT_BOOLEAN, BASE_NONE, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.sctp_ext_fsack, {"Supported Extensions lists FSACK", "nrsack.sctp.ext_fsack", FT_BOOLEAN, BASE_NONE, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.tcp_permitted, {"NR-SACK-Permitted", "nrsack.tcp.permitted", FT_BOOLEAN, BASE_NONE, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.tcp_never_renege, {"Never renege", "nrsack.tcp.never_renege", FT_BOOLEAN, BASE_NONE, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.tcp_flags, {"NR-SACK-Permitted flags", "nrsack.tcp.flags", FT_UINT8, BASE_HEX, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.tcp_exid, {"Experiment ID", "nrsack.tcp.exid", FT_UINT16, BASE_HEX, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.tcp_block_left, {"NR-SACK left edge", "nrsack.tcp.block.left", FT_UINT32, BASE_DEC, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.tcp_block_right, {"NR-SACK right edge", "nrsack.tcp.block.right", FT_UINT32, BASE_DEC, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.tcp_block_count, {"NR-SACK blocks", "nrsack.tcp.block_count", FT_UINT8, BASE_DEC, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.mptcp_capable, {"MPTCP data-level NR-SACK capable", "nrsack.mptcp.capable", FT_BOOLEAN, BASE_NONE, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.mptcp_block_start, {"NR block start DSN", "nrsack.mptcp.block.start", FT_UINT64, BASE_DEC, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.mptcp_block_end, {"NR block end DSN", "nrsack.mptcp.block.end", FT_UINT64, BASE_DEC, NULL, 0, "Exclusive", HFILL}},
        {&nrsack_hf.mptcp_block_count, {"NR blocks", "nrsack.mptcp.block_count", FT_UINT8, BASE_DEC, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.mptcp_wide, {"8-octet offsets (flag n)", "nrsack.mptcp.wide", FT_BOOLEAN, BASE_NONE, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.stream, {"Stream index", "nrsack.stream", FT_UINT32, BASE_DEC, NULL, 0, "Association / connection index", HFILL}},
        {&nrsack_hf.direction, {"Data direction", "nrsack.direction", FT_STRING, BASE_NONE, NULL, 0, "Sender -> receiver of the data whose RtxQ follows", HFILL}},
        {&nrsack_hf.rtxq_bytes, {"RtxQ (bytes)", "nrsack.rtxq.bytes", FT_UINT32, BASE_DEC, NULL, 0, "RtxQ under the semantics the capture used", HFILL}},
        {&nrsack_hf.rtxq_sack_bytes, {"RtxQ, SACK semantics (bytes)", "nrsack.rtxq.sack_bytes", FT_UINT32, BASE_DEC, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.rtxq_nr_bytes, {"RtxQ, NR-SACK semantics (bytes)", "nrsack.rtxq.nr_bytes", FT_UINT32, BASE_DEC, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.rtxq_nr_acked_bytes, {"NR-acked above cum ack (bytes)", "nrsack.rtxq.nr_acked_bytes", FT_UINT32, BASE_DEC, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.rtxq_sacked_bytes, {"Gap-acked above cum ack (bytes)", "nrsack.rtxq.sacked_bytes", FT_UINT32, BASE_DEC, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.rtxq_whatif_bytes, {"RtxQ if every SACK were an NR-SACK (bytes)", "nrsack.rtxq.whatif_bytes", FT_UINT32, BASE_DEC, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.freed_bytes, {"Freed beyond the cum ack (bytes)", "nrsack.freed_bytes", FT_UINT32, BASE_DEC, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.blocked, {"Send buffer blocked", "nrsack.blocked", FT_BOOLEAN, BASE_NONE, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.gap_open, {"Gap open (loss recovery)", "nrsack.gap_open", FT_BOOLEAN, BASE_NONE, NULL, 0, NULL, HFILL}},
        {&nrsack_hf.revoked, {"Revoked", "nrsack.revoked", FT_UINT32, BASE_DEC, NULL, 0, "TSN, or first byte of a range, that this ack revokes", HFILL}},
    };
    static int *ett[] = {&ett_nrsack, &ett_nrsack_option, &ett_nrsack_fsack};

    proto_nrsack = proto_register_protocol("NR-SACK analysis", "NRSACK", "nrsack");
    proto_register_field_array(proto_nrsack, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    rules_register(proto_nrsack);

    module_t *m = prefs_register_protocol(proto_nrsack, apply_prefs);
    prefs_register_uint_preference(m, "sndbuf", "Send buffer B (bytes)",
                                   "Send buffer size in payload bytes for nrsack.blocked; 0 = off", 10, &nrsack_prefs.sndbuf);
    prefs_register_uint_preference(m, "tcp_exid", "TCP NR-SACK ExID", "RFC 6994 experiment ID of the TCP NR-SACK options", 16,
                                   &nrsack_prefs.tcp_exid);
    prefs_register_uint_preference(m, "fsack_init_type", "FSACK-INIT chunk type", NULL, 16, &nrsack_prefs.fsack_init);
    prefs_register_uint_preference(m, "fsack_ack_type", "FSACK-ACK chunk type", NULL, 16, &nrsack_prefs.fsack_ack);
    prefs_register_uint_preference(m, "fsack_complete_type", "FSACK-COMPLETE chunk type", NULL, 16, &nrsack_prefs.fsack_complete);
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
                                                                          "sctp_nrsack", "SCTP, NR-SACK analysed");
    tcp_then_nrsack = create_dissector_handle_with_name_and_description(dissect_tcp_then_nrsack, proto_tcp,
                                                                         "tcp_nrsack", "TCP, NR-SACK analysed");
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
