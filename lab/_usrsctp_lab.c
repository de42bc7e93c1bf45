/* SPDX-License-Identifier: MIT */
/* The usrsctp lab: FreeBSD's SCTP stack (usrsctp) as sender and receiver in one process, joined over
 * AF_CONN by an emulated link, with pcaps of what crosses the link and the stack's own truth.
 *
 * Loaded with ctypes by nrsack.lab.usrsctp in a child process per run: usrsctp keeps global state
 * (one init per process, threads that outlive the sockets), so a run never shares a process.
 *
 * Two clocks. Real: the stack's timer thread, a link thread, a sampler thread and the two
 * applications' threads run against CLOCK_MONOTONIC. Virtual (the default): one thread runs one event
 * loop on a clock of its own; the link's deliveries, the stack's timers (usrsctp_init_nothreads,
 * usrsctp_handle_timers), the 1 ms samples and the applications' writes and reads are its events, and
 * the stack's own clock and random reads are answered here (see "The virtual clock" below), so the
 * same seed gives the same bytes, as fast as the CPU allows.
 *
 * The link, per direction: a drop-tail queue of `queue` packets in front of a serialiser at the
 * bandwidth, then a constant propagation delay. Loss is decided per packet from (seed, direction,
 * packet index) alone, so the same seed drops the same packet numbers however the threads are
 * scheduled. Captures: the sender's host sees its packets when they enter the link and the acks when
 * they arrive (receiver's host: the mirror image), framed as Ethernet + IPv4 + SCTP with usrsctp's
 * own CRC32c.
 *
 * Truth, all times in microseconds since the run's start (capture time = EPOCH + that):
 *   blocked.csv  every wait of the sending application for send-buffer space, timed in the sender
 *                thread: from EWOULDBLOCK to the stack's wake-up (upcall) after which a send succeeded,
 *                and to that send (the difference is the thread's scheduling delay, not buffer space)
 *   stack.csv    SCTP_STATUS and SCTP_GET_SNDBUF_USE of the sender's association, every millisecond
 *   link.csv     every packet offered to the link: direction, index, length, fate, first chunk, TSN
 *   acks.csv     every SACK / NR-SACK delivered to the sender: cumulative TSN, gap and NR gap blocks
 *   unsent.csv   when the buffer starts and stops holding written data not yet sent (cwnd-limited)
 */
#define _GNU_SOURCE /* clock_nanosleep, CLOCK_MONOTONIC, RTLD_NOLOAD, syscall under -std=c11 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <usrsctp.h>

#include "_usrsctp_send.h"

/* not in Debian's usrsctp.h (usrsctplib/netinet/sctp.h, sctp_uio.h) */
#ifndef SCTP_GET_SNDBUF_USE
#define SCTP_GET_SNDBUF_USE 0x00001101
struct sctp_sockstat {
    sctp_assoc_t ss_assoc_id;
    uint32_t ss_total_sndbuf;
    uint32_t ss_total_recv_buf;
};
#endif

#define FWD 0 /* sender -> receiver */
#define REV 1 /* receiver -> sender */
#define MAX_QUEUE 100000
#define FATE_DELIVERED 0
#define FATE_LOST 1
#define FATE_QUEUE_DROP 2

struct lab_params { /* mirrored by nrsack.lab.usrsctp.Params */
    int32_t nrsack;
    int32_t unordered;
    int64_t sndbuf;
    int64_t rcvbuf;
    int64_t bytes;
    int64_t message;
    uint64_t seed;
    double loss[2];
    double burst[2];        /* Gilbert-Elliott mean burst length in packets; <= 1: Bernoulli */
    double delay_s[2];
    double bandwidth_bps[2];
    int32_t queue_packets[2];
    uint32_t ip[2];        /* sender, receiver; host order */
    uint16_t port[2];
    double timeout_s;
    int32_t rto_min_ms;    /* 0: the stack's default */
    int32_t sack_delay_ms; /* 0: the stack's default */
    int32_t drain;         /* sctp_do_drain: 0 = the receiver never reneges, so it NR-acks all it holds */
    int32_t virtual_clock; /* 1: one event loop on a virtual clock; 0: threads in real time */
    int32_t mtu;           /* the path's IP MTU; 0: usrsctp's AF_CONN default (1280-byte SCTP packets) */
    int32_t packet_files;  /* 0: no pcaps and no link.csv (a caller that reads only the summary's inputs) */
};

struct lab_result { /* mirrored by nrsack.lab.usrsctp.Result */
    int64_t first_send_us;
    int64_t dry_us;       /* all user data acked (SCTP_SENDER_DRY_EVENT), -1 if never */
    int64_t end_us;
    int64_t bytes_sent;
    int64_t bytes_received;
    int32_t complete;
    int32_t sndbuf_socket; /* SO_SNDBUF as the stack reports it */
    int64_t packets[2], lost[2], queue_drops[2];
    int64_t blocked_us;
    int64_t blocked_waits;
};

struct packet {
    struct packet *next;
    int64_t arrive_us;
    size_t len;
    unsigned char data[];
};

struct direction {
    struct packet *head, *tail;
    int64_t busy_until_us;
    uint64_t index;
    int64_t tx_end[MAX_QUEUE + 1]; /* ring: serialisation end of packets still in the queue */
    int ring_head, ring_count;
    int ge_bad; /* Gilbert-Elliott state */
};

static struct {
    const struct lab_params *p;
    struct lab_result *r;
    struct timespec t0;
    pthread_mutex_t lock;
    pthread_cond_t link_wake, app_wake;
    unsigned long app_events; /* upcalls seen, so a wake-up between EWOULDBLOCK and the wait is not lost */
    int64_t last_event_us;    /* time of the latest upcall */
    int stopped;
    int receiver_done;
    int64_t written;     /* messages the application has written (one DATA chunk each) */
    int64_t sent_new;    /* distinct TSNs sent: highest TSN - first TSN + 1 */
    int have_tsn;
    uint32_t first_tsn;
    struct direction dir[2];
    FILE *pcap[2]; /* sender's host, receiver's host */
    FILE *link_log, *blocked_log, *stack_log, *ack_log, *unsent_log;
    int unsent; /* written > sent_new, as last logged */
    struct socket *sender;
    int *token; /* token[0], token[1]: AF_CONN addresses, their addresses identify the two ends */
    char *err;
    int errlen;
    int virtual_clock;
    int64_t virtual_now_us;
    uint64_t clock_reads, random_bytes; /* the stack's, answered from the virtual clock and the seed */
} L;

static int64_t now_us(void)
{
    if (L.virtual_clock)
        return L.virtual_now_us;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)(t.tv_sec - L.t0.tv_sec) * 1000000 + (t.tv_nsec - L.t0.tv_nsec) / 1000;
}

static void deadline_after(struct timespec *ts, int64_t at_us)
{
    int64_t ns = (int64_t)L.t0.tv_nsec + (at_us % 1000000) * 1000;
    ts->tv_sec = L.t0.tv_sec + at_us / 1000000 + ns / 1000000000;
    ts->tv_nsec = ns % 1000000000;
}

static int fail(const char *fmt, ...);

/* The two AF_CONN addresses at the same place in every run. The cookie's HMAC covers them although
 * they never reach the wire (usrsctp clears them after signing, netinet/sctp_output.c:6611-6637), so
 * addresses that move with ASLR would change the INIT-ACK's signature from run to run. */
#define TOKEN_PAGE ((void *)0x6e7273000000) /* "nrs" */
static int place_tokens(void)
{
    void *page = mmap(TOKEN_PAGE, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                      -1, 0);
    if (page != TOKEN_PAGE) {
        if (page != MAP_FAILED)
            munmap(page, 4096);
        return fail("cannot map the AF_CONN addresses at %p: %s", TOKEN_PAGE, strerror(errno));
    }
    L.token = page;
    return 0;
}

static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(L.err, L.errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

/* uniform in [0, 1) from (seed, direction, packet index, draw) only */
static double uniform(int d, uint64_t index, int draw)
{
    uint64_t h = splitmix64(L.p->seed ^ splitmix64(((uint64_t)d << 62) ^ ((uint64_t)draw << 60) ^ index));
    return (h >> 11) * (1.0 / 9007199254740992.0);
}

/* The virtual clock. usrsctp reads time two ways (sctplab/usrsctp at tag 0.9.5.0, which Debian's
 * 0.9.5.0-2 packages):
 *  - its timers count ticks that only sctp_handle_tick advances (netinet/sctp_callout.c:68-75 and
 *    153-181); usrsctp_handle_timers calls it (user_socket.c:3355) when usrsctp_init_nothreads
 *    (user_socket.c:117) started no timer thread, which otherwise ticks every 10 ms
 *    (netinet/sctp_callout.c:193-218): the loop below does the same on the virtual clock;
 *  - timestamps (RTT samples, cookie lifetime, the last send) through SCTP_GETTIME_TIMEVAL, libc's
 *    gettimeofday in user space (netinet/sctp_constants.h:995).
 * Its randomness (verification tags, initial TSNs, the cookie's secret, the AUTH random parameter) is
 * read_random: the getrandom system call through libc's syscall() (user_environment.c:259-300).
 * libusrsctp.so.2 imports exactly these (nm -D: gettimeofday, syscall; no clock_gettime, no time).
 * In a virtual run both are answered here: nrsack.lab.usrsctp loads this library with RTLD_DEEPBIND,
 * which puts the scope of the objects that dlopen loads (this library, then libusrsctp, then libc)
 * ahead of the global scope, so libusrsctp's references bind to the definitions below, not to libc's
 * (a plain RTLD_LOCAL dlopen would not do: libc, already global, comes first). The run fails if the
 * stack read neither, so a loader that did not interpose cannot pass for a virtual run. Outside a
 * virtual run both forward to libc. */
#define VIRTUAL_EPOCH_S 1700000000 /* as the captures' timestamps */

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    (void)tz;
    if (L.virtual_clock) {
        L.clock_reads++;
        tv->tv_sec = VIRTUAL_EPOCH_S + L.virtual_now_us / 1000000;
        tv->tv_usec = L.virtual_now_us % 1000000;
        return 0;
    }
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    tv->tv_sec = t.tv_sec;
    tv->tv_usec = t.tv_nsec / 1000;
    return 0;
}

long syscall(long number, ...)
{
    va_list ap;
    long a[6];
    va_start(ap, number);
    for (int i = 0; i < 6; i++) /* the kernel takes at most 6; extra reads are unused registers */
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (number == SYS_getrandom && L.virtual_clock) {
        unsigned char *buf = (unsigned char *)a[0];
        size_t len = (size_t)a[1];
        for (size_t i = 0; i < len; i++) /* a stream from the seed alone */
            buf[i] = (unsigned char)splitmix64(L.p->seed ^ splitmix64(0x72616E64ULL << 32 ^ L.random_bytes++));
        return (long)len;
    }
    static long (*libc_syscall)(long, ...);
    if (!libc_syscall) {
        void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
        libc_syscall = libc ? (long (*)(long, ...))dlsym(libc, "syscall") : NULL;
        if (!libc_syscall) {
            errno = ENOSYS;
            return -1;
        }
    }
    return libc_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* Bernoulli, or Gilbert-Elliott with the given mean rate and mean burst (loss in the bad state only):
 * the chain's steps are drawn from the packet index too, so the pattern is a function of the seed. */
static int loses(struct direction *dr, int d, uint64_t index)
{
    double rate = L.p->loss[d], burst = L.p->burst[d];
    if (rate <= 0)
        return 0;
    if (burst <= 1)
        return uniform(d, index, 0) < rate;
    double leave_bad = 1.0 / burst;
    double enter_bad = rate >= 1 ? 1 : leave_bad * rate / (1 - rate);
    dr->ge_bad = dr->ge_bad ? uniform(d, index, 1) >= leave_bad : uniform(d, index, 1) < enter_bad;
    return dr->ge_bad;
}

static uint32_t be32(const unsigned char *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static void pcap_header(FILE *f)
{
    uint32_t h[6] = {0xA1B2C3D4, 2 | (4u << 16), 0, 0, 65535, 1};
    fwrite(h, sizeof h, 1, f);
}

static uint16_t ip_checksum(const unsigned char *h)
{
    uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2)
        sum += (uint32_t)h[i] << 8 | h[i + 1];
    while (sum >> 16)
        sum = (sum & 0xFFFF) + (sum >> 16);
    return (uint16_t)~sum;
}

/* one Ethernet + IPv4 frame around an SCTP packet travelling in direction d */
static void pcap_record(FILE *f, int d, int64_t t_us, const unsigned char *sctp, size_t len)
{
    if (!f)
        return;
    static const unsigned char mac[2][6] = {{2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 2}};
    unsigned char hdr[34];
    int src = d == FWD ? 0 : 1, dst = 1 - src;
    memcpy(hdr, mac[dst], 6);
    memcpy(hdr + 6, mac[src], 6);
    hdr[12] = 0x08, hdr[13] = 0x00;
    unsigned char *ip = hdr + 14;
    size_t ip_len = 20 + len;
    memset(ip, 0, 20);
    ip[0] = 0x45;
    ip[2] = (unsigned char)(ip_len >> 8), ip[3] = (unsigned char)ip_len;
    ip[6] = 0x40; /* DF */
    ip[8] = 64, ip[9] = 132;
    for (int i = 0; i < 4; i++) {
        ip[12 + i] = (unsigned char)(L.p->ip[src] >> (24 - 8 * i));
        ip[16 + i] = (unsigned char)(L.p->ip[dst] >> (24 - 8 * i));
    }
    uint16_t c = ip_checksum(ip);
    ip[10] = (unsigned char)(c >> 8), ip[11] = (unsigned char)c;
    int64_t s = 1700000000 + t_us / 1000000; /* the simulator's EPOCH_S, see nrsack.generator.sim.wire */
    uint32_t rec[4] = {(uint32_t)s, (uint32_t)(t_us % 1000000), (uint32_t)(sizeof hdr + len),
                       (uint32_t)(sizeof hdr + len)};
    fwrite(rec, sizeof rec, 1, f);
    fwrite(hdr, sizeof hdr, 1, f);
    fwrite(sctp, len, 1, f);
}

static void log_packet(int d, uint64_t index, int64_t t, const unsigned char *b, size_t len, int fate)
{
    if (!L.link_log)
        return;
    int chunk = len >= 16 ? b[12] : -1;
    long long tsn = (chunk == 0 && len >= 20) ? (long long)be32(b + 16) : -1;
    fprintf(L.link_log, "%d,%llu,%lld,%zu,%d,%d,%lld\n", d, (unsigned long long)index, (long long)t, len, fate,
            chunk, tsn);
}

/* called with the lock held whenever `written` or `sent_new` moves */
static void note_unsent(int64_t t)
{
    int unsent = L.written > L.sent_new;
    if (unsent != L.unsent) {
        L.unsent = unsent;
        fprintf(L.unsent_log, "%lld,%d\n", (long long)t, unsent);
    }
}

/* counts first transmissions: the DATA chunks' highest TSN so far (serial arithmetic) */
static void count_new_data(const unsigned char *b, size_t len)
{
    size_t off = 12;
    while (off + 16 <= len) {
        size_t clen = (size_t)b[off + 2] << 8 | b[off + 3];
        if (clen < 4 || off + clen > len)
            break;
        if (b[off] == 0) {
            uint32_t tsn = be32(b + off + 4);
            if (!L.have_tsn)
                L.have_tsn = 1, L.first_tsn = tsn;
            int64_t n = (int64_t)(uint32_t)(tsn - L.first_tsn) + 1;
            if (n > L.sent_new && n < (1LL << 31))
                L.sent_new = n;
        }
        off += (clen + 3) & ~(size_t)3;
    }
}

/* usrsctp's output callback: `addr` is the destination's AF_CONN address, so it names the direction */
static int conn_output(void *addr, void *buffer, size_t length, uint8_t tos, uint8_t set_df)
{
    (void)tos, (void)set_df;
    int d = addr == &L.token[FWD] ? FWD : REV;
    struct direction *dr = &L.dir[d];
    pthread_mutex_lock(&L.lock);
    if (L.stopped) {
        pthread_mutex_unlock(&L.lock);
        return 0;
    }
    int64_t now = now_us();
    uint64_t index = dr->index++;
    L.r->packets[d]++;
    pcap_record(L.pcap[d == FWD ? 0 : 1], d, now, buffer, length);
    if (d == FWD) {
        count_new_data(buffer, length);
        note_unsent(now);
    }
    while (dr->ring_count && dr->tx_end[dr->ring_head] <= now) {
        dr->ring_head = (dr->ring_head + 1) % (MAX_QUEUE + 1);
        dr->ring_count--;
    }
    int lost = loses(dr, d, index);
    if (dr->ring_count >= L.p->queue_packets[d]) {
        L.r->queue_drops[d]++;
        log_packet(d, index, now, buffer, length, FATE_QUEUE_DROP);
        pthread_mutex_unlock(&L.lock);
        return 0;
    }
    int64_t start = dr->busy_until_us > now ? dr->busy_until_us : now;
    int64_t tx_end = start + (int64_t)llround((20.0 + length) * 8e6 / L.p->bandwidth_bps[d]);
    dr->busy_until_us = tx_end;
    dr->tx_end[(dr->ring_head + dr->ring_count++) % (MAX_QUEUE + 1)] = tx_end;
    log_packet(d, index, now, buffer, length, lost ? FATE_LOST : FATE_DELIVERED);
    if (lost) {
        L.r->lost[d]++;
        pthread_mutex_unlock(&L.lock);
        return 0;
    }
    struct packet *pk = malloc(sizeof *pk + length);
    if (pk) {
        pk->next = NULL;
        pk->arrive_us = tx_end + (int64_t)llround(L.p->delay_s[d] * 1e6);
        pk->len = length;
        memcpy(pk->data, buffer, length);
        if (dr->tail)
            dr->tail->next = pk;
        else
            dr->head = pk;
        dr->tail = pk;
        pthread_cond_signal(&L.link_wake);
    }
    pthread_mutex_unlock(&L.lock);
    return 0;
}

/* the acks in a packet the sender's stack receives (RFC 9260 SACK, NR-SACK draft layout) */
static void log_acks(int64_t t, const unsigned char *b, size_t len)
{
    size_t off = 12;
    while (off + 4 <= len) {
        int type = b[off];
        size_t clen = (size_t)b[off + 2] << 8 | b[off + 3];
        if (clen < 4 || off + clen > len)
            break;
        if ((type == 3 && clen >= 16) || (type == 16 && clen >= 20)) {
            unsigned gaps = (unsigned)b[off + 12] << 8 | b[off + 13];
            unsigned nr_gaps = type == 16 ? ((unsigned)b[off + 14] << 8 | b[off + 15]) : 0;
            fprintf(L.ack_log, "%lld,%d,%u,%u,%u\n", (long long)t, type, be32(b + off + 4), gaps, nr_gaps);
        }
        off += (clen + 3) & ~(size_t)3;
    }
}

/* the direction whose next packet arrives first (forward on a tie), -1 if the link is empty; lock held */
static int next_arrival(void)
{
    struct direction *f = &L.dir[FWD], *r = &L.dir[REV];
    if (f->head && (!r->head || f->head->arrive_us <= r->head->arrive_us))
        return FWD;
    return r->head ? REV : -1;
}

/* hands direction d's first packet to the stack at `now`; called with the lock held and returns with
 * it held: conninput runs unlocked because the stack may answer (conn_output) from inside it */
static void deliver_first(int d, int64_t now)
{
    struct packet *pk = L.dir[d].head;
    L.dir[d].head = pk->next;
    if (!pk->next)
        L.dir[d].tail = NULL;
    pcap_record(L.pcap[d == FWD ? 1 : 0], d, now, pk->data, pk->len);
    if (d == REV)
        log_acks(now, pk->data, pk->len);
    pthread_mutex_unlock(&L.lock);
    usrsctp_conninput(&L.token[1 - d], pk->data, pk->len, 0);
    free(pk);
    pthread_mutex_lock(&L.lock);
}

/* real time: delivers packets at their arrival times */
static void *link_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&L.lock);
    while (!L.stopped) {
        int d = next_arrival();
        if (d < 0) {
            pthread_cond_wait(&L.link_wake, &L.lock);
            continue;
        }
        int64_t now = now_us();
        if (L.dir[d].head->arrive_us > now) {
            struct timespec ts;
            deadline_after(&ts, L.dir[d].head->arrive_us);
            pthread_cond_timedwait(&L.link_wake, &L.lock, &ts);
            continue;
        }
        deliver_first(d, now);
    }
    pthread_mutex_unlock(&L.lock);
    return NULL;
}

/* one line of stack.csv: the sender's association as the stack reports it at `t` */
static void sample_stack(int64_t t)
{
    struct sctp_status st;
    struct sctp_sockstat ss;
    memset(&st, 0, sizeof st);
    memset(&ss, 0, sizeof ss);
    socklen_t len = sizeof st, sslen = sizeof ss;
    pthread_mutex_lock(&L.lock);
    int64_t written = L.written, sent_new = L.sent_new;
    pthread_mutex_unlock(&L.lock);
    if (usrsctp_getsockopt(L.sender, IPPROTO_SCTP, SCTP_STATUS, &st, &len) == 0 &&
        usrsctp_getsockopt(L.sender, IPPROTO_SCTP, SCTP_GET_SNDBUF_USE, &ss, &sslen) == 0)
        fprintf(L.stack_log, "%lld,%d,%u,%u,%u,%u,%u,%u,%u,%lld,%lld\n", (long long)t, st.sstat_state,
                st.sstat_rwnd, st.sstat_unackdata, st.sstat_penddata, st.sstat_primary.spinfo_cwnd,
                st.sstat_primary.spinfo_srtt, st.sstat_primary.spinfo_rto, ss.ss_total_sndbuf,
                (long long)written, (long long)sent_new);
}

static void *sampler_thread(void *arg)
{
    (void)arg;
    int64_t next = now_us();
    for (;;) {
        pthread_mutex_lock(&L.lock);
        int stopped = L.stopped;
        pthread_mutex_unlock(&L.lock);
        if (stopped)
            break;
        sample_stack(now_us());
        next += 1000;
        struct timespec ts;
        deadline_after(&ts, next);
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
    return NULL;
}

static void upcall(struct socket *so, void *arg, int flags)
{
    (void)so, (void)arg, (void)flags;
    pthread_mutex_lock(&L.lock);
    L.app_events++;
    L.last_event_us = now_us();
    pthread_cond_broadcast(&L.app_wake);
    pthread_mutex_unlock(&L.lock);
}

/* waits up to 1 ms for an upcall after `seen`; the timeout only bounds a missed one */
static void wait_for_event(unsigned long seen)
{
    struct timespec ts;
    deadline_after(&ts, now_us() + 1000);
    pthread_mutex_lock(&L.lock);
    while (L.app_events == seen)
        if (pthread_cond_timedwait(&L.app_wake, &L.lock, &ts) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&L.lock);
}

static int64_t last_event_time(void)
{
    pthread_mutex_lock(&L.lock);
    int64_t t = L.last_event_us;
    pthread_mutex_unlock(&L.lock);
    return t;
}

static unsigned long events_seen(void)
{
    pthread_mutex_lock(&L.lock);
    unsigned long e = L.app_events;
    pthread_mutex_unlock(&L.lock);
    return e;
}

static struct sockaddr_conn conn_address(int end, uint16_t port)
{
    struct sockaddr_conn a;
    memset(&a, 0, sizeof a);
    a.sconn_family = AF_CONN;
    a.sconn_port = htons(port);
    a.sconn_addr = &L.token[end];
    return a;
}

static int configure(struct socket *s)
{
    struct sctp_assoc_value nr = {SCTP_FUTURE_ASSOC, (uint32_t)(L.p->nrsack != 0)};
    if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_NRSACK_SUPPORTED, &nr, sizeof nr) < 0)
        return fail("SCTP_NRSACK_SUPPORTED: %s", strerror(errno));
    int one = 1; /* one DATA chunk per message as it is written, as the simulator sends */
    if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_NODELAY, &one, sizeof one) < 0)
        return fail("SCTP_NODELAY: %s", strerror(errno));
    if (L.p->mtu > 0) {
        /* an AF_CONN path has no interface MTU: usrsctp takes 1280 bytes of SCTP packet
         * (netinet/sctp_pcb.c:4664) unless told one, which it counts without the IP and SCTP common
         * headers (sctp_usrreq.c:6403, sctp_pcb.c:4624-4640 add the common header back) */
        struct sctp_paddrparams pp;
        memset(&pp, 0, sizeof pp);
        pp.spp_assoc_id = SCTP_FUTURE_ASSOC;
        pp.spp_flags = SPP_PMTUD_DISABLE;
        pp.spp_pathmtu = (uint32_t)L.p->mtu - 20 - 12;
        if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_PEER_ADDR_PARAMS, &pp, sizeof pp) < 0)
            return fail("SCTP_PEER_ADDR_PARAMS: %s", strerror(errno));
    }
    return 0;
}

#define RECEIVE_BUFFER (1 << 16)

/* one read of the receiving application, its user data counted in *received; -> usrsctp_recvv's
 * return (0: the association's end, -1: errno says why) */
static ssize_t receive_once(struct socket *conn, char *buffer, int64_t *received)
{
    struct sctp_rcvinfo info;
    socklen_t fromlen = 0, infolen = sizeof info;
    unsigned int infotype = 0;
    int flags = 0;
    ssize_t n = usrsctp_recvv(conn, buffer, RECEIVE_BUFFER, NULL, &fromlen, &info, &infolen, &infotype, &flags);
    if (n > 0 && !(flags & MSG_NOTIFICATION))
        *received += n;
    return n;
}

static void *receiver_thread(void *arg)
{
    struct socket *listener = arg;
    struct socket *conn = usrsctp_accept(listener, NULL, NULL);
    char *buffer = malloc(RECEIVE_BUFFER);
    int64_t received = 0;
    if (conn && buffer)
        while (receive_once(conn, buffer, &received) > 0)
            ;
    free(buffer);
    pthread_mutex_lock(&L.lock);
    L.r->bytes_received = received;
    L.receiver_done = 1;
    pthread_cond_broadcast(&L.app_wake);
    pthread_mutex_unlock(&L.lock);
    return NULL;
}

static FILE *open_out(const char *dir, const char *name, const char *header)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return NULL;
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    if (header)
        fputs(header, f);
    return f;
}

static int sender_dry(struct socket *s)
{
    char buffer[1024];
    for (;;) {
        union sctp_notification *n = (union sctp_notification *)buffer;
        socklen_t fromlen = 0, infolen = 0;
        unsigned int infotype = 0;
        int flags = 0;
        ssize_t got = usrsctp_recvv(s, buffer, sizeof buffer, NULL, &fromlen, NULL, &infolen, &infotype, &flags);
        if (got <= 0)
            return 0;
        if ((flags & MSG_NOTIFICATION) && n->sn_header.sn_type == SCTP_SENDER_DRY_EVENT)
            return 1;
    }
}

/* subscribed only once everything is written: subscribing while nothing is queued yields a DRY event at once */
static void subscribe_dry(struct socket *s)
{
    struct sctp_event ev;
    memset(&ev, 0, sizeof ev);
    ev.se_assoc_id = SCTP_FUTURE_ASSOC;
    ev.se_on = 1;
    ev.se_type = SCTP_SENDER_DRY_EVENT;
    usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_EVENT, &ev, sizeof ev);
}

/* after SHUT_WR, the receiver's last moment to read the association's end: bounded, since a lost
 * SHUTDOWN costs an RTO */
static int64_t end_of_shutdown(int64_t deadline)
{
    int64_t until = now_us() + 5000000;
    return until < deadline + 5000000 ? until : deadline + 5000000;
}

#define WROTE 1
#define WAIT_FOR_ROOM 2

/* the application's next write, timing its wait for send-buffer space: -> WROTE, WAIT_FOR_ROOM (the
 * stack refused it for want of room), 0 (refused past the deadline: stop), -1 (an error, in err) */
static int write_next(struct socket *s, const unsigned char *payload, int64_t deadline, int64_t *blocked_since)
{
    int64_t left = L.p->bytes - L.r->bytes_sent;
    int64_t size = left < L.p->message ? left : L.p->message;
    struct sctp_sndinfo info;
    memset(&info, 0, sizeof info);
    info.snd_flags = L.p->unordered ? SCTP_UNORDERED : 0;
    int64_t woken = last_event_time();
    ssize_t n = usrsctp_sendv(s, payload, (size_t)size, NULL, 0, &info, sizeof info, SCTP_SENDV_SNDINFO, 0);
    int64_t t = now_us();
    if (n >= 0) {
        if (*blocked_since >= 0) {
            /* room came with the last upcall before this attempt (earlier ones left too little) */
            int64_t room = woken > *blocked_since ? woken : t;
            fprintf(L.blocked_log, "%lld,%lld,%lld\n", (long long)*blocked_since, (long long)room, (long long)t);
            L.r->blocked_us += room - *blocked_since;
            L.r->blocked_waits++;
            *blocked_since = -1;
        }
        L.r->bytes_sent += n;
        pthread_mutex_lock(&L.lock);
        L.written++;
        note_unsent(now_us());
        pthread_mutex_unlock(&L.lock);
        return WROTE;
    }
    int refused = after_refused_write(t, deadline, blocked_since);
    if (refused < 0)
        return fail("usrsctp_sendv: %s", strerror(errno));
    return refused ? WAIT_FOR_ROOM : 0;
}

/* timed out while blocked: the wait so far counts */
static void close_wait(int64_t blocked_since)
{
    if (blocked_since >= 0)
        fprintf(L.blocked_log, "%lld,%lld,%lld\n", (long long)blocked_since, (long long)now_us(), (long long)now_us());
}

/* real time: the application writes `bytes` in messages */
static int send_all(struct socket *s, const unsigned char *payload, int64_t deadline)
{
    int64_t blocked_since = -1;
    L.r->first_send_us = now_us();
    while (L.r->bytes_sent < L.p->bytes) {
        unsigned long seen = events_seen();
        int w = write_next(s, payload, deadline, &blocked_since);
        if (w < 0)
            return -1;
        if (w == 0)
            break;
        if (w == WAIT_FOR_ROOM)
            wait_for_event(seen);
    }
    close_wait(blocked_since);
    return 0;
}

/* real time: the stack's threads, the link, the sampler and the two applications each in a thread */
static int run_threads(struct socket *listener, struct socket *s, const unsigned char *payload)
{
    int rc = -1;
    const struct lab_params *p = L.p;
    struct lab_result *r = L.r;
    pthread_t link, receiver, sampler;
    pthread_create(&link, NULL, link_thread, NULL);
    pthread_create(&receiver, NULL, receiver_thread, listener);
    struct sockaddr_conn peer = conn_address(FWD, p->port[1]);
    if (usrsctp_connect(s, (struct sockaddr *)&peer, sizeof peer) < 0) {
        fail("usrsctp_connect: %s", strerror(errno));
        goto stop;
    }
    pthread_create(&sampler, NULL, sampler_thread, NULL);
    usrsctp_set_upcall(s, upcall, NULL);
    usrsctp_set_non_blocking(s, 1);
    int64_t deadline = (int64_t)(p->timeout_s * 1e6);
    rc = send_all(s, payload, deadline);
    if (rc == 0 && r->bytes_sent == p->bytes) {
        subscribe_dry(s);
        while (now_us() < deadline) {
            unsigned long seen = events_seen();
            if (sender_dry(s)) {
                r->dry_us = now_us();
                break;
            }
            wait_for_event(seen);
        }
        if (r->dry_us >= 0) {
            usrsctp_shutdown(s, SHUT_WR);
            struct timespec ts;
            deadline_after(&ts, end_of_shutdown(deadline));
            pthread_mutex_lock(&L.lock);
            while (!L.receiver_done && pthread_cond_timedwait(&L.app_wake, &L.lock, &ts) != ETIMEDOUT)
                ;
            pthread_mutex_unlock(&L.lock);
        }
    }
    r->end_us = now_us();
    pthread_mutex_lock(&L.lock);
    L.stopped = 1;
    pthread_cond_broadcast(&L.link_wake);
    pthread_mutex_unlock(&L.lock);
    pthread_join(sampler, NULL);
stop:
    pthread_mutex_lock(&L.lock);
    L.stopped = 1;
    pthread_cond_broadcast(&L.link_wake);
    pthread_mutex_unlock(&L.lock);
    pthread_join(link, NULL);
    /* the receiver thread may still sit in accept or recv: the child process ends with it */
    (void)receiver;
    return rc;
}

/* Virtual time. The applications as the loop's reactions: after every event the receiver reads all the
 * stack holds and the sender writes until refused; a refused sender retries after an upcall or at the
 * next millisecond, as the real one waits up to 1 ms for one. */
#define SAMPLE_US 1000
#define TIMER_TICK_US 10000 /* usrsctp's timer thread ticks every 10 ms (netinet/sctp_callout.c:193) */

struct virtual_app {
    struct socket *listener, *receiver, *sender;
    char *buffer;
    const unsigned char *payload;
    int connected, gave_up, dry_subscribed;
    int64_t deadline, blocked_since, until; /* until: the receiver's last moment to read the end */
    unsigned long seen;                     /* upcalls when the last write was refused */
};

static void receiver_step(struct virtual_app *a)
{
    if (!a->receiver) {
        a->receiver = usrsctp_accept(a->listener, NULL, NULL);
        if (!a->receiver)
            return;
        usrsctp_set_non_blocking(a->receiver, 1);
    }
    while (!L.receiver_done) {
        ssize_t n = receive_once(a->receiver, a->buffer, &L.r->bytes_received);
        if (n > 0)
            continue;
        /* EWOULDBLOCK: nothing more for now; the end of the association or an error: done */
        L.receiver_done = n == 0 || !(errno == EWOULDBLOCK || errno == EAGAIN);
        break;
    }
}

/* -> -1 on an error (in err) */
static int sender_step(struct virtual_app *a, int millisecond)
{
    struct lab_result *r = L.r;
    if (!a->connected) {
        struct sctp_status st;
        socklen_t len = sizeof st;
        memset(&st, 0, sizeof st);
        if (usrsctp_getsockopt(a->sender, IPPROTO_SCTP, SCTP_STATUS, &st, &len) < 0 ||
            st.sstat_state != SCTP_ESTABLISHED)
            return 0;
        a->connected = 1; /* where the real application's blocking connect returns */
        r->first_send_us = now_us();
    }
    if (r->bytes_sent < L.p->bytes) {
        if (a->gave_up || (a->blocked_since >= 0 && L.app_events == a->seen && !millisecond))
            return 0;
        for (;;) {
            a->seen = L.app_events;
            int w = write_next(a->sender, a->payload, a->deadline, &a->blocked_since);
            if (w < 0)
                return -1;
            a->gave_up = w == 0;
            if (w != WROTE || r->bytes_sent == L.p->bytes)
                break;
        }
        if (r->bytes_sent < L.p->bytes)
            return 0;
    }
    if (!a->dry_subscribed) {
        subscribe_dry(a->sender);
        a->dry_subscribed = 1;
    }
    if (r->dry_us < 0 && sender_dry(a->sender)) {
        r->dry_us = now_us();
        usrsctp_shutdown(a->sender, SHUT_WR);
        a->until = end_of_shutdown(a->deadline);
    }
    return 0;
}

static int finished(const struct virtual_app *a)
{
    int64_t now = now_us();
    if (L.r->dry_us >= 0)
        return L.receiver_done || now >= a->until;
    return a->gave_up || now >= a->deadline;
}

static int run_virtual(struct socket *listener, struct socket *s, const unsigned char *payload)
{
    struct virtual_app a = {.listener = listener, .sender = s, .payload = payload, .blocked_since = -1,
                            .deadline = (int64_t)(L.p->timeout_s * 1e6)};
    a.buffer = malloc(RECEIVE_BUFFER);
    if (!a.buffer)
        return fail("out of memory");
    usrsctp_set_non_blocking(listener, 1);
    usrsctp_set_upcall(s, upcall, NULL);
    usrsctp_set_non_blocking(s, 1);
    struct sockaddr_conn peer = conn_address(FWD, L.p->port[1]);
    int rc = 0;
    if (usrsctp_connect(s, (struct sockaddr *)&peer, sizeof peer) < 0 && errno != EINPROGRESS)
        rc = fail("usrsctp_connect: %s", strerror(errno));
    int64_t next_ms = SAMPLE_US;
    int millisecond = 0;
    pthread_mutex_lock(&L.lock); /* uncontended: this thread is the only one that takes it */
    while (rc == 0) {
        pthread_mutex_unlock(&L.lock);
        receiver_step(&a);
        rc = sender_step(&a, millisecond);
        pthread_mutex_lock(&L.lock);
        if (rc < 0 || finished(&a))
            break;
        int d = next_arrival();
        millisecond = d < 0 || L.dir[d].head->arrive_us > next_ms;
        if (!millisecond) {
            L.virtual_now_us = L.dir[d].head->arrive_us;
            deliver_first(d, L.virtual_now_us);
            continue;
        }
        L.virtual_now_us = next_ms;
        next_ms += SAMPLE_US;
        pthread_mutex_unlock(&L.lock);
        if (L.virtual_now_us % TIMER_TICK_US == 0)
            usrsctp_handle_timers(TIMER_TICK_US / 1000);
        if (a.connected)
            sample_stack(L.virtual_now_us);
        pthread_mutex_lock(&L.lock);
    }
    L.r->end_us = now_us();
    L.stopped = 1;
    pthread_mutex_unlock(&L.lock);
    if (L.r->bytes_sent < L.p->bytes)
        close_wait(a.blocked_since);
    free(a.buffer);
    return rc;
}

int lab_usrsctp_run(const struct lab_params *p, const char *out_dir, struct lab_result *r, char *err, int errlen)
{
    memset(&L, 0, sizeof L);
    memset(r, 0, sizeof *r);
    L.p = p, L.r = r, L.err = err, L.errlen = errlen;
    r->dry_us = -1;
    for (int d = 0; d < 2; d++)
        if (p->queue_packets[d] < 1 || p->queue_packets[d] > MAX_QUEUE || !(p->bandwidth_bps[d] > 0))
            return fail("queue must be 1..%d packets and bandwidth positive", MAX_QUEUE);
    clock_gettime(CLOCK_MONOTONIC, &L.t0);
    pthread_mutex_init(&L.lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&L.link_wake, &ca);
    pthread_cond_init(&L.app_wake, &ca);
    if (p->packet_files) {
        L.pcap[0] = open_out(out_dir, "sender.pcap", NULL);
        L.pcap[1] = open_out(out_dir, "receiver.pcap", NULL);
        L.link_log = open_out(out_dir, "link.csv", "direction,index,time_us,length,fate,chunk,tsn\n");
        if (!L.pcap[0] || !L.pcap[1] || !L.link_log)
            return fail("cannot write in %s: %s", out_dir, strerror(errno));
        pcap_header(L.pcap[0]);
        pcap_header(L.pcap[1]);
    }
    L.blocked_log = open_out(out_dir, "blocked.csv", "start_us,end_us,resumed_us\n");
    L.stack_log = open_out(out_dir, "stack.csv",
                           "time_us,state,rwnd,unackdata,penddata,cwnd,srtt_ms,rto_ms,sndbuf_use,written_chunks,sent_chunks\n");
    L.ack_log = open_out(out_dir, "acks.csv", "time_us,chunk,cum_tsn,gaps,nr_gaps\n");
    L.unsent_log = open_out(out_dir, "unsent.csv", "time_us,unsent\n");
    if (!L.blocked_log || !L.stack_log || !L.ack_log || !L.unsent_log)
        return fail("cannot write in %s: %s", out_dir, strerror(errno));

    if (place_tokens() < 0)
        return -1;
    L.virtual_clock = p->virtual_clock != 0;
    if (L.virtual_clock)
        usrsctp_init_nothreads(0, conn_output, NULL);
    else
        usrsctp_init(0, conn_output, NULL);
    usrsctp_sysctl_set_sctp_nrsack_enable(p->nrsack != 0);
    usrsctp_sysctl_set_sctp_ecn_enable(0);
    usrsctp_sysctl_set_sctp_do_drain(p->drain != 0);
    if (p->rto_min_ms > 0)
        usrsctp_sysctl_set_sctp_rto_min_default(p->rto_min_ms);
    if (p->sack_delay_ms > 0)
        usrsctp_sysctl_set_sctp_delayed_sack_time_default(p->sack_delay_ms);
    usrsctp_register_address(&L.token[FWD]);
    usrsctp_register_address(&L.token[REV]);

    struct socket *listener = usrsctp_socket(AF_CONN, SOCK_STREAM, IPPROTO_SCTP, NULL, NULL, 0, NULL);
    struct socket *s = usrsctp_socket(AF_CONN, SOCK_STREAM, IPPROTO_SCTP, NULL, NULL, 0, NULL);
    if (!listener || !s)
        return fail("usrsctp_socket: %s", strerror(errno));
    L.sender = s;
    int rcvbuf = (int)p->rcvbuf, sndbuf = (int)p->sndbuf;
    if (usrsctp_setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf) < 0 ||
        usrsctp_setsockopt(s, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf) < 0)
        return fail("SO_RCVBUF/SO_SNDBUF: %s", strerror(errno));
    socklen_t optlen = sizeof r->sndbuf_socket;
    usrsctp_getsockopt(s, SOL_SOCKET, SO_SNDBUF, &r->sndbuf_socket, &optlen);
    if (configure(listener) < 0 || configure(s) < 0)
        return -1;
    /* the receiver's address is the forward direction's token: conninput(token[REV]) reaches the sender */
    struct sockaddr_conn there = conn_address(REV, p->port[1]), here = conn_address(FWD, p->port[0]);
    if (usrsctp_bind(listener, (struct sockaddr *)&there, sizeof there) < 0 || usrsctp_listen(listener, 1) < 0)
        return fail("receiver bind/listen: %s", strerror(errno));
    if (usrsctp_bind(s, (struct sockaddr *)&here, sizeof here) < 0)
        return fail("sender bind: %s", strerror(errno));
    unsigned char *payload = malloc(p->message);
    if (!payload)
        return fail("out of memory");
    memset(payload, 'n', p->message);

    int rc = L.virtual_clock ? run_virtual(listener, s, payload) : run_threads(listener, s, payload);
    r->complete = r->dry_us >= 0;
    free(payload);
    FILE *files[] = {L.pcap[0], L.pcap[1], L.link_log, L.blocked_log, L.stack_log, L.ack_log, L.unsent_log};
    for (unsigned i = 0; i < sizeof files / sizeof *files; i++)
        if (files[i])
            fclose(files[i]);
    if (L.virtual_clock && (L.clock_reads == 0 || L.random_bytes == 0))
        return fail("the stack's clock and random reads were not answered by the lab (%llu, %llu): load the "
                    "library with RTLD_DEEPBIND (nrsack.lab.usrsctp.library) or use --clock real",
                    (unsigned long long)L.clock_reads, (unsigned long long)L.random_bytes);
    return err[0] ? -1 : rc;
}
