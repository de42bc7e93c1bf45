/* SPDX-License-Identifier: MIT */
/* Declarations shared by the C files of nrsack.analyzer._native: the event and block records the
 * reader writes and the levels read, the buffer helper, and what each file adds to the module. */
#ifndef NRSACK_ANALYZER_H
#define NRSACK_ANALYZER_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "nrsack_core.h"

/* TCP header flags, as event_t.tcp_flags holds them (the header's byte) */
enum { TCP_FLAG_FIN = 0x01, TCP_FLAG_SYN = 0x02, TCP_FLAG_RST = 0x04, TCP_FLAG_ACK = 0x10 };

/* ---- event record (keep in step with events.py EVENT_DTYPE) ---- */
typedef struct {
    int64_t time_ns;
    uint64_t dsn;       /* MPTCP DSS data sequence number (as on the wire, 4 or 8 octets) */
    uint64_t data_ack;  /* MPTCP DATA ACK */
    uint64_t key;       /* MPTCP MP_CAPABLE sender key */
    int64_t blk_start;  /* index of the first row in the block table */
    uint32_t frame;     /* 1-based */
    int32_t conn;       /* address/port pair id, see conns() */
    uint32_t seq;       /* TSN, TCP sequence number, INIT initial TSN */
    uint32_t ack;       /* cumulative TSN ack, TCP ack */
    uint32_t len;       /* payload bytes (DATA chunk payload, TCP payload) */
    uint32_t wnd;       /* a_rwnd, TCP window (unscaled) */
    uint32_t tag;       /* SCTP verification tag; initiate tag for INIT / INIT-ACK */
    uint32_t aux;       /* FSACK timestamp, MP_JOIN token, subflow seq of a DSS mapping, MP_CAPABLE version */
    uint32_t flags;     /* EV_* bits */
    uint16_t stream;
    uint16_t ssn;
    uint16_t blk_count;
    uint16_t dss_len;   /* MPTCP data-level length of the mapping */
    uint8_t dir;        /* 0: sent by the conn's endpoint A (first source seen), 1: by B */
    uint8_t proto;      /* 132 SCTP, 6 TCP */
    uint8_t chunk;      /* SCTP chunk type; 255 for TCP */
    uint8_t tcp_flags;
} event_t;

typedef struct {
    int64_t event;
    uint64_t lo;
    uint64_t hi;
    uint8_t kind;
    uint8_t pad[7];
} block_t;

enum {
    EV_DATA = 1 << 0, EV_ACK = 1 << 1, EV_NRSACK = 1 << 2, EV_UNORDERED = 1 << 3,
    EV_SACK_PERM = 1 << 4, EV_NR_PERM = 1 << 5, EV_NEVER_RENEGE = 1 << 6, EV_MPTCP_NR_CAP = 1 << 7,
    EV_EXT_NRSACK = 1 << 8, EV_EXT_FSACK = 1 << 9, EV_DSS_MAP = 1 << 10, EV_DATA_ACK = 1 << 11,
    EV_MP_CAPABLE = 1 << 12, EV_MP_JOIN = 1 << 13, EV_DATA_FIN = 1 << 14, EV_SCTP_UDP = 1 << 15,
    EV_IPV6 = 1 << 16, EV_DSN64 = 1 << 17, EV_DACK64 = 1 << 18, EV_TCP_SACK = 1 << 19,
};
enum { BK_R = 1, BK_NR = 2, BK_DUP = 3, BK_TCP_SACK = 4, BK_TCP_NR = 5, BK_MPTCP_NR = 6, BK_ADDR = 7 };

/* A contiguous buffer of `n` items of `itemsize` bytes (n < 0: any length); `who` names the caller
 * in the error. Release with PyBuffer_Release when ok is set. */
typedef struct { Py_buffer b; int ok; } buf_t;
int get_buf(PyObject *o, buf_t *b, size_t itemsize, Py_ssize_t n, int writable, const char *who);

/* ---- a level's rows (_levels.c; flows.ScoreboardInput): also read by the short-flow pass of _scoreboard.c ---- */
enum { LEVEL_TCP = 0, LEVEL_SCTP = 1 };
typedef struct {
    int protocol, sender, never_renege;
    int32_t conn;  /* TCP: the conn of the connection or subflow */
} level_t;
typedef struct {   /* where level_row writes: Part's row columns, then its block columns */
    int64_t *pos, *lo, *hi, *size, *bstart, *time_ns;
    int8_t *kind;
    int32_t *bcount, *conn;
    uint32_t *frame;
    int64_t *blo, *bhi;
    int8_t *bnr;
} part_out_t;
/* One buffer for a part_out_t of `rows` rows and `blocks` blocks: its bytes (a multiple of 8, so more arrays may
 * follow), and its arrays placed in `mem` (8-aligned): the int64 ones, then int32, then int8. */
size_t part_out_bytes(size_t rows, size_t blocks);
void part_out_place(part_out_t *o, char *mem, size_t rows, size_t blocks);
enum { LEVEL_ROW_NONE, LEVEL_ROW_KEPT, LEVEL_ROW_FAR };
/* A serial space's state as Python carries it from chunk to chunk: None, or (highest, candidate or None) */
int space_from_py(PyObject *o, serial_space_t *s);
PyObject *space_to_py(const serial_space_t *s);
/* The arguments level_part and Board.feed_level share: (events, blocks, rows, side, protocol, conn, sender,
 * state, never_renege). level_args -> 0, or -1 with an exception set; level_args_release in either case. */
typedef struct {
    level_t lv;
    serial_space_t space;
    buf_t ev, bk, rows, side;
    const event_t *e;
    const block_t *blocks;
    const int64_t *row;
    const int8_t *sides;
    Py_ssize_t n_rows, n_events, n_blocks;
} level_args_t;
int level_args(PyObject *args, const char *who, level_args_t *a);
/* The buffers of a pass over groups of a chunk's rows (plain_tcp_flows, short_tcp_entries): events, blocks, rows (i8
 * event indices), sides (i1 per row), group_lo and group_hi (i8: group g's rows are rows[lo[g]:hi[g]]), checked: every
 * row an event, every group within the rows; longest: the most rows of a group. get_row_groups -> 0, or -1 with an
 * exception set; release_row_groups releases what it got either way. */
typedef struct {
    buf_t ev, bk, rows, side, lo, hi;
    Py_ssize_t n_events, n_blocks, n_rows, n_groups, longest;
} row_groups_t;
int get_row_groups(PyObject *o_ev, PyObject *o_bk, PyObject *o_rows, PyObject *o_side, PyObject *o_lo, PyObject *o_hi,
                   row_groups_t *g, const char *who);
void release_row_groups(row_groups_t *g);
void level_args_release(level_args_t *a);
void raise_released(PyObject *type, const char *message);
Py_ssize_t level_rows(const level_t *lv, serial_space_t *space, const event_t *e, Py_ssize_t n_events,
                      const int64_t *row, const int8_t *sides, Py_ssize_t n_rows, const block_t *blocks,
                      Py_ssize_t n_blocks, const part_out_t *o, Py_ssize_t *jb, int *nr_seen, Py_ssize_t *far,
                      uint32_t *far_frame);
Py_ssize_t quiet_rows(const level_t *lv, serial_space_t *space, const event_t *e, Py_ssize_t n_events,
                      const int64_t *row, const int8_t *sides, Py_ssize_t n_rows, const block_t *blocks,
                      Py_ssize_t n_blocks, Py_ssize_t *far, uint32_t *far_frame, const event_t **best,
                      uint64_t *best_serial, int64_t *pos, int64_t *serials);
int level_row(const level_t *lv, serial_space_t *space, const event_t *x, int mine, Py_ssize_t pos,
              const block_t *blocks, Py_ssize_t n_blocks, const part_out_t *o, Py_ssize_t j, Py_ssize_t *jb,
              int *nr_seen);

/* what each stage's file adds to the module (_module.c puts it together) */
int add_reader_type(PyObject *module);                       /* read/_reader.c */
int add_board_type(PyObject *module);                        /* state/_scoreboard.c */
int add_ledger_type(PyObject *module);                       /* rules/_ledger.c */
PyObject *short_tcp_entries(PyObject *self, PyObject *args); /* state/_scoreboard.c */
PyObject *feed_levels(PyObject *self, PyObject *args);       /* state/_scoreboard.c */
PyObject *plain_tcp_flows(PyObject *self, PyObject *args);   /* state/_levels.c */
PyObject *sndbuf_verdict(PyObject *self, PyObject *args);    /* state/_scoreboard.c */
PyObject *sndbuf_blocked(PyObject *self, PyObject *args);    /* state/_scoreboard.c */
PyObject *window_add(PyObject *self, PyObject *args);        /* state/_scoreboard.c */
PyObject *window_close_py(PyObject *self, PyObject *args);   /* state/_scoreboard.c */
PyObject *tcp_fin_closes(PyObject *self, PyObject *args);    /* state/_fin_closes.c */
PyObject *level_part(PyObject *self, PyObject *args);        /* state/_levels.c */
PyObject *unwrap_serials(PyObject *self, PyObject *args);    /* state/_levels.c */
PyObject *mptcp_part(PyObject *self, PyObject *args);        /* state/_levels.c */
PyObject *conn_present(PyObject *self, PyObject *args);      /* state/_flows.c */
PyObject *conn_flows(PyObject *self, PyObject *args);        /* state/_flows.c */
PyObject *handshake_rows(PyObject *self, PyObject *args);    /* state/_flows.c */
PyObject *chunk_scan(PyObject *self, PyObject *args);        /* state/_flows.c */
PyObject *flow_groups(PyObject *self, PyObject *args);       /* state/_flows.c */
PyObject *summary_pack(PyObject *self, PyObject *args);      /* state/_stores.c */
PyObject *summary_unpack(PyObject *self, PyObject *args);    /* state/_stores.c */
PyObject *fill_layout(PyObject *self, PyObject *args);       /* views/_layout.c */

#endif
