/* SPDX-License-Identifier: GPL-2.0-or-later */
/* TCP segment parsing and connection state shared by packet-nrsack-tcp.c and packet-nrsack-mptcp.c. */
#ifndef NRSACK_TCP_H
#define NRSACK_TCP_H

#include "nrsack.h"

#define TCP_FLAG_FIN 0x01
#define TCP_FLAG_SYN 0x02
#define TCP_FLAG_RST 0x04
#define TCP_FLAG_ACK 0x10
#define TCP_MAX_BLOCKS 4
#define TCP_MAX_MPTCP_OPTS 4
#define DSS_n 0x40            /* DSS flag n: 8-octet NR block offsets */
#define MAX_NR_BLOCKS 32

/* One NR-SACK option (wire-formats.md section 3). */
typedef struct {
    gboolean ours;        /* ExID matches the preference */
    gboolean permitted;   /* NR-SACK-Permitted (length 5) */
    guint8 flags;
    gboolean bad_length;
    guint n_blocks;
    guint32 left[TCP_MAX_BLOCKS], right[TCP_MAX_BLOCKS];
} nr_option_t;

/* The DSS option of one segment, with its NR blocks (absolute start/end from the DATA ACK). */
typedef struct {
    guint8 flags;
    gboolean has_ack, has_map;
    guint64 data_ack, dsn;
    gboolean ack_wide, dsn_wide;
    guint32 ssn;
    guint16 dll;
    gboolean has_nr, nr_count_bad;
    guint k;                  /* count byte */
    int k_off;
    guint n_blocks;
    guint64 start[MAX_NR_BLOCKS], end[MAX_NR_BLOCKS]; /* offsets from the DATA ACK */
    int block_off[MAX_NR_BLOCKS];
} dss_t;

typedef struct {
    guint16 sport, dport;
    guint32 seq, ack;
    guint8 flags;
    guint hlen;
    gboolean sack_permitted;
    gboolean has_sack;
    guint n_sack;
    guint32 sack_left[TCP_MAX_BLOCKS], sack_right[TCP_MAX_BLOCKS];
    gboolean has_nr;      /* an NR-SACK option with our ExID */
    nr_option_t nr;
    gboolean nr_overruns; /* an option with our ExID whose length runs past the header */
    guint n_mptcp;
    guint mptcp_off[TCP_MAX_MPTCP_OPTS], mptcp_len[TCP_MAX_MPTCP_OPTS];
} tcp_seg_t;

typedef struct mptcp_conn mptcp_conn_t;

typedef struct tcp_conn {
    open_flow_t open;          /* first: the budget's lists hold the connection by it */
    struct conn_key *table_key; /* its entry in the connection table */
    guint32 stream;
    address addr[2];
    guint16 port[2];           /* [0]: the SYN sender, or the first sender seen */
    gboolean syn_seen[2];      /* [0] SYN, [1] SYN-ACK */
    gboolean nr_permitted[2];
    guint8 nr_flags[2];
    flow_dir_t dir[2];         /* TCP level, dir[i]: data sent by endpoint i */
    handshake_t hs;            /* SYN, SYN-ACK, the opener's first ACK */
    gboolean fin_seen[2], fin_acked[2];
    guint32 fin_seq[2];        /* sequence number of endpoint i's FIN */
    gboolean ended;            /* RST, or FIN both ways and both acked: the state is released */
    /* MPTCP subflow */
    gboolean is_mptcp;
    gboolean mp_capable_syn[2];
    guint8 mp_version;
    gboolean mp_csum;
    gboolean key_known[2];
    guint64 key[2];
    mptcp_conn_t *mptcp;
    int mptcp_side[2];         /* MPTCP endpoint (0 client, 1 server) of each subflow endpoint */
    gboolean isn_known[2];
    guint32 isn[2];
    gboolean map_known[2];     /* last DSS mapping per direction */
    guint64 map_dsn[2];
    guint32 map_seq[2];        /* absolute subflow sequence number where map_dsn starts */
    guint32 map_len[2];        /* its Data-Level Length: the bytes it maps (0: an infinite mapping) */
    struct sub_maps *sent_maps[2]; /* per direction: subflow bytes sent -> DSNs, for the peer's acks */
    struct tcp_conn *next_subflow; /* the next of its MPTCP connection's subflows not ended */
    guint64 path_id;           /* the data level's path of its acks: one per subflow, never reused */
} tcp_conn_t;

/* packet-nrsack.c: the items of an NR-SACK option (tvb: the option alone, under an nrsack item of its
 * own) and of a DSS option's NR blocks. */
void nrsack_tree_tcp_option(proto_tree *tree, tvbuff_t *tvb, guint8 kind, const nr_option_t *o);
void nrsack_tree_mptcp_blocks(proto_tree *tree, tvbuff_t *tvb, const dss_t *d);

gboolean nr_option_parse(tvbuff_t *tvb, int off, int len, nr_option_t *o);

/* mptcp.c */
void mptcp_init_state(void);
/* A subflow ended: the connection's data-level state goes with its last subflow. */
void mptcp_subflow_ended(tcp_conn_t *sub);
/* The budget's entry that holds the connection (decisions.md 93): its MPTCP connection's, once it is a
 * subflow of one, so that the subflows of a connection are held and finished together. */
open_flow_t *tcp_open_flow(tcp_conn_t *c);
/* packet-nrsack-tcp.c: ends a connection or subflow, as a RST would. */
void tcp_end_conn(tcp_conn_t *c);
/* Decodes DSS NR blocks into the nrsack tree and, when fr != NULL, runs the data-level analysis. */
void mptcp_segment(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, const tcp_seg_t *seg, guint32 payload_len,
                   tcp_conn_t *conn, int from, frame_result_t *fr);
/* Whether the segment's MPTCP options make the connection an MPTCP subflow. */
gboolean mptcp_options_present(const tcp_seg_t *seg);

#endif
