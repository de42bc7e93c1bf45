/* SPDX-License-Identifier: MIT */
/* A tiny usrsctp peer for the checker's real-peer test: NR-SACK on, SCTP over UDP (RFC 6951, port
 * 9899), one-to-one socket.
 *
 *   nrsack_peer server PORT
 *       accepts one association on PORT, reads until the peer shuts down, prints "received N"
 *   nrsack_peer client ADDRESS PORT MESSAGES SIZE SNDBUF
 *       sends MESSAGES messages of SIZE bytes on stream 0, every second one unordered, through a
 *       send buffer of SNDBUF bytes, then shuts down gracefully (all data acked) and prints "sent N"
 *
 * Timers are shortened (RTO 50..500 ms, SACK delay 10 ms) so that a lossy transfer ends in seconds.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <usrsctp.h>

#define UDP_PORT 9899

static int fail(const char *what)
{
    perror(what);
    return 1;
}

static void start(void)
{
    usrsctp_init(UDP_PORT, NULL, NULL);
    usrsctp_sysctl_set_sctp_nrsack_enable(1);
    usrsctp_sysctl_set_sctp_rto_min_default(50);
    usrsctp_sysctl_set_sctp_rto_initial_default(200);
    usrsctp_sysctl_set_sctp_rto_max_default(500);
    usrsctp_sysctl_set_sctp_init_rto_max_default(500);
    usrsctp_sysctl_set_sctp_delayed_sack_time_default(10);
}

static struct sockaddr_in address(const char *ip, int port)
{
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_port = htons(port);
    sin.sin_addr.s_addr = ip ? inet_addr(ip) : htonl(INADDR_ANY);
    return sin;
}

static int server(int port)
{
    struct socket *listener = usrsctp_socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP, NULL, NULL, 0, NULL);
    if (!listener)
        return fail("usrsctp_socket");
    struct sockaddr_in sin = address(NULL, port);
    if (usrsctp_bind(listener, (struct sockaddr *)&sin, sizeof sin) < 0)
        return fail("usrsctp_bind");
    if (usrsctp_listen(listener, 1) < 0)
        return fail("usrsctp_listen");
    printf("listening\n");
    fflush(stdout);
    struct socket *conn = usrsctp_accept(listener, NULL, NULL);
    if (!conn)
        return fail("usrsctp_accept");
    char buffer[65536];
    long received = 0;
    for (;;) {
        struct sockaddr_in from;
        socklen_t fromlen = sizeof from, infolen = 0;
        unsigned int infotype = 0;
        int flags = 0;
        ssize_t n = usrsctp_recvv(conn, buffer, sizeof buffer, (struct sockaddr *)&from, &fromlen, NULL, &infolen,
                                  &infotype, &flags);
        if (n < 0)
            return fail("usrsctp_recvv");
        if (n == 0)
            break;
        if (!(flags & MSG_NOTIFICATION))
            received += n;
    }
    printf("received %ld\n", received);
    usrsctp_close(conn);
    usrsctp_close(listener);
    return 0;
}

static int client(const char *ip, int port, int messages, int size, int sndbuf)
{
    struct socket *sock = usrsctp_socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP, NULL, NULL, 0, NULL);
    if (!sock)
        return fail("usrsctp_socket");
    if (usrsctp_setsockopt(sock, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf) < 0)
        return fail("SO_SNDBUF");
    struct sctp_udpencaps encaps;
    memset(&encaps, 0, sizeof encaps);
    encaps.sue_address.ss_family = AF_INET;
    encaps.sue_port = htons(UDP_PORT);
    if (usrsctp_setsockopt(sock, IPPROTO_SCTP, SCTP_REMOTE_UDP_ENCAPS_PORT, &encaps, sizeof encaps) < 0)
        return fail("SCTP_REMOTE_UDP_ENCAPS_PORT");
    struct sockaddr_in sin = address(ip, port);
    if (usrsctp_connect(sock, (struct sockaddr *)&sin, sizeof sin) < 0)
        return fail("usrsctp_connect");
    char *payload = malloc(size);
    long sent = 0;
    for (int i = 0; i < messages; i++) {
        memset(payload, 'a' + i % 26, size);
        struct sctp_sndinfo info;
        memset(&info, 0, sizeof info);
        info.snd_sid = 0;
        info.snd_flags = (i % 2) ? SCTP_UNORDERED : 0; /* a mix of ordered and unordered messages */
        if (usrsctp_sendv(sock, payload, size, NULL, 0, &info, sizeof info, SCTP_SENDV_SNDINFO, 0) < 0)
            return fail("usrsctp_sendv");
        sent += size;
    }
    free(payload);
    /* graceful shutdown: SHUTDOWN only after every DATA chunk is acked; wait for the peer's close */
    usrsctp_shutdown(sock, SHUT_WR);
    char buffer[1024];
    for (;;) {
        socklen_t fromlen = 0, infolen = 0;
        unsigned int infotype = 0;
        int flags = 0;
        if (usrsctp_recvv(sock, buffer, sizeof buffer, NULL, &fromlen, NULL, &infolen, &infotype, &flags) <= 0)
            break;
    }
    printf("sent %ld\n", sent);
    usrsctp_close(sock);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int rc;
    if (argc == 3 && !strcmp(argv[1], "server")) {
        start();
        rc = server(atoi(argv[2]));
    } else if (argc == 7 && !strcmp(argv[1], "client")) {
        start();
        rc = client(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
    } else {
        fprintf(stderr, "usage: %s server PORT | client ADDRESS PORT MESSAGES SIZE SNDBUF\n", argv[0]);
        return 2;
    }
    while (usrsctp_finish() != 0)
        usleep(100000);
    return rc;
}
