/* nrsack plugin: registration (protocol, fields, preferences), the postdissector that re-reads the
 * SCTP and TCP layers, and the per-frame result cache that makes every pass show the same analysis. */
#include "nrsack.h"

#include <epan/prefs.h>
#include <epan/proto_data.h>
#include <epan/proto.h>
#include <epan/to_str.h>
#include <epan/wmem_scopes.h>

#include "tcp.h"

#ifndef PLUGIN_VERSION
#define PLUGIN_VERSION "0.1.0"
#endif

WS_DLL_PUBLIC_DEF const gchar plugin_version[] = PLUGIN_VERSION;
WS_DLL_PUBLIC_DEF const int plugin_want_major = WIRESHARK_VERSION_MAJOR;
WS_DLL_PUBLIC_DEF const int plugin_want_minor = WIRESHARK_VERSION_MINOR;
WS_DLL_PUBLIC void plugin_register(void);

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

static int proto_sctp = -1, proto_tcp = -1, hf_tcp_len = -1;
/* the enclosing layers' headers bound the SCTP packet (its own item stops at the data payload) */
static int proto_ip = -1, proto_ipv6 = -1, proto_udp = -1;
static int proto_icmp = -1, proto_icmpv6 = -1;
static dissector_handle_t nrsack_handle;
static guint32 next_stream;
static guint sctp_udp_port_registered;

guint32 nrsack_new_stream_index(void)
{
    return next_stream++;
}

char *nrsack_endpoint_str(const address *addr, guint16 port)
{
    char *a = address_to_str(NULL, addr);
    /* IPv6 in brackets, as the analyzer names endpoints */
    char *s = wmem_strdup_printf(wmem_file_scope(), addr->type == AT_IPv6 ? "[%s]:%u" : "%s:%u", a, port);
    wmem_free(NULL, a);
    return s;
}

static void init_state(void)
{
    next_stream = 0;
    sctp_init_state();
    tcp_init_state();
    mptcp_init_state();
}

static void add_results(proto_tree *tree, tvbuff_t *tvb, const frame_result_t *fr)
{
    proto_item *pi;
    if (fr->has_stream) {
        pi = proto_tree_add_uint(tree, nrsack_hf.stream, tvb, 0, 0, fr->stream);
        proto_item_set_generated(pi);
    }
    if (fr->has_rtt) {
        pi = proto_tree_add_uint(tree, nrsack_hf.fsack_rtt_ms, tvb, 0, 0, fr->rtt_ms);
        proto_item_set_generated(pi);
    }
    for (guint i = 0; i < fr->n_updates; i++) {
        const rtxq_update_t *u = fr->upd[i];
        /* the figures are queue sizes; clamp rather than wrap if a corrupt capture makes them huge */
#define ADD_U32(hf, v) do { pi = proto_tree_add_uint(tree, hf, tvb, 0, 0, (guint32)MIN((v), G_MAXUINT32)); proto_item_set_generated(pi); } while (0)
        pi = proto_tree_add_string(tree, nrsack_hf.direction, tvb, 0, 0, u->dir->name);
        proto_item_set_generated(pi);
        ADD_U32(nrsack_hf.rtxq_bytes, u->rtxq);
        ADD_U32(nrsack_hf.rtxq_sack_bytes, u->fig.rtxq_sack);
        ADD_U32(nrsack_hf.rtxq_nr_bytes, u->fig.rtxq_nr);
        ADD_U32(nrsack_hf.rtxq_nr_acked_bytes, u->fig.nr_acked);
        ADD_U32(nrsack_hf.rtxq_sacked_bytes, u->fig.sacked);
        ADD_U32(nrsack_hf.rtxq_whatif_bytes, u->fig.rtxq_whatif);
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

/* The transport layer's bytes in the idx-th data source of the frame. */
static tvbuff_t *layer_tvb(packet_info *pinfo, guint idx, gint start, gint length)
{
    const struct data_source *src = (const struct data_source *)g_slist_nth_data(pinfo->data_src, idx);
    tvbuff_t *ds = src ? get_data_source_tvb(src) : NULL;
    if (!ds || start < 0 || length <= 0 || (guint)start + (guint)length > tvb_captured_length(ds))
        return NULL;
    return tvb_new_subset_length(ds, start, length);
}

/* Lowers *end to where `outer`, an IPv4, IPv6 or UDP header before `inner` in the same bytes, says its
 * packet ends. Read from the header's own length field: asking Wireshark for ip.len would make it build
 * the whole IP tree of every frame. A length of 0 (IPv4 with TSO, IPv6 or UDP jumbograms) bounds nothing. */
static void bound_by_header(const field_info *outer, const field_info *inner, gint *end)
{
    tvbuff_t *ds = outer->ds_tvb;
    gint at = outer->start, e;
    if (ds != inner->ds_tvb || at >= inner->start || (guint)at + 8 > tvb_captured_length(ds))
        return;
    int id = outer->hfinfo->id, version = tvb_get_guint8(ds, at) >> 4;
    if (id == proto_ip && version == 4)
        e = at + tvb_get_ntohs(ds, at + 2);
    else if (id == proto_ipv6 && version == 6)
        e = at + 40 + tvb_get_ntohs(ds, at + 4);
    else if (id == proto_udp)
        e = at + tvb_get_ntohs(ds, at + 4);
    else
        return;
    if (e > inner->start && e < *end)
        *end = e;
}

/* Applies bound_by_header to the protocol items under `node`, depth levels deep. */
static void bound_by_enclosing(proto_node *node, const field_info *inner, gint *end, int depth)
{
    for (proto_node *n = node->first_child; n; n = n->next) {
        const field_info *fi = PNODE_FINFO(n);
        if (fi && fi->hfinfo->type == FT_PROTOCOL)
            bound_by_header(fi, inner, end);
        if (depth > 1)
            bound_by_enclosing(n, inner, end, depth - 1);
    }
}

/* The first item of protocol `proto` under `node`, depth levels deep, in tree order. */
static const field_info *first_item(proto_node *node, int proto, int depth)
{
    for (proto_node *n = node->first_child; n; n = n->next) {
        const field_info *fi = PNODE_FINFO(n);
        if (fi && fi->hfinfo->id == proto)
            return fi;
        if (depth > 1 && (fi = first_item(n, proto, depth - 1)))
            return fi;
    }
    return NULL;
}

/* First pass: finds the SCTP or TCP layer's item. One walk over the frame's layer list (protocol IDs,
 * no string compares) says whether there is one; the items are then looked up among the tree's top-level
 * items, where dissectors put them (the whole tree where a dissector nests the layers it calls), so that
 * Wireshark need not collect them for us in every frame. */
static gboolean locate_layer(packet_info *pinfo, proto_tree *tree, frame_result_t *fr)
{
    gboolean has_sctp = FALSE, has_tcp = FALSE;
    for (wmem_list_frame_t *l = wmem_list_head(pinfo->layers); l; l = wmem_list_frame_next(l)) {
        int id = GPOINTER_TO_INT(wmem_list_frame_data(l));
        /* headers quoted inside ICMP errors are not segments of the flow */
        if (id == proto_icmp || id == proto_icmpv6)
            return FALSE;
        has_sctp |= id == proto_sctp;
        has_tcp |= id == proto_tcp;
    }
    if (!tree || (!has_sctp && !has_tcp))
        return FALSE;
    int proto = has_sctp ? proto_sctp : proto_tcp, depth = 1;
    const field_info *fi = first_item(tree, proto, depth);
    if (!fi && !(fi = first_item(tree, proto, depth = G_MAXINT)))
        return FALSE;
    guint idx = 0;
    GSList *l;
    for (l = pinfo->data_src; l; l = l->next, idx++)
        if (get_data_source_tvb((const struct data_source *)l->data) == fi->ds_tvb)
            break;
    if (!l)
        return FALSE;
    fr->layer = has_sctp ? LAYER_SCTP : LAYER_TCP;
    fr->layer_source = (guint8)idx;
    fr->layer_start = fi->start;
    fr->layer_length = fi->length; /* TCP: the header; the payload length comes from tcp.len */
    if (has_sctp) {
        gint end = (gint)tvb_captured_length(fi->ds_tvb);
        bound_by_enclosing(tree, fi, &end, depth);
        fr->layer_length = end - fi->start;
    }
    if (has_tcp && !has_sctp) {
        GPtrArray *len = proto_get_finfo_ptr_array(tree, hf_tcp_len);
        if (len && len->len)
            fr->tcp_payload_len = fvalue_get_uinteger(&((field_info *)g_ptr_array_index(len, 0))->value);
    }
    return TRUE;
}

static int dissect_nrsack(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    /* shared by every frame without an SCTP or TCP layer, so those cost no memory */
    static frame_result_t no_layer = {.layer = LAYER_NONE};
    frame_result_t *fr = (frame_result_t *)p_get_proto_data(wmem_file_scope(), pinfo, proto_nrsack, 0);
    gboolean analyse = fr == NULL;
    if (analyse) {
        frame_result_t found = {.ts = pinfo->abs_ts};
        if (!locate_layer(pinfo, tree, &found)) {
            p_add_proto_data(wmem_file_scope(), pinfo, proto_nrsack, 0, &no_layer);
            return 0;
        }
        fr = (frame_result_t *)wmem_memdup(wmem_file_scope(), &found, sizeof(found));
        p_add_proto_data(wmem_file_scope(), pinfo, proto_nrsack, 0, fr);
    }
    if (fr->layer == LAYER_NONE)
        return 0;

    /* items only where someone looks at them (a visible tree, a filter or field naming nrsack);
     * the analysis runs either way, and findings always get their expert info */
    gboolean items = tree && proto_field_is_referenced(tree, proto_nrsack);
    proto_item *ti = items ? proto_tree_add_item(tree, proto_nrsack, tvb, 0, 0, ENC_NA) : NULL;
    proto_tree *nt = items ? proto_item_add_subtree(ti, ett_nrsack) : NULL;
    tvbuff_t *ltvb = layer_tvb(pinfo, fr->layer_source, fr->layer_start, fr->layer_length);
    if (ltvb) {
        if (fr->layer == LAYER_SCTP)
            sctp_dissect(ltvb, pinfo, nt, analyse ? fr : NULL);
        else
            tcp_dissect(ltvb, pinfo, nt, fr->tcp_payload_len, analyse ? fr : NULL);
    }
    if (items)
        add_results(nt, tvb, fr);
    if (fr->findings) {
        if (!ti)
            ti = proto_tree_add_item(tree, proto_nrsack, tvb, 0, 0, ENC_NA);
        rules_emit(fr, pinfo, ti);
    }
    nrsack_tap_queue(pinfo, fr);
    return 0;
}

static void apply_prefs(void)
{
    dissector_handle_t sctp_handle = find_dissector("sctp");
    if (!sctp_handle)
        return;
    if (sctp_udp_port_registered && sctp_udp_port_registered != nrsack_prefs.sctp_udp_port)
        dissector_delete_uint("udp.port", sctp_udp_port_registered, sctp_handle);
    if (nrsack_prefs.sctp_udp_port && sctp_udp_port_registered != nrsack_prefs.sctp_udp_port)
        dissector_add_uint("udp.port", nrsack_prefs.sctp_udp_port, sctp_handle);
    sctp_udp_port_registered = nrsack_prefs.sctp_udp_port;
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

    nrsack_handle = create_dissector_handle(dissect_nrsack, proto_nrsack);
    register_postdissector(nrsack_handle);
    register_init_routine(init_state);
    nrsack_tap_register();
}

static void proto_reg_handoff_nrsack(void)
{
    proto_sctp = proto_get_id_by_filter_name("sctp");
    proto_tcp = proto_get_id_by_filter_name("tcp");
    hf_tcp_len = proto_registrar_get_id_byname("tcp.len");
    proto_ip = proto_get_id_by_filter_name("ip");
    proto_ipv6 = proto_get_id_by_filter_name("ipv6");
    proto_udp = proto_get_id_by_filter_name("udp");
    proto_icmp = proto_get_id_by_filter_name("icmp");
    proto_icmpv6 = proto_get_id_by_filter_name("icmpv6");
    /* tcp.len only: a wanted field makes tshark build a tree on every pass, and each costs Wireshark
     * work in every frame that has it (locate_layer finds the SCTP and TCP items itself) */
    int wanted_ids[] = {hf_tcp_len};
    GArray *wanted = g_array_new(FALSE, FALSE, sizeof(int));
    g_array_append_vals(wanted, wanted_ids, G_N_ELEMENTS(wanted_ids));
    set_postdissector_wanted_hfids(nrsack_handle, wanted);
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
