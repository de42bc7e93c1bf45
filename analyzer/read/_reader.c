/* SPDX-License-Identifier: MIT */
/* nrsack.analyzer._native.Reader: the hot path of the analyzer.
 *
 * Reader: libpcap (pcap, nanosecond pcap, pcapng) -> link layer -> IPv4/IPv6 -> SCTP (over IP or
 * UDP 9899) / TCP (with SACK, NR-SACK and MPTCP options) -> one fixed-size event record per SCTP
 * chunk or TCP segment, plus a side table of blocks (gap blocks, dup TSNs, addresses). Records are
 * handed to Python as bytes and viewed as numpy structured arrays (layout in events.py, EVENT_DTYPE).
 * Lengths come from the IP/SCTP headers, never from the captured length, so snaplen-truncated
 * captures keep their figures; what cannot be decoded becomes a GEN-01 finding (frame, reason).
 *
 * This file only reads: the module is put together in analyzer/_module.c, the Board and levels are
 * state/'s, the JSON layout writer views/'s.
 */
#include "_analyzer.h"  /* Python.h defines _GNU_SOURCE: fopencookie */
#include <pcap/pcap.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <errno.h>
#include <unistd.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define SCTP_UDP_PORT 9899
#define NRSACK_EXID 0x4E52
#define READ_BUFFER (1u << 20)
/* A regular pcap file is read through a window of it mapped in memory, this large (peak memory: the window,
 * not the file), instead of libpcap's two copies a record (the kernel's into stdio's buffer, fread's into
 * libpcap's): libpcap's read loop was a third of the reader's instructions. */
#define MAP_WINDOW ((size_t)4 << 20)
/* libpcap's bound on a record's captured length for the link types read here (max_snaplen_for_dlt): a
 * record above it, or above the file's snapshot length, is left to libpcap, which says what is wrong */
#define MAP_MAX_CAPLEN 262144u

/* ---- growable byte vector, kept in a bytearray so numpy can view it without a copy ---- */
typedef struct { PyObject *ba; char *p; size_t n, cap, start_cap; } vec_t;

/* Reader.read parses a file's frames (pcap and pcapng) with the GIL released (`--jobs`: the pipeline works on the chunk before
 * meanwhile); what touches Python objects on the way takes it back, rarely: a vector's growth, a finding,
 * an exception. Each is also right with the GIL held. */
static int raise_no_memory(void) {
    PyGILState_STATE held = PyGILState_Ensure();
    PyErr_NoMemory();
    PyGILState_Release(held);
    return -1;
}

/* A full vector grown (doubled, or to its start size), with the GIL taken for the bytearray: -1 out of memory. */
static __attribute__((noinline)) int vec_grow(vec_t *v, size_t sz) {
    size_t cap = v->cap ? v->cap * 2 : v->start_cap ? v->start_cap : 1 << 16;
    while (cap < v->n + sz) cap *= 2;
    PyGILState_STATE held = PyGILState_Ensure();
    int failed = 0;
    if (!v->ba) {
        v->ba = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)cap);
        failed = !v->ba;
    } else {
        failed = PyByteArray_Resize(v->ba, (Py_ssize_t)cap) < 0;
    }
    PyGILState_Release(held);
    if (failed) return -1;
    v->p = PyByteArray_AS_STRING(v->ba); v->cap = cap;
    return 0;
}

/* `sz` bytes copied from `blank` at the vector's end (inline: with the size known there, a few vector
 * stores, not the string instruction a memset of a variable size becomes) -> them, NULL out of memory */
static inline void *vec_push_copy(vec_t *v, const void *blank, size_t sz) {
    if (v->n + sz > v->cap && vec_grow(v, sz) < 0) return NULL;
    void *r = v->p + v->n;
    memcpy(r, blank, sz);
    v->n += sz;
    return r;
}

/* ---- connection table: open addressing on (proto, endpoint pair) ---- */
typedef struct {
    uint8_t a[16], b[16];
    uint16_t pa, pb;
    uint8_t proto, v6, used, udp;
    int32_t id;
    uint32_t repaired, repaired_frame;  /* packets whose payload length came from the frame, the first */
    /* what tells a new flow on the same endpoints (decisions.md "A flow after a flow"): per
     * direction the opening's number (TCP: the SYN's ISN; SCTP: the INIT / INIT-ACK's initiate tag),
     * and how the flow ended (END_FIN << dir: that direction's FIN; END_CLOSED: RST,
     * SHUTDOWN-COMPLETE or ABORT) */
    uint8_t retired, have_open[2], ended;
    uint32_t open[2];
} conn_t;

enum { END_FIN = 1, END_CLOSED = 4 };

static uint32_t rd16(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) << 32 | rd32(p + 4); }

typedef struct {
    PyObject_HEAD
    pcap_t *pcap;
    int linktype;
    uint32_t frame;
    int64_t n_events, n_blocks;
    vec_t ev, bk;
    conn_t *table; size_t table_cap, n_conns;
    int32_t last_conn;  /* the conn the last lookup found (when n_conns > 0) */
    int32_t *order;  /* conn id -> slot */
    size_t order_cap;
    PyObject *findings; /* list of (frame, reason) */
    PyObject *rule_findings; /* list of (frame, rule ID, reason): malformations a specific rule of rules.md names */
    int done;
    char error[PCAP_ERRBUF_SIZE + 64];
    char truncated[PCAP_ERRBUF_SIZE + 64]; /* why reading stopped before the end of the file ("" if it did not) */
    /* the capture clock as the analysis sees it: never backwards, steps beyond a bound removed */
    int have_clock;
    uint64_t clock_raw, clock_ns;
    uint32_t held_back, held_back_frame; uint64_t held_back_max;
    int beyond_2262_noted;
    /* pcapng, read block by block here (libpcap refuses interfaces of different link types and
     * second sections): the file, the section's byte order, its interfaces */
    FILE *ng;
    int ng_swap;
    struct ng_iface { int linktype, supported, noted; unsigned __int128 units; uint64_t offset_s; int64_t offset_sign; uint32_t snaplen; } *ifaces;
    size_t n_ifaces, ifaces_cap;
    uint8_t *block; size_t block_cap;
    char *iobuf;  /* the FILE's buffer: it must outlive the FILE, so the Reader owns it */
    struct peek_s *peek;  /* a pipe's reading state (NULL for a file), owned by the FILE */
    /* skim(): frames are counted and their times kept, nothing parsed (a file's span, to tell whether
     * files continue each other) */
    int skim, have_span;
    uint64_t span_first, span_last;
    /* the mapped window of a regular pcap file (map_on: reading through it; 0: libpcap reads on from the
     * FILE's position, set to map_pos when the window handed over) */
    int map_on, map_nano;
    int map_fd;
    uint64_t map_size, map_pos, map_start;  /* file size at open; next record; the window's first byte */
    const uint8_t *map; size_t map_len;
    uint32_t map_snaplen;
} Reader;

/* skim(): the raw time of a frame read only for its span (the first frame's, the latest) */
static void span_note(Reader *r, uint64_t raw) {
    if (!r->have_span) { r->have_span = 1; r->span_first = raw; }
    if (raw > r->span_last) r->span_last = raw;
}

static uint64_t load64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* The same for both directions of a conn: the two endpoints' words are combined symmetrically
 * (sum and xor), then mixed (splitmix64's finaliser). */
static uint64_t conn_hash(uint8_t proto, const uint8_t *a, const uint8_t *b, uint16_t pa, uint16_t pb) {
    uint64_t x = load64(a) ^ load64(a + 8) * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)pa << 48);
    uint64_t y = load64(b) ^ load64(b + 8) * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)pb << 48);
    uint64_t h = (x + y) ^ ((x ^ y) * 0xBF58476D1CE4E5B9ULL) ^ proto;
    h ^= h >> 30; h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 27; h *= 0x94D049BB133111EBULL;
    return h ^ (h >> 31);
}

static int table_grow(Reader *r);

/* -> the direction in which a live conn has the packet's endpoints (0: as its A -> B), -1 not its */
static inline int conn_match(const conn_t *c, uint8_t proto, const uint8_t *src, const uint8_t *dst, uint16_t sp,
                             uint16_t dp) {
    if (c->proto != proto || c->retired) return -1;
    if (c->pa == sp && c->pb == dp && !memcmp(c->a, src, 16) && !memcmp(c->b, dst, 16)) return 0;
    if (c->pa == dp && c->pb == sp && !memcmp(c->a, dst, 16) && !memcmp(c->b, src, 16)) return 1;
    return -1;
}

/* Returns the conn id and sets *dir; -1 on memory error. The conn of the packet before is tried first,
 * without hashing: a transfer's packets come in runs. (Live conns never share endpoints, so it is the one
 * the probe would find.) */
static int32_t conn_lookup(Reader *r, uint8_t proto, int v6, int udp, const uint8_t *src, const uint8_t *dst,
                           uint16_t sp, uint16_t dp, uint8_t *dir) {
    if (r->n_conns) {
        int found = conn_match(&r->table[r->order[r->last_conn]], proto, src, dst, sp, dp);
        if (found >= 0) { *dir = (uint8_t)found; return r->last_conn; }
    }
    if (r->n_conns * 2 >= r->table_cap && table_grow(r) < 0) return -1;
    size_t mask = r->table_cap - 1, i = conn_hash(proto, src, dst, sp, dp) & mask;
    for (;; i = (i + 1) & mask) {
        conn_t *c = &r->table[i];
        if (!c->used) {
            c->used = 1; c->proto = proto; c->v6 = v6; c->udp = udp;
            memcpy(c->a, src, 16); memcpy(c->b, dst, 16); c->pa = sp; c->pb = dp;
            c->id = (int32_t)r->n_conns;
            if (r->n_conns >= r->order_cap) {
                size_t cap = r->order_cap ? r->order_cap * 2 : 256;
                int32_t *o = realloc(r->order, cap * sizeof *o);
                if (!o) return -1;
                r->order = o; r->order_cap = cap;
            }
            r->order[r->n_conns++] = (int32_t)i;
            *dir = 0;
            r->last_conn = c->id;
            return c->id;
        }
        int found = conn_match(c, proto, src, dst, sp, dp);
        if (found >= 0) { *dir = (uint8_t)found; r->last_conn = c->id; return c->id; }
    }
}

/* A new flow opens on a conn's endpoints: its slot is retired (its id keeps naming the old flow's
 * events) and the lookup makes a fresh conn whose direction 0 is the opener. */
static int32_t conn_renew(Reader *r, int32_t conn, uint8_t proto, int v6, int udp, const uint8_t *src,
                          const uint8_t *dst, uint16_t sp, uint16_t dp, uint8_t *dir) {
    r->table[r->order[conn]].retired = 1;
    return conn_lookup(r, proto, v6, udp, src, dst, sp, dp, dir);
}

static void conn_opened(Reader *r, int32_t conn, uint8_t dir, uint32_t number) {
    conn_t *c = &r->table[r->order[conn]];
    c->have_open[dir] = 1; c->open[dir] = number;
}

static int table_grow(Reader *r) {
    size_t cap = r->table_cap ? r->table_cap * 2 : 1024;
    conn_t *old = r->table; size_t oldcap = r->table_cap;
    conn_t *t = calloc(cap, sizeof *t);
    if (!t) return -1;
    r->table = t; r->table_cap = cap;
    for (size_t k = 0; k < r->n_conns; k++) {
        conn_t *c = &old[r->order[k]];
        size_t i = conn_hash(c->proto, c->a, c->b, c->pa, c->pb) & (cap - 1);
        while (t[i].used) i = (i + 1) & (cap - 1);
        t[i] = *c;
        r->order[k] = (int32_t)i;
    }
    (void)oldcap;
    free(old);
    return 0;
}

static int finding(Reader *r, const char *fmt, ...) {
    char msg[256];
    va_list ap; va_start(ap, fmt); vsnprintf(msg, sizeof msg, fmt, ap); va_end(ap);
    PyGILState_STATE held = PyGILState_Ensure();
    PyObject *t = Py_BuildValue("(Is)", r->frame, msg);
    int rc = t ? PyList_Append(r->findings, t) : -1;
    Py_XDECREF(t);
    PyGILState_Release(held);
    return rc;
}

/* A malformation that rules.md gives its own rule (NR-05, TN-05, MN-02) rather than GEN-01: the
 * checker reports it under that ID; the rest of the packet is still analysed (an SCTP ack chunk
 * whose counts fail feeds nothing of itself, decisions.md 40). */
static int rule_finding(Reader *r, const char *rule, const char *fmt, ...) {
    char msg[256];
    va_list ap; va_start(ap, fmt); vsnprintf(msg, sizeof msg, fmt, ap); va_end(ap);
    PyGILState_STATE held = PyGILState_Ensure();
    PyObject *t = Py_BuildValue("(Iss)", r->frame, rule, msg);
    int rc = t ? PyList_Append(r->rule_findings, t) : -1;
    Py_XDECREF(t);
    PyGILState_Release(held);
    return rc;
}

/* Packet-level context shared by the transport parsers. */
typedef struct {
    int64_t time_ns;
    uint8_t src[16], dst[16];
    int v6;
    int repaired;  /* the IP length was 0 or beyond the frame: the payload length came from the frame */
} pkt_t;

/* Counts a packet whose payload length came from the frame against its conn (one note per conn). */
static void note_repair(Reader *r, const pkt_t *k, int32_t conn) {
    if (!k->repaired || conn < 0) return;
    conn_t *c = &r->table[r->order[conn]];
    if (!c->repaired++) c->repaired_frame = r->frame;
}

static inline event_t *new_event(Reader *r, const pkt_t *k) {
    static const event_t blank;
    event_t *e = vec_push_copy(&r->ev, &blank, sizeof blank);
    if (!e) return NULL;
    e->time_ns = k->time_ns;
    e->frame = r->frame;
    e->blk_start = r->n_blocks;
    if (k->v6) e->flags |= EV_IPV6;
    r->n_events++;
    return e;
}

static int add_block(Reader *r, event_t *e, uint8_t kind, uint64_t lo, uint64_t hi) {
    static const block_t blank;
    block_t *b = vec_push_copy(&r->bk, &blank, sizeof blank);
    if (!b) return -1;
    b->event = r->n_events - 1; b->kind = kind; b->lo = lo; b->hi = hi;
    r->n_blocks++;
    e->blk_count++;
    return 0;
}

static int add_addr(Reader *r, event_t *e, const uint8_t *a, int v6) {
    uint8_t full[16] = {0};
    if (v6) memcpy(full, a, 16);
    else { full[10] = full[11] = 0xff; memcpy(full + 12, a, 4); }
    return add_block(r, e, BK_ADDR, rd64(full), rd64(full + 8));
}

/* Address parameters (types 5, 6) and Supported Extensions (0x8008) of INIT / INIT-ACK.
 * Returns 0, -1 on memory error, 1 on malformed parameters. */
static int sctp_params(Reader *r, event_t *e, const uint8_t *p, size_t n, size_t avail) {
    size_t off = 0;
    while (off + 4 <= n) {
        uint32_t type = rd16(p + off), plen = rd16(p + off + 2);
        if (plen < 4 || off + plen > n) return 1;
        if (off + plen > avail) return 0; /* snaplen: the rest is unread, not malformed */
        if (type == 5 && plen == 8) { if (add_addr(r, e, p + off + 4, 0) < 0) return -1; }
        else if (type == 6 && plen == 20) { if (add_addr(r, e, p + off + 4, 1) < 0) return -1; }
        else if (type == 0x8008) {
            for (uint32_t i = 4; i < plen; i++) {
                if (p[off + i] == 0x10) e->flags |= EV_EXT_NRSACK;
                if (p[off + i] == 0xA0) e->flags |= EV_EXT_FSACK;
            }
        }
        off += (plen + 3) & ~3u;
    }
    return 0;
}

/* SCTP common header + chunks. n = SCTP packet length from the IP header, cap = captured bytes. */
static int parse_sctp(Reader *r, const pkt_t *k, const uint8_t *p, size_t n, size_t cap, int udp) {
    if (n < 12 || cap < 12) return finding(r, "SCTP common header truncated");
    uint16_t sp = rd16(p), dp = rd16(p + 2);
    uint32_t vtag = rd32(p + 4);
    uint8_t dir;
    int32_t conn = conn_lookup(r, 132, k->v6, udp, k->src, k->dst, sp, dp, &dir);
    if (conn >= 0 && n >= 32 && cap >= 32 && p[12] == 0x01 && rd16(p + 14) >= 20) {
        /* an INIT (alone in its packet, RFC 9260 6.10) after SHUTDOWN-COMPLETE / ABORT, or with a tag
         * other than its sender's (a restart, RFC 9260 5.2.4): a new association */
        const conn_t *c = &r->table[r->order[conn]];
        if ((c->ended & END_CLOSED) || (c->have_open[dir] && c->open[dir] != rd32(p + 16)))
            conn = conn_renew(r, conn, 132, k->v6, udp, k->src, k->dst, sp, dp, &dir);
    }
    if (conn < 0) return raise_no_memory();
    note_repair(r, k, conn);
    size_t off = 12;
    while (off + 4 <= n) {
        if (off + 4 > cap) return 0; /* snaplen cut the rest: lengths unknown, nothing to count */
        const uint8_t *c = p + off;
        uint8_t type = c[0], cflags = c[1];
        uint32_t clen = rd16(c + 2);
        if (clen < 4 || off + clen > n)
            return finding(r, "SCTP chunk type %u at offset %zu: length %u exceeds the packet", type, off, clen);
        size_t avail = cap > off ? cap - off : 0;
        event_t *e = new_event(r, k);
        if (!e) return raise_no_memory();
        e->conn = conn; e->dir = dir; e->proto = 132; e->chunk = type; e->tag = vtag;
        if (udp) e->flags |= EV_SCTP_UDP;
        if (type == 0x0E || type == 0x06) r->table[r->order[conn]].ended |= END_CLOSED;
        switch (type) {
        case 0x00: /* DATA */
            if (clen < 16) return finding(r, "SCTP DATA chunk shorter than its header (%u)", clen);
            if (avail < 16) return finding(r, "SCTP DATA chunk header cut by the snapshot length");
            e->flags |= EV_DATA | ((cflags & 0x04) ? EV_UNORDERED : 0);
            e->seq = rd32(c + 4); e->stream = rd16(c + 8); e->ssn = rd16(c + 10);
            e->aux = rd32(c + 12); /* PPID */
            e->len = clen - 16;
            break;
        case 0x03: /* SACK */
        case 0x10: { /* NR-SACK */
            size_t hdr = type == 0x03 ? 16 : 20;
            if (clen < hdr) return finding(r, "SCTP %s chunk shorter than its header (%u)", type == 3 ? "SACK" : "NR-SACK", clen);
            if (avail < clen) return finding(r, "SCTP %s chunk cut by the snapshot length", type == 3 ? "SACK" : "NR-SACK");
            uint32_t nr_r = rd16(c + 12), nr_nr = type == 0x10 ? rd16(c + 14) : 0;
            uint32_t ndup = type == 0x10 ? rd16(c + 16) : rd16(c + 14);
            size_t need = hdr + 4 * (size_t)(nr_r + nr_nr + ndup);
            if (need != clen) {
                /* NR-05 for an NR-SACK (GEN-01 for a SACK, as the C plugin): counts that do not fit the
                 * length leave the whole ack unreadable, so nothing of it is fed (decisions.md 40) */
                int rc = type == 0x10
                    ? rule_finding(r, "NR-05", "NR-SACK counts (%u R, %u NR, %u dup) need %zu bytes, chunk length is %u",
                                   nr_r, nr_nr, ndup, need, clen)
                    : finding(r, "SCTP SACK chunk: %u+%u blocks and %u dup TSNs need %zu bytes, chunk length is %u",
                              nr_r, nr_nr, ndup, need, clen);
                if (rc < 0) return -1;
                break;
            }
            e->flags |= EV_ACK | (type == 0x10 ? EV_NRSACK : 0);
            e->ack = rd32(c + 4); e->wnd = rd32(c + 8);
            const uint8_t *b = c + hdr;
            for (uint32_t i = 0; i < nr_r + nr_nr; i++, b += 4)
                if (add_block(r, e, i < nr_r ? BK_R : BK_NR, rd16(b), rd16(b + 2)) < 0) return raise_no_memory();
            for (uint32_t i = 0; i < ndup; i++, b += 4)
                if (add_block(r, e, BK_DUP, rd32(b), rd32(b)) < 0) return raise_no_memory();
            break;
        }
        case 0x01: case 0x02: { /* INIT, INIT-ACK */
            if (clen < 20) return finding(r, "SCTP INIT chunk shorter than its header (%u)", clen);
            if (avail < 20) return finding(r, "SCTP INIT chunk cut by the snapshot length");
            e->tag = rd32(c + 4); e->wnd = rd32(c + 8); e->seq = rd32(c + 16);
            conn_opened(r, conn, dir, e->tag);
            int rc = sctp_params(r, e, c + 20, clen - 20, avail - 20);
            if (rc < 0) return raise_no_memory();
            if (rc > 0) { if (finding(r, "SCTP INIT parameters: bad parameter length") < 0) return -1; }
            break;
        }
        case 0xA0: case 0xA1: /* FSACK-INIT, FSACK-ACK */
            if (clen != 8) return finding(r, "FSACK chunk 0x%02X length %u, expected 8", type, clen);
            if (avail < 8) return finding(r, "FSACK chunk cut by the snapshot length");
            e->aux = rd32(c + 4);
            break;
        case 0xA2: { /* FSACK-COMPLETE */
            if (clen != 12 && clen != 24) return finding(r, "FSACK-COMPLETE length %u, expected 12 or 24", clen);
            if (avail < clen) return finding(r, "FSACK-COMPLETE cut by the snapshot length");
            uint32_t pt = rd16(c + 4), pl = rd16(c + 6);
            if (!((pt == 5 && pl == 8 && clen == 12) || (pt == 6 && pl == 20 && clen == 24)))
                return finding(r, "FSACK-COMPLETE address parameter type %u length %u", pt, pl);
            if (add_addr(r, e, c + 8, pt == 6) < 0) return raise_no_memory();
            break;
        }
        default:
            break;
        }
        off += (clen + 3) & ~3u;
    }
    return 0;
}

/* TCP header, options and payload length (from the IP header). */
static int parse_tcp(Reader *r, const pkt_t *k, const uint8_t *p, size_t n, size_t cap) {
    if (n < 20 || cap < 20) return finding(r, "TCP header truncated");
    size_t thl = (size_t)(p[12] >> 4) * 4;
    if (thl < 20 || thl > n) return finding(r, "TCP data offset %zu invalid for a segment of %zu bytes", thl, n);
    uint8_t dir;
    int32_t conn = conn_lookup(r, 6, k->v6, 0, k->src, k->dst, rd16(p), rd16(p + 2), &dir);
    uint8_t flags = p[13];
    if (conn >= 0 && (flags & 0x12) == 0x02) {
        /* a SYN with a new ISN after RST or both FINs (closed, or TIME-WAIT: RFC 9293 3.10.7.4 and
         * RFC 6191 let a new connection in): a new connection on the same 4-tuple */
        const conn_t *c = &r->table[r->order[conn]];
        if ((c->ended & END_CLOSED || (c->ended & (END_FIN | END_FIN << 1)) == (END_FIN | END_FIN << 1))
            && !(c->have_open[dir] && c->open[dir] == rd32(p + 4)))
            conn = conn_renew(r, conn, 6, k->v6, 0, k->src, k->dst, rd16(p), rd16(p + 2), &dir);
    }
    if (conn < 0) return raise_no_memory();
    if (flags & 0x02) conn_opened(r, conn, dir, rd32(p + 4));
    if (flags & 0x04) r->table[r->order[conn]].ended |= END_CLOSED;
    if (flags & 0x01) r->table[r->order[conn]].ended |= END_FIN << dir;
    note_repair(r, k, conn);
    event_t *e = new_event(r, k);
    if (!e) return raise_no_memory();
    e->conn = conn; e->dir = dir; e->proto = 6; e->chunk = 255;
    e->seq = rd32(p + 4); e->ack = rd32(p + 8); e->wnd = rd16(p + 14);
    e->tcp_flags = p[13];
    e->len = (uint32_t)(n - thl);
    if (e->len) e->flags |= EV_DATA;
    if (p[13] & 0x10) e->flags |= EV_ACK;
    size_t ocap = thl < cap ? thl : cap; /* options cut by snaplen are not read */
    size_t off = 20;
    while (off < ocap) {
        const uint8_t *o = p + off;
        if (o[0] == 0) break;
        if (o[0] == 1) { off++; continue; }
        if (off + 2 > thl) return finding(r, "TCP option kind %u without length", o[0]);
        size_t olen = o[1];
        if (olen < 2 || off + olen > thl) {
            if ((o[0] == 253 || o[0] == 254) && off + 4 <= thl && rd16(o + 2) == NRSACK_EXID)
                return rule_finding(r, "TN-05", "TCP NR-SACK option length %zu overruns the header", olen);
            return finding(r, "TCP option kind %u length %zu overruns the header", o[0], olen);
        }
        if (off + olen > ocap) break;
        switch (o[0]) {
        case 4: e->flags |= EV_SACK_PERM; break;
        case 5:
            if ((olen - 2) % 8) { if (finding(r, "TCP SACK option length %zu", olen) < 0) return -1; break; }
            e->flags |= EV_TCP_SACK;
            for (size_t i = 2; i < olen; i += 8)
                if (add_block(r, e, BK_TCP_SACK, rd32(o + i), rd32(o + i + 4)) < 0) return raise_no_memory();
            break;
        case 253: case 254:
            if (olen < 4 || rd16(o + 2) != NRSACK_EXID) break; /* another experiment */
            if (olen == 5) {
                e->flags |= EV_NR_PERM;
                if (o[4] & 0x01) e->flags |= EV_NEVER_RENEGE;
                if (o[4] & 0x02) e->flags |= EV_MPTCP_NR_CAP;
            } else if (olen > 4 && (olen - 4) % 8 == 0) {
                e->flags |= EV_NRSACK;
                for (size_t i = 4; i < olen; i += 8)
                    if (add_block(r, e, BK_TCP_NR, rd32(o + i), rd32(o + i + 4)) < 0) return raise_no_memory();
            } else if (rule_finding(r, "TN-05", "TCP NR-SACK option length %zu (4 + 8n expected)", olen) < 0) return -1;
            break;
        case 30: { /* MPTCP */
            if (olen < 3) { if (finding(r, "MPTCP option length %zu", olen) < 0) return -1; break; }
            uint8_t sub = o[2] >> 4;
            if (sub == 0) {
                e->flags |= EV_MP_CAPABLE;
                if (!(e->flags & EV_DSS_MAP)) e->aux = o[2] & 0x0F; /* the version: the IDSN's hash (RFC 8684 3.1) */
                if (olen >= 12) e->key = rd64(o + 4);
            } else if (sub == 1) {
                e->flags |= EV_MP_JOIN;
                if (olen == 12) e->aux = rd32(o + 4); /* SYN: token of the receiver */
            } else if (sub == 2) {
                if (olen < 4) { if (finding(r, "MPTCP DSS option length %zu", olen) < 0) return -1; break; }
                uint8_t f = o[3];
                size_t pos = 4;
                /* RFC 8684 3.3: the flags fix the length: DATA ACK (A, 4 or 8 octets by a), mapping (M:
                 * DSN 4 or 8 by m, subflow seq 4, data-level length 2), then the checksum (2, when
                 * negotiated: either length is legal). Without N (the NR extension: its count and
                 * blocks follow) the length must be one of those exactly; a and m without A and M
                 * change nothing (as the RFC's receivers read them). */
                size_t need = 4 + ((f & 1) ? ((f & 2) ? 8 : 4) : 0) + ((f & 4) ? ((f & 8) ? 8 : 4) + 6 : 0);
                int exact = (f & 0x20) || olen == need || ((f & 4) && olen == need + 2);
                if (need > olen || !exact) {
                    if (finding(r, "MPTCP DSS option length %zu does not fit its flags 0x%02X (RFC 8684 3.3)", olen, f) < 0)
                        return -1;
                    break;
                }
                if (f & 1) {
                    e->flags |= EV_DATA_ACK;
                    if (f & 2) { e->data_ack = rd64(o + pos); pos += 8; e->flags |= EV_DACK64; }
                    else { e->data_ack = rd32(o + pos); pos += 4; }
                }
                if (f & 4) {
                    e->flags |= EV_DSS_MAP;
                    if (f & 8) { e->dsn = rd64(o + pos); pos += 8; e->flags |= EV_DSN64; }
                    else { e->dsn = rd32(o + pos); pos += 4; }
                    e->aux = rd32(o + pos); e->dss_len = (uint16_t)rd16(o + pos + 4); pos += 6;
                }
                if (f & 0x10) e->flags |= EV_DATA_FIN;
                if ((f & 0x20) && !(f & 1)
                    && rule_finding(r, "MN-02", "MPTCP DSS flag N (NR blocks) without a DATA ACK (flags 0x%02X)", f) < 0)
                    return -1;
                if (f & 0x20) {
                    size_t bs = (f & 0x40) ? 16 : 8;
                    /* the checksum (2 octets) may sit before the count: the lengths decide */
                    size_t kpos = pos;
                    if (!(kpos + 2 <= olen && kpos + 2 + o[kpos] * bs == olen)) {
                        kpos = pos + 2;
                        if (!(kpos + 2 <= olen && kpos + 2 + o[kpos] * bs == olen)) {
                            if (rule_finding(r, "MN-02", "MPTCP DSS NR block count disagrees with the option length %zu",
                                             olen) < 0) return -1;
                            break;
                        }
                    }
                    e->flags |= EV_NRSACK;
                    for (size_t i = 0; i < o[kpos]; i++) {
                        const uint8_t *b = o + kpos + 2 + i * bs;
                        uint64_t s = bs == 16 ? rd64(b) : rd32(b), t = bs == 16 ? rd64(b + 8) : rd32(b + 4);
                        if (add_block(r, e, BK_MPTCP_NR, s, t) < 0) return raise_no_memory();
                    }
                }
            }
            break;
        }
        default: break;
        }
        off += olen;
    }
    return 0;
}

/* IP payload dispatch. n = payload length from the IP header, cap = captured bytes from there. */
static int parse_transport(Reader *r, const pkt_t *k, int proto, const uint8_t *p, size_t n, size_t cap) {
    if (proto == 6) return parse_tcp(r, k, p, n, cap);
    if (proto == 132) return parse_sctp(r, k, p, n, cap, 0);
    if (proto == 17 && cap >= 8 && n >= 8 && (rd16(p) == SCTP_UDP_PORT || rd16(p + 2) == SCTP_UDP_PORT)) {
        size_t ulen = rd16(p + 4);
        if (ulen < 8 || ulen > n) return finding(r, "UDP length %zu invalid", ulen);
        return parse_sctp(r, k, p + 8, ulen - 8, cap - 8, 1);
    }
    return 0;
}

/* ::ffff:a.b.c.d, written as two 8-byte words: conn_hash and conn_lookup read it back so, and a read
 * over narrower stores just made waits for them to retire (a store-forwarding stall each packet) */
static inline void ipv4_mapped(uint8_t out[16], const uint8_t *a) {
    uint8_t word[8] = {0, 0, 0xff, 0xff, a[0], a[1], a[2], a[3]};
    uint64_t low = 0, high;
    memcpy(&high, word, 8);
    memcpy(out, &low, 8);
    memcpy(out + 8, &high, 8);
}

static int parse_ip(Reader *r, pkt_t *k, const uint8_t *p, size_t cap, size_t wire) {
    if (cap < 1) return 0;
    int ver = p[0] >> 4;
    if (ver == 4) {
        if (cap < 20) return finding(r, "IPv4 header truncated");
        size_t ihl = (size_t)(p[0] & 15) * 4, tot = rd16(p + 2);
        /* 0: segmentation offload on the capturing host; beyond the frame: a length nobody sent
         * (65,535 in a short frame). Either way the frame is what was on the wire. */
        if (tot == 0 || tot > wire) { tot = wire; k->repaired = 1; }
        if (ihl < 20 || tot < ihl) return finding(r, "IPv4 header length %zu / total length %zu invalid", ihl, tot);
        if (cap < ihl) return finding(r, "IPv4 options truncated");
        if ((rd16(p + 6) & 0x3fff) != 0) return 0; /* fragments: not reassembled */
        k->v6 = 0;
        ipv4_mapped(k->src, p + 12);
        ipv4_mapped(k->dst, p + 16);
        return parse_transport(r, k, p[9], p + ihl, tot - ihl, cap - ihl);
    }
    if (ver == 6) {
        if (cap < 40) return finding(r, "IPv6 header truncated");
        size_t plen = rd16(p + 4);
        if (plen == 0 || plen + 40 > wire) { plen = wire > 40 ? wire - 40 : 0; k->repaired = 1; } /* jumbogram / offload, as IPv4 */
        int nh = p[6];
        size_t off = 40, end = 40 + plen;
        k->v6 = 1; memcpy(k->src, p + 8, 16); memcpy(k->dst, p + 24, 16);
        while (nh == 0 || nh == 43 || nh == 60 || nh == 44) {
            if (off + 8 > cap) return 0;
            if (nh == 44) { if ((rd16(p + off + 2) & 0xfff9) != 0) return 0; nh = p[off]; off += 8; continue; }
            size_t l = ((size_t)p[off + 1] + 1) * 8;
            nh = p[off]; off += l;
        }
        if (off > end) return finding(r, "IPv6 extension headers exceed the payload length");
        return parse_transport(r, k, nh, p + off, end - off, cap > off ? cap - off : 0);
    }
    return 0;
}

static int parse_ethertype(Reader *r, pkt_t *k, uint32_t et, const uint8_t *p, size_t cap, size_t wire) {
    while (et == 0x8100 || et == 0x88a8 || et == 0x9100) {
        if (cap < 4) return 0;
        et = rd16(p + 2); p += 4; cap -= 4; wire -= 4;
    }
    if (et == 0x0800 || et == 0x86dd) return parse_ip(r, k, p, cap, wire);
    return 0;
}

/* The capture clock, made safe for the analysis: nanoseconds as an unsigned 64-bit count (pcap
 * seconds are unsigned 32-bit: libpcap hands those past 2^31 over sign-extended), then never
 * backwards and without steps beyond CLOCK_STEP_NS, each such step a GEN-02 finding (decisions.md
 * 30). The result stays below 2^63, so the signed 64-bit columns downstream hold it exactly. */
#define CLOCK_STEP_NS (86400ULL * 1000000000ULL)   /* forward: longer than any transport timer */
#define CLOCK_BACK_NS (1000000000ULL)              /* backward beyond this: a step, not reordering */
static uint64_t ns_of(uint64_t sec, uint64_t frac_ns) {  /* saturating: UINT64_MAX is "beyond" */
    return sec > (UINT64_MAX - frac_ns) / 1000000000ULL ? UINT64_MAX : sec * 1000000000ULL + frac_ns;
}

static int capture_clock(Reader *r, uint64_t raw, int64_t *out) {
    if (!r->have_clock) {
        r->have_clock = 1; r->clock_raw = raw; r->clock_ns = raw;
    } else if (raw >= r->clock_raw) {
        uint64_t step = raw - r->clock_raw;
        if (step > CLOCK_STEP_NS) {
            if (rule_finding(r, "GEN-02", "capture clock stepped forward %.3f s: the gap counts as no time",
                             (double)step / 1e9) < 0) return -1;
            step = 0;
        }
        r->clock_raw = raw; r->clock_ns += step;
    } else if (r->clock_raw - raw > CLOCK_BACK_NS) {
        if (rule_finding(r, "GEN-02", "capture clock stepped back %.3f s: time goes on from the frame before",
                         (double)(r->clock_raw - raw) / 1e9) < 0) return -1;
        r->clock_raw = raw;  /* the new clock; the analysis time stays where it was */
    } else {  /* a frame a little older than the one before (several capture queues): held, counted */
        if (!r->held_back++) r->held_back_frame = r->frame;
        if (r->clock_raw - raw > r->held_back_max) r->held_back_max = r->clock_raw - raw;
    }
    if (r->clock_ns > (uint64_t)INT64_MAX) {
        if (!r->beyond_2262_noted++ &&
            rule_finding(r, "GEN-02", "capture clock beyond the year 2262 (2^63 ns): held there") < 0) return -1;
        r->clock_ns = (uint64_t)INT64_MAX;
    }
    *out = (int64_t)r->clock_ns;
    return 0;
}

/* A frame's original length as the analysis may believe it: never below what was captured, never
 * above the largest snapshot libpcap allows (no NIC sends more in one frame, offload included). */
#define MAX_FRAME_LEN 262144u

/* LINKTYPE_NFLOG: a 4-byte header (address family, version, resource id), then TLVs of a length
 * (header included) and a type, each padded to 4 bytes. Their byte order is the capturing host's
 * and not recorded: a type is below 0x100 (NFULA_* count 20 or so), so the order that reads the
 * first TLV's type that way is the file's. The NFULA_PAYLOAD TLV (type 9) holds the IP packet. */
#define NFULA_PAYLOAD 9
static int parse_nflog(Reader *r, pkt_t *k, const uint8_t *p, size_t cap, size_t wire) {
    if (cap < 8) return 0;
    int big = (p[6] | p[7] << 8) >= 0x100;  /* the first TLV's type read little-endian is too large */
    for (size_t off = 4; off + 4 <= cap;) {
        const uint8_t *t = p + off;
        size_t len = big ? rd16(t) : (size_t)(t[0] | t[1] << 8);
        unsigned type = (big ? rd16(t + 2) : (unsigned)(t[2] | t[3] << 8)) & 0x7fff;  /* top bit: nested */
        if (len < 4) return finding(r, "NFLOG TLV length %zu invalid", len);
        if (type == NFULA_PAYLOAD) {
            /* the TLV says how long the packet was; the frame, how much of it was kept */
            size_t ip_wire = len - 4, ip_cap = cap - off - 4 < ip_wire ? cap - off - 4 : ip_wire;
            if (off + len > wire) return finding(r, "NFLOG payload length %zu beyond the frame", len);
            return parse_ip(r, k, t + 4, ip_cap, ip_wire);
        }
        off += (len + 3) & ~(size_t)3;
    }
    return 0;
}

/* One frame: its time in ns since the epoch (unsigned), captured and original lengths, link type. */
static int parse_frame(Reader *r, uint64_t raw_ns, size_t cap, size_t wire, int linktype, const uint8_t *p) {
    pkt_t k;
    k.repaired = 0;
    if (capture_clock(r, raw_ns, &k.time_ns) < 0) return -1;
    if (wire < cap) wire = cap;
    if (wire > MAX_FRAME_LEN) wire = cap > MAX_FRAME_LEN ? cap : MAX_FRAME_LEN;
    switch (linktype) {
    case DLT_EN10MB:
        if (cap < 14) return 0;
        return parse_ethertype(r, &k, rd16(p + 12), p + 14, cap - 14, wire - 14);
    case DLT_LINUX_SLL:
        if (cap < 16) return 0;
        return parse_ethertype(r, &k, rd16(p + 14), p + 16, cap - 16, wire - 16);
#ifdef DLT_LINUX_SLL2
    case DLT_LINUX_SLL2:
        if (cap < 20) return 0;
        return parse_ethertype(r, &k, rd16(p), p + 20, cap - 20, wire - 20);
#endif
    case DLT_RAW: case DLT_IPV4: case DLT_IPV6:
#ifdef DLT_RAW_ALT
    case DLT_RAW_ALT:
#endif
        return parse_ip(r, &k, p, cap, wire);
    case DLT_NULL: case DLT_LOOP:
        if (cap < 4) return 0;
        return parse_ip(r, &k, p + 4, cap - 4, wire - 4); /* the family word only repeats the IP version */
    case DLT_SCTP:
        /* raw SCTP (usrsctp's packet dumps through text2pcap): no addresses on the wire, so both ends
         * are 0.0.0.0 and an association's conns differ by their ports only (decisions.md) */
        k.v6 = 0;
        memset(k.src, 0, 16); k.src[10] = k.src[11] = 0xff;
        memcpy(k.dst, k.src, 16);
        return parse_sctp(r, &k, p, wire, cap, 0);
    case DLT_NFLOG:
        return parse_nflog(r, &k, p, cap, wire);
    default:
        return 0;
    }
}

static int supported_linktype(int lt) {
    switch (lt) {
    case DLT_EN10MB: case DLT_LINUX_SLL: case DLT_RAW: case DLT_IPV4: case DLT_IPV6: case DLT_NULL: case DLT_LOOP:
    case DLT_SCTP: case DLT_NFLOG:
#ifdef DLT_LINUX_SLL2
    case DLT_LINUX_SLL2:
#endif
        return 1;
    }
    return lt == 12 || lt == 14 || lt == 101; /* DLT_RAW differs between platforms */
}


static PyObject *ReaderError;

/* ---- pcapng, block by block (pcapng spec: SHB, IDB, EPB, SPB, OPB; other blocks skipped) ---- */
#define NG_SHB 0x0A0D0D0Au
#define NG_MAX_BLOCK (64u << 20)

static uint32_t ng32(const Reader *r, const uint8_t *p) {
    uint32_t v; memcpy(&v, p, 4);
    return r->ng_swap ? __builtin_bswap32(v) : v;
}
static uint16_t ng16(const Reader *r, const uint8_t *p) {
    uint16_t v; memcpy(&v, p, 2);
    return r->ng_swap ? __builtin_bswap16(v) : v;
}

/* Units per second of if_tsresol: 10^n, or 2^n with the top bit, n up to 127; 0 stands for more than
 * 128 bits hold (10^39 and up), where a 64-bit count of them is under a picosecond. */
static unsigned __int128 ng_units(uint8_t tsresol) {
    unsigned n = tsresol & 0x7f;
    if (tsresol & 0x80) return (unsigned __int128)1 << n;
    unsigned __int128 u = 1;
    for (unsigned i = 0; i < n; i++) { if (u > ~(unsigned __int128)0 / 10) return 0; u *= 10; }
    return u;
}

static int ng_interface(Reader *r, const uint8_t *b, size_t len) {
    if (len < 8) return finding(r, "pcapng interface block too short");
    if (r->n_ifaces == r->ifaces_cap) {
        size_t cap = r->ifaces_cap ? r->ifaces_cap * 2 : 4;
        struct ng_iface *t = realloc(r->ifaces, cap * sizeof *t);
        if (!t) return raise_no_memory();
        r->ifaces = t; r->ifaces_cap = cap;
    }
    struct ng_iface *f = &r->ifaces[r->n_ifaces++];
    memset(f, 0, sizeof *f);
    f->linktype = ng16(r, b); f->snaplen = ng32(r, b + 4); f->units = 1000000; f->offset_sign = 1;
    if (f->linktype == 101) f->linktype = DLT_RAW;  /* LINKTYPE_RAW in files, as libpcap maps it */
    f->supported = supported_linktype(f->linktype);
    for (size_t off = 8; off + 4 <= len;) {
        uint16_t code = ng16(r, b + off), olen = ng16(r, b + off + 2);
        if (code == 0 || off + 4 + olen > len) break;
        if (code == 9 && olen >= 1) f->units = ng_units(b[off + 4]);
        if (code == 14 && olen >= 8) {
            uint64_t v; memcpy(&v, b + off + 4, 8);
            if (r->ng_swap) v = __builtin_bswap64(v);
            int64_t sv = (int64_t)v;
            f->offset_sign = sv < 0 ? -1 : 1; f->offset_s = sv < 0 ? 0 - v : v;
        }
        off += 4 + ((olen + 3u) & ~3u);
    }
    return 0;
}

/* ticks of an interface -> ns since the epoch, saturating (no overflow whatever the resolution). A
 * resolution beyond 64 bits (if_tsresol 20..127, 2^64..2^127) is read as written, as tshark reads it:
 * every 64-bit count is under a second, most under a nanosecond, so the frames share the offset's time. */
static uint64_t ng_time(const struct ng_iface *f, uint64_t ticks) {
    uint64_t sec = 0, ns = 0;
    if (f->units) {
        sec = (uint64_t)(ticks / f->units);
        ns = (uint64_t)((unsigned __int128)(ticks % f->units) * 1000000000u / f->units);
    }
    if (f->offset_sign > 0) sec = sec > UINT64_MAX - f->offset_s ? UINT64_MAX : sec + f->offset_s;
    else sec = sec > f->offset_s ? sec - f->offset_s : 0;
    return ns_of(sec, ns);
}

/* Reads one block into r->block; 1 read, 0 clean end of file, -2 cut short or damaged (r->truncated says why). */
static int ng_next(Reader *r, uint32_t *type, size_t *len) {
    uint8_t head[8];
    size_t got = fread(head, 1, 8, r->ng);
    if (got == 0) return 0;
    if (got < 8) { snprintf(r->truncated, sizeof r->truncated, "after frame %u: pcapng block header cut short", r->frame); return -2; }
    uint32_t t; memcpy(&t, head, 4);
    if (t == NG_SHB) {  /* a new section: its byte-order magic decides how to read it and the rest */
        uint8_t magic[4];
        if (fread(magic, 1, 4, r->ng) < 4) { snprintf(r->truncated, sizeof r->truncated, "after frame %u: section header cut short", r->frame); return -2; }
        uint32_t m; memcpy(&m, magic, 4);
        if (m == 0x1A2B3C4Du) r->ng_swap = 0;
        else if (m == 0x4D3C2B1Au) r->ng_swap = 1;
        else { snprintf(r->truncated, sizeof r->truncated, "after frame %u: section header with a bad byte-order magic", r->frame); return -2; }
        r->n_ifaces = 0;  /* interfaces are per section */
    }
    *type = ng32(r, head);
    uint32_t total = ng32(r, head + 4);
    if (total < 12 + (t == NG_SHB ? 4u : 0u) || total % 4 || total > NG_MAX_BLOCK) {
        snprintf(r->truncated, sizeof r->truncated, "after frame %u: pcapng block length %u invalid", r->frame, total);
        return -2;
    }
    size_t body = total - 12, have = 0;
    if (body + 8 > r->block_cap) {
        uint8_t *nb = realloc(r->block, body + 8);
        if (!nb) return raise_no_memory();
        r->block = nb; r->block_cap = body + 8;
    }
    if (t == NG_SHB) body -= 4;  /* its byte-order magic is read already */
    if (fread(r->block + have, 1, body + 4, r->ng) < body + 4) {
        snprintf(r->truncated, sizeof r->truncated, "after frame %u: pcapng block cut short (truncated file)", r->frame);
        return -2;
    }
    *len = body;
    return 1;
}

/* Reads frames from a pcapng file until `max_frames` were read or it ends; -> frames read, -1 on error. */
static Py_ssize_t ng_read(Reader *r, Py_ssize_t max_frames) {
    Py_ssize_t got = 0;
    while (got < max_frames) {
        uint32_t type; size_t len;
        int rc = ng_next(r, &type, &len);
        if (rc == -1) return -1;
        if (rc == 0 || rc == -2) {
            r->done = 1;
            if (rc == -2 && r->frame == 0) { raise_released(ReaderError, r->truncated); return -1; }
            break;
        }
        const uint8_t *b = r->block;
        uint32_t iface = 0, caplen = 0, orig = 0; uint64_t ticks = 0; const uint8_t *data = NULL; int timed = 1;
        if (type == 1) { if (ng_interface(r, b, len) < 0) return -1; continue; }
        if (type == 6 && len >= 20) {  /* Enhanced Packet Block */
            iface = ng32(r, b); ticks = (uint64_t)ng32(r, b + 4) << 32 | ng32(r, b + 8);
            caplen = ng32(r, b + 12); orig = ng32(r, b + 16); data = b + 20;
            if (caplen > len - 20) caplen = 0, data = NULL;
        } else if (type == 3 && len >= 4) {  /* Simple Packet Block: interface 0, no time */
            orig = ng32(r, b); caplen = orig < len - 4 ? orig : (uint32_t)(len - 4); data = b + 4; timed = 0;
            if (r->n_ifaces && r->ifaces[0].snaplen && caplen > r->ifaces[0].snaplen) caplen = r->ifaces[0].snaplen;
        } else if (type == 2 && len >= 20) {  /* obsolete Packet Block */
            iface = ng16(r, b); ticks = (uint64_t)ng32(r, b + 4) << 32 | ng32(r, b + 8);
            caplen = ng32(r, b + 12); orig = ng32(r, b + 16); data = b + 20;
            if (caplen > len - 20) caplen = 0, data = NULL;
        } else continue;  /* name resolution, statistics, custom blocks ... */
        r->frame++;
        got++;
        if (!data) { if (finding(r, "pcapng packet block: captured length beyond the block") < 0) return -1; continue; }
        if (iface >= r->n_ifaces) { if (finding(r, "pcapng packet on interface %u, which no block described", iface) < 0) return -1; continue; }
        struct ng_iface *f = &r->ifaces[iface];
        if (!f->supported) {
            if (!f->noted++ && finding(r, "pcapng interface %u: link type %d not analysed, its frames are skipped",
                                       iface, f->linktype) < 0) return -1;
            continue;
        }
        uint64_t raw = timed ? ng_time(f, ticks) : (r->have_clock ? r->clock_raw : 0);
        if (r->skim) { if (timed) span_note(r, raw); continue; }
        if (parse_frame(r, raw, caplen, orig, f->linktype, data) < 0) return -1;
    }
    return got;
}

/* A FILE that first gives back the bytes already peeked at, then reads on from `fd`: libpcap reads
 * classic pcap from the start of a pipe whose first bytes told pcap from pcapng. One read() per
 * call, whatever it returns: a live pipe (tcpdump -w -) is read as packets arrive, not per buffer. */
typedef struct peek_s {
    int fd; uint8_t peeked[4]; size_t n, pos;
    PyObject *exc_type, *exc_value, *exc_tb;  /* a signal's exception (Ctrl-C) raised while waiting */
} peek_t;

/* The wait for input lets other threads run (`analyze --follow` feeds a growing file through a
 * pipe from one); a signal whose handler raises (Ctrl-C) ends the input there, its exception kept
 * for Reader.read to raise once libpcap has returned. */
static ssize_t peek_read(void *cookie, char *buf, size_t size) {
    peek_t *c = cookie;
    size_t out = 0;
    while (c->pos < c->n && out < size) buf[out++] = (char)c->peeked[c->pos++];
    if (out) return (ssize_t)out;
    for (;;) {
        ssize_t got; int error;
        Py_BEGIN_ALLOW_THREADS
        got = read(c->fd, buf, size);
        error = errno;
        Py_END_ALLOW_THREADS
        if (got >= 0 || error != EINTR) { errno = error; return got; }
        if (PyErr_CheckSignals() < 0) {
            if (!c->exc_type) PyErr_Fetch(&c->exc_type, &c->exc_value, &c->exc_tb);
            else PyErr_Clear();
            return 0;
        }
    }
}

/* Raises the exception a signal left while the reader waited for input: -> 1 when there was one. */
static int peek_interrupted(peek_t *c) {
    if (!c || !c->exc_type) return 0;
    PyErr_Restore(c->exc_type, c->exc_value, c->exc_tb);
    c->exc_type = c->exc_value = c->exc_tb = NULL;
    return 1;
}

static int peek_close(void *cookie) {
    peek_t *c = cookie;
    Py_XDECREF(c->exc_type); Py_XDECREF(c->exc_value); Py_XDECREF(c->exc_tb);
    int rc = close(c->fd);
    free(c);
    return rc;
}

/* ---- Reader type ---- */

static void map_open(Reader *self, FILE *file, const uint8_t *magic);

/* Opens `path` (pcap or pcapng) as the Reader's input: 0, or -1 with ReaderError set. */
static int reader_open(Reader *self, const char *path) {
    char errbuf[PCAP_ERRBUF_SIZE] = "";
    /* "-": standard input (a pipe from tcpdump -w -); FIFOs and devices open like files */
    int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : dup(0);
    if (fd < 0) { PyErr_Format(ReaderError, "%s: %s", path, strerror(errno)); return -1; }
    /* the first four bytes tell pcapng (read here) from pcap (libpcap); a file is rewound, a pipe is
     * read on through a FILE that gives the four bytes back first */
    uint8_t first[4] = {0};
    size_t n_first = 0;
    Py_BEGIN_ALLOW_THREADS  /* a pipe's writer may be a thread of this process */
    while (n_first < 4) {
        ssize_t got = read(fd, first + n_first, 4 - n_first);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        n_first += (size_t)got;
    }
    Py_END_ALLOW_THREADS
    FILE *file;
    if (lseek(fd, 0, SEEK_SET) == 0) {
        file = fdopen(fd, "rb");
    } else {
        peek_t *peek = calloc(1, sizeof *peek);
        if (!peek) { close(fd); PyErr_NoMemory(); return -1; }
        peek->fd = fd; peek->n = n_first; memcpy(peek->peeked, first, 4);
        cookie_io_functions_t io = {.read = peek_read, .close = peek_close};
        file = fopencookie(peek, "rb", io);
        if (!file) free(peek);
        else self->peek = peek;
    }
    if (!file) { close(fd); PyErr_NoMemory(); return -1; }
    /* libpcap reads record by record through stdio: a large buffer saves a read() per 4 kB (a
     * third of the system time). glibc ignores setvbuf's size unless it is given the buffer. */
    if (!self->iobuf) self->iobuf = malloc(READ_BUFFER);
    if (self->iobuf) setvbuf(file, self->iobuf, _IOFBF, READ_BUFFER);
    uint32_t magic;
    memcpy(&magic, first, 4);
    if (n_first == 4 && magic == NG_SHB) {
        self->ng = file;
        /* the link type reported for the capture: the first interface's, once its block is read */
        self->linktype = -1;
        return 0;
    }
    self->pcap = pcap_fopen_offline_with_tstamp_precision(file, PCAP_TSTAMP_PRECISION_NANO, errbuf);
    if (!self->pcap) { fclose(file); PyErr_SetString(ReaderError, errbuf); return -1; }
    self->linktype = pcap_datalink(self->pcap);
    if (!supported_linktype(self->linktype)) {
        const char *name = pcap_datalink_val_to_name(self->linktype);
        PyErr_Format(ReaderError, "unsupported link type %d (%s)", self->linktype, name ? name : "unknown");
        pcap_close(self->pcap); self->pcap = NULL;
        return -1;
    }
    if (n_first == 4) map_open(self, file, first);
    return 0;
}

static void map_close(Reader *self) {
    if (self->map) munmap((void *)self->map, self->map_len);
    self->map = NULL; self->map_len = 0; self->map_on = 0;
}

/* After libpcap read the file header of a regular file in the usual pcap (version 2.4, this machine's byte
 * order, micro- or nanosecond magic): its records are read through a mapped window from here on. */
static void map_open(Reader *self, FILE *file, const uint8_t *magic) {
    struct stat st;
    uint32_t m;
    memcpy(&m, magic, 4);
    int fd = fileno(file);
    long at = ftell(file);
    uint8_t header[24];
    if (self->peek || (m != 0xa1b2c3d4 && m != 0xa1b23c4d) || at != 24 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
        pread(fd, header, sizeof header, 0) != (ssize_t)sizeof header || header[4] != 2 || header[5] != 0 ||
        header[6] != 4 || header[7] != 0)
        return;
    self->map_on = 1;
    self->map_nano = m == 0xa1b23c4d;
    self->map_fd = fd;
    self->map_size = (uint64_t)st.st_size;
    self->map_pos = 24;
    self->map_snaplen = (uint32_t)pcap_snapshot(self->pcap);
}

/* The window over [pos, pos + need): -> its bytes there, or NULL (mapping failed: libpcap reads on). */
static __attribute__((noinline)) const uint8_t *map_move(Reader *self, uint64_t pos, size_t need);
static inline const uint8_t *map_at(Reader *self, uint64_t pos, size_t need) {
    if (self->map && pos >= self->map_start && pos + need <= self->map_start + self->map_len)
        return self->map + (pos - self->map_start);
    return map_move(self, pos, need);
}

/* map_at beyond the window: the window moved there */
static const uint8_t *map_move(Reader *self, uint64_t pos, size_t need) {
    if (self->map) munmap((void *)self->map, self->map_len);
    self->map = NULL;
    uint64_t start = pos & ~(uint64_t)(sysconf(_SC_PAGESIZE) - 1);
    size_t len = MAP_WINDOW;
    if (pos + need - start > len) len = (size_t)(pos + need - start);
    if (start + len > self->map_size) len = (size_t)(self->map_size - start);
    void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, self->map_fd, (off_t)start);
    if (m == MAP_FAILED) return NULL;
    madvise(m, len, MADV_SEQUENTIAL);
    self->map = m; self->map_len = len; self->map_start = start;
    return self->map + (pos - start);
}

/* Hands the reading over to libpcap at the next record (the file's end, a record libpcap must judge, or a
 * failed mapping): its FILE is set there, so what it reads and says is as if it had read all along. */
static int map_hand_over(Reader *self) {
    map_close(self);
    if (fseek(pcap_file(self->pcap), (long)self->map_pos, SEEK_SET) < 0) {
        PyGILState_STATE held = PyGILState_Ensure();  /* (read runs without it) */
        PyErr_SetFromErrno(ReaderError);
        PyGILState_Release(held);
        return -1;
    }
    return 0;
}

/* Reads up to max_frames records through the window; stops at the first one libpcap must read (then
 * map_on is 0). -> frames read, -1 with an exception set. */
static Py_ssize_t map_read(Reader *self, Py_ssize_t max_frames) {
    Py_ssize_t got = 0;
    while (got < max_frames) {
        uint64_t pos = self->map_pos;
        const uint8_t *h = pos + 16 <= self->map_size ? map_at(self, pos, 16) : NULL;
        uint32_t f[4];
        if (h) memcpy(f, h, 16);
        /* (seconds, fraction, captured length, wire length) in this machine's order, as map_open checked */
        if (!h || f[2] > self->map_snaplen || f[2] > MAP_MAX_CAPLEN || pos + 16 + f[2] > self->map_size ||
            !(h = map_at(self, pos, 16 + (size_t)f[2]))) {
            if (map_hand_over(self) < 0) return -1;
            break;
        }
        self->map_pos = pos + 16 + f[2];
        self->frame++;
        got++;
        /* as libpcap hands them over: both 32-bit fields sign-extended, microseconds scaled to nanoseconds */
        int64_t sec = (int32_t)f[0], frac = (int64_t)(int32_t)f[1] * (self->map_nano ? 1 : 1000);
        uint64_t raw = ns_of(sec < 0 ? (uint64_t)sec + (1ULL << 32) : (uint64_t)sec, (uint64_t)frac);
        if (self->skim) { span_note(self, raw); continue; }
        if (parse_frame(self, raw, f[2], f[3], self->linktype, h + 16) < 0) return -1;
    }
    return got;
}

static int Reader_init(Reader *self, PyObject *args, PyObject *kw) {
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path)) return -1;
    self->findings = PyList_New(0);
    self->rule_findings = PyList_New(0);
    if (!self->findings || !self->rule_findings) return -1;
    return reader_open(self, path);
}

/* open_next(path): the file that continues this one (a tcpdump -C / -G ring, editcap -c pieces) is read
 * on as the same capture: frame numbers, connections, the capture clock and the findings carry over, as
 * if the files were one (mergecap -a of them). Only the per-file reading state starts anew. */
static PyObject *Reader_open_next(Reader *self, PyObject *args) {
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path)) return NULL;
    map_close(self);
    if (self->pcap) { pcap_close(self->pcap); self->pcap = NULL; }
    if (self->ng) { fclose(self->ng); self->ng = NULL; }
    self->peek = NULL;  /* the FILE owned it */
    self->n_ifaces = 0; self->ng_swap = 0;
    self->done = 0; self->truncated[0] = 0;
    if (reader_open(self, path) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Reader_skim(Reader *self, PyObject *unused) { self->skim = 1; Py_RETURN_NONE; }

/* span() -> (link type, snaplen, first frame's raw time ns, last's) of what was skimmed; the times are
 * None without a timed frame. pcapng: the first interface's link type and snaplen. */
static PyObject *Reader_span(Reader *self, PyObject *unused) {
    long snaplen = self->pcap ? pcap_snapshot(self->pcap) : self->n_ifaces ? (long)self->ifaces[0].snaplen : -1;
    if (!self->have_span) return Py_BuildValue("(ilOO)", self->linktype, snaplen, Py_None, Py_None);
    return Py_BuildValue("(ilKK)", self->linktype, snaplen, (unsigned long long)self->span_first,
                         (unsigned long long)self->span_last);
}

static void Reader_dealloc(Reader *self) {
    map_close(self);
    if (self->pcap) pcap_close(self->pcap);
    if (self->ng) fclose(self->ng);
    free(self->ifaces); free(self->block); free(self->iobuf);  /* after the FILE's close */
    Py_XDECREF(self->ev.ba); Py_XDECREF(self->bk.ba); free(self->table); free(self->order);
    Py_XDECREF(self->findings);
    Py_XDECREF(self->rule_findings);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* read(max_frames) -> frames read (fewer than asked once the file ends). The records accumulate
 * across calls; take() hands them over once reading is done. */
static PyObject *Reader_read(Reader *self, PyObject *args) {
    Py_ssize_t max_frames;
    if (!PyArg_ParseTuple(args, "n", &max_frames)) return NULL;
    if (self->ng) {
        if (self->done) return PyLong_FromLong(0);
        PyThreadState *released = self->peek ? NULL : PyEval_SaveThread();  /* (as below) */
        Py_ssize_t got = ng_read(self, max_frames);
        if (released) PyEval_RestoreThread(released);
        if (peek_interrupted(self->peek)) return NULL;
        if (got < 0) return NULL;
        if (self->linktype < 0 && self->n_ifaces) self->linktype = self->ifaces[0].linktype;
        return PyLong_FromSsize_t(got);
    }
    if (!self->pcap) return PyLong_FromLong(0);
    Py_ssize_t got = 0;
    int failed = 0;  /* 1: parse_frame raised, 2: nothing readable */
    /* a pipe's reads (peek_read) release the GIL themselves, and check for signals with it */
    PyThreadState *released = self->peek ? NULL : PyEval_SaveThread();
    if (self->map_on && (got = map_read(self, max_frames)) < 0) { got = max_frames; failed = 1; }
    while (got < max_frames) {
        struct pcap_pkthdr *h; const u_char *data;
        int rc = pcap_next_ex(self->pcap, &h, &data);
        if (self->peek && peek_interrupted(self->peek)) { self->done = 1; return NULL; }
        if (rc == PCAP_ERROR_BREAK) { self->done = 1; break; }
        if (rc == PCAP_ERROR) {
            /* a file cut short in its last record (still being written, or a full disk): what came
             * before is whole and is analysed; the caller warns (exit 2 only when nothing was read) */
            snprintf(self->truncated, sizeof self->truncated, "after frame %u: %s", self->frame, pcap_geterr(self->pcap));
            if (self->frame == 0) { failed = 2; break; }
            self->done = 1;
            break;
        }
        if (rc != 1) continue;
        self->frame++;
        got++;
        /* pcap seconds are unsigned 32-bit; libpcap hands those past 2^31 over sign-extended */
        int64_t sec = (int64_t)h->ts.tv_sec;
        uint64_t raw = ns_of(sec < 0 ? (uint64_t)sec + (1ULL << 32) : (uint64_t)sec, (uint64_t)h->ts.tv_usec);
        if (self->skim) { span_note(self, raw); continue; }
        if (parse_frame(self, raw, h->caplen, h->len, self->linktype, data) < 0) { failed = 1; break; }
    }
    if (released) PyEval_RestoreThread(released);
    if (failed == 2) PyErr_SetString(ReaderError, self->truncated);
    if (failed) return NULL;
    return PyLong_FromSsize_t(got);
}

/* take() -> (events bytearray, used bytes, blocks bytearray, used bytes); the arrays may be longer. */
static PyObject *Reader_take(Reader *self, PyObject *unused) {
    PyObject *ev = self->ev.ba ? self->ev.ba : PyByteArray_FromStringAndSize(NULL, 0);
    PyObject *bk = self->bk.ba ? self->bk.ba : PyByteArray_FromStringAndSize(NULL, 0);
    if (!ev || !bk) return NULL;
    PyObject *r = Py_BuildValue("(OnOn)", ev, (Py_ssize_t)self->ev.n, bk, (Py_ssize_t)self->bk.n);
    if (!self->ev.ba) Py_DECREF(ev);
    if (!self->bk.ba) Py_DECREF(bk);
    return r;
}

/* take_chunk() -> the same, for the records since the previous take_chunk(): the buffers are handed
 * over and the next records start new ones, so block and event indices are chunk-relative. */
static PyObject *Reader_take_chunk(Reader *self, PyObject *unused) {
    PyObject *r = Reader_take(self, NULL);
    if (!r) return NULL;
    size_t ev_used = self->ev.n, bk_used = self->bk.n;
    Py_CLEAR(self->ev.ba); Py_CLEAR(self->bk.ba);
    self->ev.p = self->bk.p = NULL;
    /* the next chunk starts a little above the size this one used: no copies while it grows again,
     * and (below glibc's mmap threshold) memory the last chunk freed is reused */
    self->ev.start_cap = ev_used + ev_used / 16 + 1024; self->bk.start_cap = bk_used + bk_used / 16 + 1024;
    self->ev.n = self->ev.cap = self->bk.n = self->bk.cap = 0;
    self->n_events = self->n_blocks = 0;
    return r;
}

/* ready(timeout_s) -> whether reading on would find input (bytes buffered, or the pipe readable or
 * at its end) within timeout_s, waiting with the GIL released: a live input's frames so far are
 * shown rather than held behind a read that blocks. A file is always ready. */
static PyObject *Reader_ready(Reader *self, PyObject *args) {
    double timeout_s;
    if (!PyArg_ParseTuple(args, "d", &timeout_s)) return NULL;
    FILE *f = self->ng ? self->ng : self->pcap ? pcap_file(self->pcap) : NULL;
    if (!self->peek || self->done || !f) Py_RETURN_TRUE;
    /* glibc's FILE: what a read would take from its buffer before it calls peek_read */
    if (f->_IO_read_ptr < f->_IO_read_end || self->peek->pos < self->peek->n) Py_RETURN_TRUE;
    struct pollfd p = {.fd = self->peek->fd, .events = POLLIN};
    int rc, error;
    Py_BEGIN_ALLOW_THREADS
    rc = poll(&p, 1, timeout_s > 0 ? (int)(timeout_s * 1000) : 0);
    error = errno;
    Py_END_ALLOW_THREADS
    if (rc < 0 && error == EINTR && PyErr_CheckSignals() < 0) return NULL;
    return PyBool_FromLong(rc > 0);
}

static PyObject *Reader_position(Reader *self, PyObject *unused) {
    if (self->map_on) return PyLong_FromUnsignedLongLong(self->map_pos);
    FILE *f = self->ng ? self->ng : self->pcap ? pcap_file(self->pcap) : NULL;
    return PyLong_FromLong(f ? ftell(f) : 0);
}

/* conns() -> list of (id, proto, udp, v6, addr_a bytes16, port_a, addr_b bytes16, port_b) */
/* conns(start=0): the conns from id `start` on (a chunk asks for the new ones only: asking for all
 * of them every chunk is quadratic in the flows of a capture) */
static PyObject *Reader_conns(Reader *self, PyObject *args) {
    Py_ssize_t start = 0;
    if (!PyArg_ParseTuple(args, "|n", &start)) return NULL;
    if (start < 0 || (size_t)start > self->n_conns) start = (Py_ssize_t)self->n_conns;
    PyObject *l = PyList_New((Py_ssize_t)self->n_conns - start);
    if (!l) return NULL;
    for (size_t i = (size_t)start; i < self->n_conns; i++) {
        conn_t *c = &self->table[self->order[i]];
        PyObject *t = Py_BuildValue("(iiiiy#iy#i)", c->id, c->proto, c->udp, c->v6, c->a, (Py_ssize_t)16, c->pa,
                                    c->b, (Py_ssize_t)16, c->pb);
        if (!t) { Py_DECREF(l); return NULL; }
        PyList_SET_ITEM(l, (Py_ssize_t)i - start, t);
    }
    return l;
}

static PyObject *Reader_findings(Reader *self, PyObject *unused) { Py_INCREF(self->findings); return self->findings; }
static PyObject *Reader_rule_findings(Reader *self, PyObject *unused) { Py_INCREF(self->rule_findings); return self->rule_findings; }
static PyObject *Reader_frames(Reader *self, PyObject *unused) { return PyLong_FromUnsignedLong(self->frame); }
static PyObject *Reader_truncated(Reader *self, PyObject *unused) {
    if (!self->truncated[0]) Py_RETURN_NONE;
    return PyUnicode_FromString(self->truncated);
}

/* notes() -> [(frame, rule, reason)] counted over the whole capture so far, one per conn or per
 * kind, built afresh on every call: payload lengths taken from the frame, frames held at the time
 * of the one before. */
static PyObject *Reader_notes(Reader *self, PyObject *unused) {
    PyObject *l = PyList_New(0);
    if (!l) return NULL;
    for (size_t i = 0; i < self->n_conns; i++) {
        conn_t *c = &self->table[self->order[i]];
        if (!c->repaired) continue;
        PyObject *t = Py_BuildValue("(Iss)", c->repaired_frame, "GEN-01.note", "");
        if (!t) { Py_DECREF(l); return NULL; }
        PyObject *msg = PyUnicode_FromFormat(
            "IP length 0 or beyond the frame in %u packet%s of this conn (segmentation offload or a bad header): "
            "payload taken from the frame", c->repaired, c->repaired == 1 ? "" : "s");
        if (!msg) { Py_DECREF(t); Py_DECREF(l); return NULL; }
        PyTuple_SetItem(t, 2, msg);
        if (PyList_Append(l, t) < 0) { Py_DECREF(t); Py_DECREF(l); return NULL; }
        Py_DECREF(t);
    }
    if (self->held_back) {
        char msg[200];
        snprintf(msg, sizeof msg, "%u frame%s older than the frame before (up to %.6f s): held at its time",
                 self->held_back, self->held_back == 1 ? "" : "s", (double)self->held_back_max / 1e9);
        PyObject *t = Py_BuildValue("(Iss)", self->held_back_frame, "GEN-02.note", msg);
        if (!t || PyList_Append(l, t) < 0) { Py_XDECREF(t); Py_DECREF(l); return NULL; }
        Py_DECREF(t);
    }
    return l;
}
static PyObject *Reader_linktype(Reader *self, PyObject *unused) { return PyLong_FromLong(self->linktype); }

static PyMethodDef Reader_methods[] = {
    {"read", (PyCFunction)Reader_read, METH_VARARGS, "read(max_frames) -> frames read"},
    {"take", (PyCFunction)Reader_take, METH_NOARGS, "(events bytearray, bytes used, blocks bytearray, bytes used)"},
    {"take_chunk", (PyCFunction)Reader_take_chunk, METH_NOARGS, "take() of the records since the last take_chunk()"},
    {"position", (PyCFunction)Reader_position, METH_NOARGS, "byte offset in the file"},
    {"ready", (PyCFunction)Reader_ready, METH_VARARGS, "ready(timeout_s) -> whether input is there to read"},
    {"conns", (PyCFunction)Reader_conns, METH_VARARGS, "conns(start=0): the connection table from id start on"},
    {"findings", (PyCFunction)Reader_findings, METH_NOARGS, "GEN-01 findings: [(frame, reason)]"},
    {"rule_findings", (PyCFunction)Reader_rule_findings, METH_NOARGS, "NR-05 / TN-05 / MN-02 findings: [(frame, rule, reason)]"},
    {"frames", (PyCFunction)Reader_frames, METH_NOARGS, "frames read so far"},
    {"truncated", (PyCFunction)Reader_truncated, METH_NOARGS, "why reading stopped before the end of the file, or None"},
    {"notes", (PyCFunction)Reader_notes, METH_NOARGS, "counted notes [(frame, rule, reason)]: length repairs, held clock"},
    {"linktype", (PyCFunction)Reader_linktype, METH_NOARGS, "DLT of the capture"},
    {"open_next", (PyCFunction)Reader_open_next, METH_VARARGS, "open_next(path): read on in the file that continues this one"},
    {"skim", (PyCFunction)Reader_skim, METH_NOARGS, "read on without parsing: frames counted, span() kept"},
    {"span", (PyCFunction)Reader_span, METH_NOARGS, "(link type, snaplen, first frame raw time ns, latest) of the frames skimmed"},
    {NULL}
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "nrsack.analyzer._native.Reader",
    .tp_basicsize = sizeof(Reader),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Reader_init,
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_methods = Reader_methods,
    .tp_doc = "Reader(path): a pcap/pcapng file parsed into event records",
};

/* Adds Reader and ReaderError to the module (_module.c). */
int add_reader_type(PyObject *m) {
    if (PyType_Ready(&ReaderType) < 0) return -1;
    ReaderError = PyErr_NewException("nrsack.analyzer._native.ReaderError", PyExc_ValueError, NULL);
    if (!ReaderError) return -1;
    Py_INCREF(&ReaderType);
    if (PyModule_AddObject(m, "Reader", (PyObject *)&ReaderType) < 0) return -1;
    Py_INCREF(ReaderError);
    return PyModule_AddObject(m, "ReaderError", ReaderError);
}
