/* SPDX-License-Identifier: GPL-2.0-or-later */
/* MPTCP: data-level NR-SACK (wire-formats.md section 4). Subflows are tied to their MPTCP connection by
 * the tokens of RFC 8684 (SHA-1 of the key in version 0, SHA-256 in version 1); the data-level
 * scoreboard of each direction lives in the MPTCP connection, so acks on any subflow count. */
#include "tcp.h"

#include <gcrypt.h>
#include <wsutil/pint.h>
#include <epan/wmem_scopes.h>

#define SUB_MP_CAPABLE 0x0
#define SUB_MP_JOIN 0x1
#define SUB_DSS 0x2
#define DSS_A 0x01
#define DSS_a 0x02
#define DSS_M 0x04
#define DSS_m 0x08
#define DSS_N 0x20

struct mptcp_conn {
    open_flow_t open;          /* first: the budget holds the connection, its subflows together, by it */
    guint32 stream;
    gboolean handshake_seen;   /* SYN and SYN-ACK of the initial subflow */
    gboolean capable;          /* both carried NR-SACK-Permitted with flag 0x02 */
    gboolean csum_known, csum;
    gboolean token_known[2];
    guint32 token[2];
    flow_dir_t dir[2];         /* dir[i]: data sent by MPTCP endpoint i (0: client) */
    gboolean idsn_anchor[2];   /* dir[i]'s space holds only the IDSN + 1 its key gave, no wire number yet */
    gboolean wide_offset_known[2];
    guint64 wide_offset[2];    /* subtracted from dir[i]'s 64-bit numbers (wide_serial) */
    guint n_subflows;          /* attached and not ended: the data-level state goes with the last */
    tcp_conn_t *subflows;      /* those, listed by next_subflow */
    gint8 vantage;             /* the initial subflow's, kept when it ends before the others */
};

static wmem_map_t *conn_by_token;
static guint64 last_path_id;

void mptcp_init_state(void)
{
    conn_by_token = wmem_map_new(wmem_file_scope(), g_direct_hash, g_direct_equal);
    last_path_id = 0;
}

open_flow_t *tcp_open_flow(tcp_conn_t *c)
{
    return c->mptcp ? &c->mptcp->open : &c->open;
}

/* The budget finishes an MPTCP connection: each of its subflows ends (the last takes the data level). */
static void finish_mptcp_conn(open_flow_t *f)
{
    mptcp_conn_t *m = (mptcp_conn_t *)f;
    while (m->subflows)
        tcp_end_conn(m->subflows);
}

/* sub becomes a subflow of m; its activity so far becomes the connection's (decisions.md 93): an idle
 * subflow is never finished while its connection is active on another, which would split the data level. */
static void attach_subflow(mptcp_conn_t *m, tcp_conn_t *sub)
{
    sub->mptcp = m;
    m->n_subflows++;
    sub->next_subflow = m->subflows;
    m->subflows = sub;
    if (sub->open.listed) {
        gboolean has_data = sub->open.has_data;
        open_flow_remove(&sub->open);
        open_flow_touch(&m->open, has_data);
    }
}

gboolean mptcp_options_present(const tcp_seg_t *seg)
{
    return seg->n_mptcp > 0;
}

static mptcp_conn_t *new_mptcp_conn(tcp_conn_t *sub)
{
    mptcp_conn_t *m = wmem_new0(wmem_file_scope(), mptcp_conn_t);
    m->open.finish = finish_mptcp_conn;
    m->stream = nrsack_new_stream_index();
    for (int i = 0; i < 2; i++) {
        flow_dir_init(&m->dir[i], m->stream, i, "mptcp", FALSE, MN04, MN03);
        m->dir[i].gap_from_sacked = TRUE;
        m->dir[i].vantage = &sub->hs.vantage; /* the initial subflow's */
        flow_dir_set_endpoints(&m->dir[i], wmem_file_scope(), &sub->addr[i], sub->port[i], &sub->addr[1 - i], sub->port[1 - i]);
    }
    sub->mptcp_side[0] = 0;
    sub->mptcp_side[1] = 1;
    attach_subflow(m, sub);
    return m;
}


/* A 64-bit data-level number of dir[side] as a serial: the core's serials live below 2^63 (half of all
 * IDSNs do not), so numbers from 2^52 up are made relative to the direction's first one less 256 * 2^32
 * (whole multiples of 2^32: the low 32 bits, which 4-octet numbers unwrap against, are kept). The same
 * rule as the Lua plugin, whose serials are doubles (exact below 2^53). */
#define WIDE_AS_IS_BELOW (G_GUINT64_CONSTANT(1) << 52)
static guint64 wide_serial(mptcp_conn_t *m, int side, guint64 v)
{
    if (!m->wide_offset_known[side]) {
        m->wide_offset_known[side] = TRUE;
        m->wide_offset[side] = v < WIDE_AS_IS_BELOW ? 0 : ((v >> 32) - 256) << 32;
    }
    return v - m->wide_offset[side];
}

static void learn_key(tcp_conn_t *sub, int ep, tvbuff_t *tvb, int off)
{
    if (sub->key_known[ep] || !sub->mptcp)
        return;
    sub->key_known[ep] = TRUE;
    sub->key[ep] = tvb_get_ntoh64(tvb, off);
    guint8 digest[32];
    int algo = sub->mp_version == 0 ? GCRY_MD_SHA1 : GCRY_MD_SHA256;
    gcry_md_hash_buffer(algo, digest, tvb_get_ptr(tvb, off, 8), 8);
    mptcp_conn_t *m = sub->mptcp;
    int side = sub->mptcp_side[ep];
    /* RFC 8684: the IDSN is the hash's least significant 64 bits; the first data byte is IDSN + 1 (as
     * a TCP direction's is ISN + 1), and it anchors the data level (docs/scoreboard.md "anchor"). All
     * 64 bits (less wide_serial's offset): DSNs of 4 and of 8 octets then unwrap into one space. */
    guint64 idsn = pntohu64(digest + gcry_md_get_algo_dlen(algo) - 8);
    if (!m->dir[side].sb.space.anchored) { /* a key learned after the data anchors nothing */
        guint64 anchor;
        serial_take64(&m->dir[side].sb.space, wide_serial(m, side, idsn + 1), &anchor);
        m->idsn_anchor[side] = TRUE;
    }
    m->token[side] = pntohu32(digest);
    m->token_known[side] = TRUE;
    wmem_map_insert(conn_by_token, GUINT_TO_POINTER(m->token[side]), m);
}

static void handle_mp_capable(tvbuff_t *tvb, int off, int len, const tcp_seg_t *s, tcp_conn_t *sub, int from)
{
    guint8 flags = tvb_get_uint8(tvb, off + 3);
    gboolean syn = s->flags & TCP_FLAG_SYN, ack = s->flags & TCP_FLAG_ACK;
    if (syn && !ack) {
        sub->mp_version = tvb_get_uint8(tvb, off + 2) & 0x0F;
        if (!sub->mptcp)
            new_mptcp_conn(sub);
        sub->mp_capable_syn[0] = TRUE;
    }
    if (!sub->mptcp)
        return;
    if (syn) {
        sub->mptcp->csum_known = TRUE;
        sub->mptcp->csum |= (flags & 0x80) != 0;
        if (ack)
            sub->mp_capable_syn[1] = TRUE;
        if (len >= 12)
            learn_key(sub, from, tvb, off + 4);
    } else if (len >= 20) {
        learn_key(sub, from, tvb, off + 4);
        learn_key(sub, 1 - from, tvb, off + 12);
    }
}

static void handle_mp_join(tvbuff_t *tvb, int off, int len, const tcp_seg_t *s, tcp_conn_t *sub, int from)
{
    if (!(s->flags & TCP_FLAG_SYN) || (s->flags & TCP_FLAG_ACK) || len < 12 || sub->mptcp)
        return;
    guint32 token = tvb_get_ntohl(tvb, off + 4);
    mptcp_conn_t *m = (mptcp_conn_t *)wmem_map_lookup(conn_by_token, GUINT_TO_POINTER(token));
    if (!m)
        return;
    /* the token names the receiver of the SYN */
    int receiver_side = (m->token_known[1] && m->token[1] == token) ? 1 : 0;
    sub->mptcp_side[from] = 1 - receiver_side;
    sub->mptcp_side[1 - from] = receiver_side;
    attach_subflow(m, sub);
}

static gboolean parse_dss(tvbuff_t *tvb, int off, int len, const mptcp_conn_t *m, dss_t *d)
{
    memset(d, 0, sizeof(*d));
    if (len < 4)
        return FALSE;
    d->flags = tvb_get_uint8(tvb, off + 3);
    int p = off + 4, end = off + len;
    if (d->flags & DSS_A) {
        d->ack_wide = d->flags & DSS_a;
        int w = d->ack_wide ? 8 : 4;
        if (p + w > end)
            return FALSE;
        d->data_ack = d->ack_wide ? tvb_get_ntoh64(tvb, p) : tvb_get_ntohl(tvb, p);
        d->has_ack = TRUE;
        p += w;
    }
    if (d->flags & DSS_M) {
        d->dsn_wide = d->flags & DSS_m;
        int w = d->dsn_wide ? 8 : 4;
        if (p + w + 6 > end)
            return FALSE;
        d->dsn = d->dsn_wide ? tvb_get_ntoh64(tvb, p) : tvb_get_ntohl(tvb, p);
        d->ssn = tvb_get_ntohl(tvb, p + w);
        d->dll = tvb_get_ntohs(tvb, p + w + 4);
        d->has_map = TRUE;
        p += w + 6;
    }
    /* RFC 8684 3.3: without N the flags fix the length exactly (the checksum, 2 octets after a mapping,
     * when negotiated: either length is legal), as the analyzer's reader checks it */
    if (!(d->flags & DSS_N))
        return p == end || (d->has_map && p + 2 == end);
    d->has_nr = TRUE;
    int bs = (d->flags & DSS_n) ? 16 : 8;
    int rest = end - p;
    /* the checksum (if any) precedes the count byte; find which reading the length supports */
    gboolean fits_plain = rest >= 2 && rest == 2 + tvb_get_uint8(tvb, p) * bs;
    gboolean fits_csum = d->has_map && rest >= 4 && rest == 4 + tvb_get_uint8(tvb, p + 2) * bs;
    gboolean csum;
    if (m && m->csum_known && d->has_map)
        csum = m->csum;
    else
        csum = !fits_plain && fits_csum;
    if (csum)
        p += 2;
    if (p + 2 > end) {
        d->nr_count_bad = TRUE;
        return TRUE;
    }
    d->k = tvb_get_uint8(tvb, p);
    d->k_off = p;
    p += 2;
    d->nr_count_bad = end - p != (int)d->k * bs;
    for (guint i = 0; i < d->k && p + bs <= end && d->n_blocks < MAX_NR_BLOCKS; i++, p += bs) {
        d->block_off[d->n_blocks] = p;
        d->start[d->n_blocks] = bs == 16 ? tvb_get_ntoh64(tvb, p) : tvb_get_ntohl(tvb, p);
        d->end[d->n_blocks] = bs == 16 ? tvb_get_ntoh64(tvb, p + 8) : tvb_get_ntohl(tvb, p + 4);
        d->n_blocks++;
    }
    return TRUE;
}

/* One direction of a subflow: its mapped segments (subflow bytes -> DSNs, sorted by subflow sequence
 * number, first transmissions) and the highest subflow ack the data level has taken in (decisions 12). */
typedef struct {
    guint64 lo, hi, dsn;
} sub_map_t;

typedef struct sub_maps {
    sub_map_t *v;
    guint first, n, cap;      /* live entries v[first .. n) */
    serial_space_t space;
    gboolean cum_known;
    guint64 cum;
} sub_maps_t;

/* A subflow sequence number in the subflow's own space: the core's one rule. A value far outside it
 * (not adopted) maps to no segment, so the ack it came with covers nothing there. */
static guint64 sub_unwrap(sub_maps_t *m, guint32 v)
{
    guint64 x;
    serial_unwrap(&m->space, v, &x);
    return x;
}

void mptcp_subflow_ended(tcp_conn_t *sub)
{
    for (int i = 0; i < 2; i++) {
        struct sub_maps *sm = sub->sent_maps[i];
        if (sm) {
            wmem_free(wmem_file_scope(), sm->v);
            wmem_free(wmem_file_scope(), sm);
            sub->sent_maps[i] = NULL;
        }
    }
    mptcp_conn_t *m = sub->mptcp;
    if (!m)
        return;
    for (tcp_conn_t **p = &m->subflows; *p; p = &(*p)->next_subflow) {
        if (*p == sub) {
            *p = sub->next_subflow;
            break;
        }
    }
    if (m->dir[0].vantage == &sub->hs.vantage) { /* the subflow's memory goes after this frame */
        m->vantage = sub->hs.vantage;
        m->dir[0].vantage = m->dir[1].vantage = &m->vantage;
    }
    if (m->n_subflows && --m->n_subflows == 0) {
        open_flow_remove(&m->open);
        /* a later MP_JOIN with its token starts nothing here, as after the connection's end */
        for (int side = 0; side < 2; side++)
            if (m->token_known[side] && wmem_map_lookup(conn_by_token, GUINT_TO_POINTER(m->token[side])) == m)
                wmem_map_remove(conn_by_token, GUINT_TO_POINTER(m->token[side]));
        flow_dir_release(&m->dir[0]);
        flow_dir_release(&m->dir[1]);
    }
}

static sub_maps_t *sub_maps(tcp_conn_t *sub, int dir)
{
    if (!sub->sent_maps[dir])
        sub->sent_maps[dir] = wmem_new0(wmem_file_scope(), sub_maps_t);
    return sub->sent_maps[dir];
}

/* index of the first live entry with hi > x */
static guint sub_maps_find(const sub_maps_t *m, guint64 x)
{
    guint a = m->first, b = m->n;
    while (a < b) {
        guint mid = a + (b - a) / 2;
        if (m->v[mid].hi <= x)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

static void sub_maps_add(sub_maps_t *m, guint64 lo, guint64 hi, guint64 dsn)
{
    guint at = m->n;
    /* the last entry reaching past lo (a retransmission starting inside it): the place must be searched */
    if (m->n > m->first && m->v[m->n - 1].hi > lo) {
        at = sub_maps_find(m, lo);
        if (at < m->n && m->v[at].lo <= lo)
            return; /* a retransmission: its bytes are mapped already */
    }
    if (m->first && m->first * 2 >= m->n) { /* drop the entries trimmed away */
        memmove(m->v, m->v + m->first, (m->n - m->first) * sizeof(sub_map_t));
        at -= m->first;
        m->n -= m->first;
        m->first = 0;
    }
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 64;
        m->v = (sub_map_t *)wmem_realloc(wmem_file_scope(), m->v, m->cap * sizeof(sub_map_t));
    }
    memmove(m->v + at + 1, m->v + at, (m->n - at) * sizeof(sub_map_t));
    m->v[at] = (sub_map_t){lo, hi, dsn};
    m->n++;
}

/* Appends the DSN ranges of subflow bytes [lo, hi), merging adjacent ones. */
static void sub_maps_to_dsn(const sub_maps_t *m, guint64 lo, guint64 hi, wmem_array_t *out)
{
    for (guint i = sub_maps_find(m, lo); i < m->n && m->v[i].lo < hi; i++) {
        const sub_map_t *e = &m->v[i];
        ival_t piece = {e->dsn + (MAX(lo, e->lo) - e->lo), e->dsn + (MIN(hi, e->hi) - e->lo)};
        guint n = wmem_array_get_count(out);
        ival_t *last = n ? (ival_t *)wmem_array_index(out, n - 1) : NULL;
        if (last && last->hi == piece.lo)
            last->hi = piece.hi;
        else
            wmem_array_append_one(out, piece);
    }
}

/* The DSNs a subflow ack covers (decisions 12): what its cum ack covers beyond the subflow's previous
 * data-level ack, and its SACK (and TCP NR-SACK) blocks, through the mapped segments of direction dir. */
static wmem_array_t *subflow_acked_dsns(wmem_allocator_t *pool, const tcp_seg_t *s, tcp_conn_t *sub, int dir)
{
    wmem_array_t *out = wmem_array_new(pool, sizeof(ival_t));
    sub_maps_t *m = sub->sent_maps[dir];
    if (!m || !(s->flags & TCP_FLAG_ACK))
        return out;
    guint64 ack = sub_unwrap(m, s->ack);
    guint64 from = m->cum_known ? m->cum : m->n > m->first ? m->v[m->first].lo : ack;
    if (ack > from)
        sub_maps_to_dsn(m, from, ack, out);
    if (!m->cum_known || ack > m->cum) {
        m->cum_known = TRUE;
        m->cum = ack;
    }
    for (guint i = 0; i < s->n_sack; i++)
        sub_maps_to_dsn(m, sub_unwrap(m, s->sack_left[i]), sub_unwrap(m, s->sack_right[i]), out);
    if (s->has_nr && !s->nr.permitted)
        for (guint i = 0; i < s->nr.n_blocks; i++)
            sub_maps_to_dsn(m, sub_unwrap(m, s->nr.left[i]), sub_unwrap(m, s->nr.right[i]), out);
    /* bytes below the subflow's cum ack are never looked up again */
    m->first = sub_maps_find(m, m->cum);
    return out;
}

/* The first data-level number on the wire of direction side, against the IDSN + 1 its key gave: when
 * it lies more than SERIAL_FAR away, the DSNs do not follow the keys (a hand-built or damaged
 * handshake), and the wire anchors instead of the derived number (decisions 40): a number never seen
 * cannot make the first one seen "far". */
static void check_idsn_anchor(mptcp_conn_t *m, int side, guint64 v, gboolean wide)
{
    serial_space_t *space = &m->dir[side].sb.space;
    if (!m->idsn_anchor[side])
        return;
    m->idsn_anchor[side] = FALSE;
    guint64 x = wide ? v - m->wide_offset[side] : serial_near(space->highest, (guint32)v);
    guint64 distance = x > space->highest ? x - space->highest : space->highest - x;
    if (distance > SERIAL_FAR) {
        memset(space, 0, sizeof(*space));
        m->wide_offset_known[side] = FALSE;
    }
}

/* A data-level number, 4 or 8 octets on the wire; FALSE when it lies far outside the window. */
static gboolean unwrap_dl(frame_result_t *fr, mptcp_conn_t *m, int side, const char *what, guint64 v, gboolean wide,
                          guint64 *out)
{
    flow_dir_t *dir = &m->dir[side];
    if (dir->released)
        return FALSE;
    check_idsn_anchor(m, side, v, wide);
    if (!wide)
        return rtxq_unwrap(fr, dir, what, (guint32)v, out);
    return rtxq_take64(fr, dir, what, wide_serial(m, side, v), v, out);
}

/* The data-level bytes a segment carries (decisions 70): its payload bytes that the subflow's current
 * mapping covers, [map_seq, map_seq + Data-Level Length) (from map_seq on for an infinite mapping, length
 * 0), at their DSNs. A mapping's length bounds what the payload gives and never adds bytes: a DATA_FIN's
 * DSN, or a length beyond the payload, is no data. A segment without a readable DSS continues the mapping. */
static void mptcp_payload(const tcp_seg_t *s, guint32 payload_len, tcp_conn_t *sub, int from, frame_result_t *fr)
{
    mptcp_conn_t *m = sub->mptcp;
    if (!payload_len || !sub->map_known[from] || m->dir[sub->mptcp_side[from]].released)
        return;
    gint64 off = (gint32)(s->seq - sub->map_seq[from]);
    gint64 lo = MAX(off, 0), hi = off + payload_len;
    if (sub->map_len[from])
        hi = MIN(hi, (gint64)sub->map_len[from]);
    if (hi <= lo)
        return;
    guint64 dsn = sub->map_dsn[from] + (guint64)lo;
    rtxq_on_data(fr, &m->dir[sub->mptcp_side[from]], dsn, dsn + (guint64)(hi - lo), (guint32)(hi - lo));
    sub_maps_t *sm = sub_maps(sub, from);
    guint64 first = sub_unwrap(sm, s->seq) + (guint64)(lo - off);
    sub_maps_add(sm, first, first + (guint64)(hi - lo), dsn);
}

static void analyze_dss(packet_info *pinfo, const dss_t *d, const tcp_seg_t *s, guint32 payload_len, tcp_conn_t *sub,
                        int from, frame_result_t *fr)
{
    mptcp_conn_t *m = sub->mptcp;
    int side = sub->mptcp_side[from];
    flow_dir_t *peer = &m->dir[1 - side];
    guint64 dsn;
    if (d->has_map && unwrap_dl(fr, m, side, "DSN", d->dsn, d->dsn_wide, &dsn)) {
        sub->map_known[from] = TRUE;
        sub->map_dsn[from] = dsn;
        sub->map_seq[from] = sub->isn_known[from] ? sub->isn[from] + d->ssn : s->seq;
        sub->map_len[from] = d->dll;
    }
    mptcp_payload(s, payload_len, sub, from, fr);
    if (d->has_nr) {
        if (!m->capable)
            rules_raise(fr, MN01, !m->handshake_seen,
                        "DSS NR blocks although SYN and SYN-ACK did not both carry NR-SACK-Permitted with flag 0x02");
        if (!d->has_ack)
            rules_raise(fr, MN02, FALSE, "DSS flag N without a DATA ACK");
        if (d->nr_count_bad)
            rules_raise(fr, MN02, FALSE, "NR block count %u disagrees with the option length", d->k);
        for (guint i = 0; i < d->n_blocks; i++) {
            if (d->start[i] >= d->end[i])
                rules_raise(fr, MN05, FALSE, "NR block %u: Start %" G_GUINT64_FORMAT " >= End %" G_GUINT64_FORMAT,
                            i + 1, d->start[i], d->end[i]);
            else if (i && d->start[i] < d->end[i - 1])
                rules_raise(fr, MN05, FALSE, "NR block %u overlaps or is below the previous one", i + 1);
        }
        peer->nr_mode = TRUE;
    }
    if (!d->has_ack)
        return;
    wmem_array_t *received = subflow_acked_dsns(pinfo->pool, s, sub, 1 - from);
    guint64 cum;
    if (!peer->sb.snd_max || !unwrap_dl(fr, m, 1 - side, "DATA ACK", d->data_ack, d->ack_wide, &cum))
        return;
    ival_t nr[MAX_NR_BLOCKS];
    guint n = 0;
    /* NR blocks whose count the option cannot hold feed nothing (docs/scoreboard.md); the ack then says
     * nothing reliable about non-renegable data either */
    for (guint i = 0; i < d->n_blocks && !d->nr_count_bad; i++)
        if (d->start[i] < d->end[i])
            nr[n++] = (ival_t){cum + d->start[i], cum + d->end[i]};
    sb_ack_facts_t res;
    if (!sub->path_id)
        sub->path_id = ++last_path_id;
    rtxq_on_ack(fr, peer, cum, NULL, 0, nr, n, d->nr_count_bad ? REVOKE_NONE : REVOKE_IN_SPAN,
                sub->path_id /* the path: the subflow */, &res);
    rtxq_on_received(fr, peer, (const ival_t *)wmem_array_get_raw(received), wmem_array_get_count(received));
}

void mptcp_segment(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, const tcp_seg_t *s, guint32 payload_len,
                   tcp_conn_t *sub, int from, frame_result_t *fr)
{
    gboolean had_dss = FALSE, analyzed = FALSE;
    for (guint i = 0; i < s->n_mptcp; i++) {
        int off = s->mptcp_off[i], len = s->mptcp_len[i];
        if (len < 3)
            continue;
        guint8 subtype = tvb_get_uint8(tvb, off + 2) >> 4;
        if (fr && subtype == SUB_MP_CAPABLE && len >= 4)
            handle_mp_capable(tvb, off, len, s, sub, from);
        else if (fr && subtype == SUB_MP_JOIN)
            handle_mp_join(tvb, off, len, s, sub, from);
        else if (subtype == SUB_DSS && !had_dss) {
            had_dss = TRUE;
            dss_t d;
            if (!parse_dss(tvb, off, len, sub->mptcp, &d)) {
                rules_raise(fr, GEN01, FALSE, "DSS option length %d does not fit its flags 0x%02X (RFC 8684 3.3)", len,
                            len >= 4 ? tvb_get_uint8(tvb, off + 3) : 0);
                continue;
            }
            nrsack_tree_mptcp_blocks(tree, tvb, &d);
            if (!fr || sub->ended)
                continue;
            if (!sub->mptcp)
                new_mptcp_conn(sub); /* the handshake was not captured */
            analyze_dss(pinfo, &d, s, payload_len, sub, from, fr);
            analyzed = TRUE;
        }
    }
    if (!fr)
        return;
    mptcp_conn_t *m = sub->mptcp;
    if (!m)
        m = new_mptcp_conn(sub);
    if (!analyzed && !sub->ended) /* no readable DSS: the payload continues the current mapping */
        mptcp_payload(s, payload_len, sub, from, fr);
    if ((s->flags & (TCP_FLAG_SYN | TCP_FLAG_ACK)) == (TCP_FLAG_SYN | TCP_FLAG_ACK) && sub->mp_capable_syn[0] &&
        sub->mp_capable_syn[1]) {
        /* the initial subflow's handshake decides the data-level capability */
        m->handshake_seen = TRUE;
        m->capable = (sub->nr_flags[0] & 0x02) && (sub->nr_flags[1] & 0x02) && sub->nr_permitted[0] && sub->nr_permitted[1];
        m->dir[0].nr_mode |= m->capable;
        m->dir[1].nr_mode |= m->capable;
    }
    fr->has_stream = TRUE;
    fr->stream = m->stream;
}
