/* SPDX-License-Identifier: MIT */
/* What both lab programs do when usrsctp_sendv refused a write (shared by _usrsctp_lab.c and
 * _usrsctp_udp.c, both in the lab's extension). */
#ifndef NRSACK_USRSCTP_SEND_H
#define NRSACK_USRSCTP_SEND_H
#include <errno.h>
#include <stdint.h>

/* -> 1: wait for room (the wait's start noted in *blocked_since), 0: stop (past the deadline),
 * -1: an error other than a full send buffer (errno says which) */
static inline int after_refused_write(int64_t t, int64_t deadline, int64_t *blocked_since)
{
    if (errno != EWOULDBLOCK && errno != EAGAIN)
        return -1;
    if (t > deadline)
        return 0;
    if (*blocked_since < 0)
        *blocked_since = t;
    return 1;
}
#endif
