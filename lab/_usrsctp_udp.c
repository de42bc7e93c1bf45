/* SPDX-License-Identifier: MIT */
/* usrsctp over UDP encapsulation (RFC 6951, port 9899), one end per process, for multi-homed runs
 * with CMT in network namespaces (nrsack.lab.usrsctp_udp). AF_CONN cannot multi-home (docs/lab.md),
 * so these ends use the kernel's UDP sockets and addresses; the namespaces' forwarders are the link.
 *
 * lab_udp_run(params, role, waits_path, result, err, errlen): role 1 receives (prints "ready" once
 * listening, then reads until the peer's SHUTDOWN arrives), role 0 sends `bytes` in `message`-sized writes,
 * logs every wait for send-buffer space (EWOULDBLOCK to the write that succeeds) to waits_path and
 * returns when the stack has every byte acked (SCTP_STATUS: nothing unacked or pending). */
#define _DEFAULT_SOURCE /* clock_gettime, usleep under -std=c11 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <usrsctp.h>

#include "_usrsctp_send.h"

#define UDP_ENCAPS_PORT 9899
#define MAX_ADDRESSES 8
#define MAX_MESSAGE 65000 /* the lab's --message limit */
/* How long each end waits for the SHUTDOWN handshake to end (await_shutdown): a lost SHUTDOWN is sent again
 * after an RTO (1 s at least, doubling), and the receiver reads until one arrives */
#define SHUTDOWN_WAIT_US 10000000

struct udp_params {
    int32_t nrsack, cmt, drain, n_local, n_remote;
    uint16_t port, peer_port;
    int64_t sndbuf, rcvbuf, bytes, message;
    uint32_t local[MAX_ADDRESSES], remote[MAX_ADDRESSES]; /* IPv4, host order (lab/endpoints.py ipv4) */
    double timeout_s;
    uint32_t hb_interval_ms;
};

struct udp_result {
    int64_t first_send_us, done_us, bytes_sent, bytes_received, blocked_us, blocked_waits;
    int32_t complete;
};

static char *err_buf;
static int err_len;

static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_buf, (size_t)err_len, fmt, ap);
    va_end(ap);
    return -1;
}

static int64_t wall_us(void) /* the captures' clock */
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void fill_addresses(struct sockaddr_in *out, const uint32_t *ips, int n, uint16_t port)
{
    memset(out, 0, sizeof *out * (size_t)n);
    for (int i = 0; i < n; i++) {
        out[i].sin_family = AF_INET;
        out[i].sin_port = htons(port);
        out[i].sin_addr.s_addr = htonl(ips[i]);
    }
}

static struct socket *open_end(const struct udp_params *p)
{
    usrsctp_init(UDP_ENCAPS_PORT, NULL, NULL);
    usrsctp_sysctl_set_sctp_nrsack_enable(p->nrsack != 0);
    usrsctp_sysctl_set_sctp_cmt_on_off(p->cmt != 0);
    usrsctp_sysctl_set_sctp_ecn_enable(0);
    usrsctp_sysctl_set_sctp_do_drain(p->drain != 0);
    struct socket *s = usrsctp_socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP, NULL, NULL, 0, NULL);
    if (!s) {
        fail("usrsctp_socket: %s", strerror(errno));
        return NULL;
    }
    struct sctp_udpencaps encaps;
    memset(&encaps, 0, sizeof encaps);
    encaps.sue_address.ss_family = AF_INET;
    encaps.sue_port = htons(UDP_ENCAPS_PORT);
    struct sctp_assoc_value nr = {SCTP_FUTURE_ASSOC, (uint32_t)(p->nrsack != 0)};
    int one = 1, sndbuf = (int)p->sndbuf, rcvbuf = (int)p->rcvbuf;
    struct sockaddr_in local[MAX_ADDRESSES];
    fill_addresses(local, p->local, p->n_local, p->port);
    if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_REMOTE_UDP_ENCAPS_PORT, &encaps, sizeof encaps) < 0 ||
        usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_NRSACK_SUPPORTED, &nr, sizeof nr) < 0 ||
        usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_NODELAY, &one, sizeof one) < 0 ||
        usrsctp_setsockopt(s, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf) < 0 ||
        usrsctp_setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf) < 0) {
        fail("socket options: %s", strerror(errno));
        return NULL;
    }
    if (usrsctp_bindx(s, (struct sockaddr *)local, p->n_local, SCTP_BINDX_ADD_ADDR) < 0) {
        fail("usrsctp_bindx: %s", strerror(errno));
        return NULL;
    }
    /* heartbeats confirm the second path soon after the handshake (the default waits 30 s) */
    struct sctp_paddrparams hb;
    memset(&hb, 0, sizeof hb);
    hb.spp_assoc_id = SCTP_FUTURE_ASSOC;
    hb.spp_hbinterval = p->hb_interval_ms;
    hb.spp_flags = SPP_HB_ENABLE;
    usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_PEER_ADDR_PARAMS, &hb, sizeof hb);
    return s;
}

static int receive_all(const struct udp_params *p, struct udp_result *r)
{
    struct socket *listener = open_end(p);
    if (!listener)
        return -1;
    if (usrsctp_listen(listener, 1) < 0)
        return fail("usrsctp_listen: %s", strerror(errno));
    /* the peer's SHUTDOWN ends the read: its data is all in by then, and the read's end of file waits for
     * the SHUTDOWN COMPLETE, which a lost packet delays by the SHUTDOWN ACK's retransmissions (a minute and
     * more: the sender has gone) */
    struct sctp_event shutdown_event = {.se_assoc_id = SCTP_FUTURE_ASSOC, .se_type = SCTP_SHUTDOWN_EVENT, .se_on = 1};
    if (usrsctp_setsockopt(listener, IPPROTO_SCTP, SCTP_EVENT, &shutdown_event, sizeof shutdown_event) < 0)
        return fail("SCTP_EVENT: %s", strerror(errno));
    printf("ready\n");
    fflush(stdout);
    struct socket *s = usrsctp_accept(listener, NULL, NULL);
    if (!s)
        return fail("usrsctp_accept: %s", strerror(errno));
    char *buf = malloc(1 << 16);
    if (!buf)
        return fail("out of memory");
    for (;;) {
        struct sctp_rcvinfo info;
        socklen_t infolen = sizeof info, from = 0;
        unsigned int infotype = 0;
        int flags = 0;
        ssize_t n = usrsctp_recvv(s, buf, 1 << 16, NULL, &from, &info, &infolen, &infotype, &flags);
        if (n <= 0)
            break;
        if (!(flags & MSG_NOTIFICATION))
            r->bytes_received += n;
        else if (((union sctp_notification *)buf)->sn_header.sn_type == SCTP_SHUTDOWN_EVENT)
            break;
    }
    free(buf);
    r->complete = r->bytes_received == p->bytes;
    usrsctp_close(s);
    usrsctp_close(listener);
    return 0;
}

static int all_acked(struct socket *s)
{
    struct sctp_status st;
    socklen_t len = sizeof st;
    memset(&st, 0, sizeof st);
    if (usrsctp_getsockopt(s, IPPROTO_SCTP, SCTP_STATUS, &st, &len) < 0)
        return 0;
    return st.sstat_unackdata == 0 && st.sstat_penddata == 0;
}

static int association_gone(struct socket *s)
{
    struct sctp_status st;
    socklen_t len = sizeof st;
    memset(&st, 0, sizeof st);
    return usrsctp_getsockopt(s, IPPROTO_SCTP, SCTP_STATUS, &st, &len) < 0 || st.sstat_state == SCTP_CLOSED;
}

static int send_all(const struct udp_params *p, FILE *waits, struct udp_result *r)
{
    struct socket *s = open_end(p);
    if (!s)
        return -1;
    struct sockaddr_in remote[MAX_ADDRESSES];
    fill_addresses(remote, p->remote, p->n_remote, p->peer_port);
    if (usrsctp_connectx(s, (struct sockaddr *)remote, p->n_remote, NULL) < 0)
        return fail("usrsctp_connectx: %s", strerror(errno));
    /* q starts at the first write into an established association (a lost INIT costs 3 s) */
    int64_t deadline = wall_us() + (int64_t)(p->timeout_s * 1e6), blocked_since = -1;
    for (;;) {
        struct sctp_status st;
        socklen_t len = sizeof st;
        memset(&st, 0, sizeof st);
        if (usrsctp_getsockopt(s, IPPROTO_SCTP, SCTP_STATUS, &st, &len) == 0 && st.sstat_state == SCTP_ESTABLISHED)
            break;
        if (wall_us() > deadline)
            return fail("no association within the time limit");
        usleep(1000);
    }
    usrsctp_set_non_blocking(s, 1);
    static unsigned char payload[MAX_MESSAGE]; /* one process, one sender */
    if (p->message < 1 || p->message > MAX_MESSAGE)
        return fail("message must be 1 to %d bytes", MAX_MESSAGE);
    memset(payload, 'n', (size_t)p->message);
    r->first_send_us = wall_us();
    while (r->bytes_sent < p->bytes) {
        int64_t size = p->bytes - r->bytes_sent < p->message ? p->bytes - r->bytes_sent : p->message;
        ssize_t n = usrsctp_sendv(s, payload, (size_t)size, NULL, 0, NULL, 0, SCTP_SENDV_NOINFO, 0);
        int64_t t = wall_us();
        if (n >= 0) {
            if (blocked_since >= 0) {
                /* with the bytes written before the wait: what the buffer held, sent or not */
                fprintf(waits, "%.6f,%.6f,%lld\n", blocked_since / 1e6, t / 1e6, (long long)r->bytes_sent);
                r->blocked_us += t - blocked_since;
                r->blocked_waits++;
                blocked_since = -1;
            }
            r->bytes_sent += n;
            continue;
        }
        int refused = after_refused_write(t, deadline, &blocked_since);
        if (refused <= 0) {
            if (refused < 0)
                return fail("usrsctp_sendv: %s", strerror(errno));
            break;
        }
        usleep(50); /* the stack's timers and input run on their own threads */
    }
    while (r->bytes_sent == p->bytes && wall_us() < deadline) {
        if (all_acked(s)) {
            r->done_us = wall_us();
            r->complete = 1;
            break;
        }
        usleep(200);
    }
    usrsctp_shutdown(s, SHUT_WR);
    /* the SHUTDOWN handshake, so the receiver's read ends: until the association is gone (a fixed 300 ms
     * left a lost SHUTDOWN unsent again, and the receiver waiting) */
    for (int64_t until = wall_us() + SHUTDOWN_WAIT_US; wall_us() < until && !association_gone(s);)
        usleep(1000);
    usrsctp_close(s);
    return 0;
}

int lab_udp_run(const struct udp_params *p, int role, const char *waits_path, struct udp_result *r, char *err,
                int errlen)
{
    err_buf = err, err_len = errlen;
    memset(r, 0, sizeof *r);
    if (p->n_local < 1 || p->n_local > MAX_ADDRESSES || p->n_remote < 1 || p->n_remote > MAX_ADDRESSES)
        return fail("1 to %d addresses per end", MAX_ADDRESSES);
    if (role == 1)
        return receive_all(p, r);
    FILE *waits = fopen(waits_path, "w");
    if (!waits)
        return fail("cannot write %s: %s", waits_path, strerror(errno));
    fprintf(waits, "start_s,end_s,written_bytes\n");
    int rc = send_all(p, waits, r);
    fclose(waits);
    return rc;
}
