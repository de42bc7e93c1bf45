/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Serial-number unwrapping: the one rule of docs/scoreboard.md "Units and serial numbers".
 *
 * A 32-bit value becomes the 64-bit serial nearest to the highest serial seen in its space (RFC 1982
 * distance: up to 2^31 either side). The highest, not the previous value: a reordered or stale ack
 * far behind must not drag the reference back. A value that lands more than SERIAL_FAR from the
 * highest (a damaged or hostile field: an ack 2^31 away would make every later ack look 2^32 behind)
 * is not adopted: it is reported SERIAL_FAR_AWAY and becomes a candidate; if the next far value lies
 * within SERIAL_FAR of that candidate, the space really jumped (a capture that missed a gigabyte) and
 * the second value is adopted as the new reference. Any value near the reference clears the
 * candidate. Serials never go below 0. Values 64 bits wide (MPTCP's 8-octet DSNs) pass the same guard
 * (serial_take64): 157 GB of data level from one random DSS must not be adopted either (docs/decisions.md 40). */
#include "nrsack_core.h"

uint64_t serial_near(uint64_t reference, uint32_t v) {
    return reference + (uint64_t)(int64_t)(int32_t)(v - (uint32_t)reference);
}

static uint64_t distance(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

void serial_anchor(serial_space_t *s, uint32_t initial) {
    if (!s->anchored) {
        s->anchored = 1;
        s->highest = SERIAL_ORIGIN + initial;
    } else {
        s->highest = serial_near(s->highest, initial);
    }
    s->candidate_set = 0;
}

/* Serials live in [0, 2^63): a value that would unwrap below 0 (hostile jumps downwards past the
 * anchor's room) is far away too, and never a candidate. */
static int below_zero(uint64_t x) { return (int64_t)x < 0; }

/* The far guard on x, a serial of s's space (y: the same wire value seen from the candidate). */
static int guard(serial_space_t *s, uint64_t x, uint64_t y, uint64_t *out) {
    *out = x;
    if (!below_zero(x) && distance(x, s->highest) <= SERIAL_FAR) {
        s->candidate_set = 0;
        if (x > s->highest) s->highest = x;
        return SERIAL_OK;
    }
    if (s->candidate_set && !below_zero(y) && distance(y, s->candidate) <= SERIAL_FAR) {
        /* confirmed: the space jumped, in either direction */
        s->candidate_set = 0;
        s->highest = *out = y;
        return SERIAL_OK;
    }
    s->candidate_set = !below_zero(x);
    s->candidate = x;
    return SERIAL_FAR_AWAY;
}

int serial_unwrap(serial_space_t *s, uint32_t v, uint64_t *out) {
    if (!s->anchored) {
        serial_anchor(s, v);
        *out = s->highest;
        return SERIAL_OK;
    }
    return guard(s, serial_near(s->highest, v), s->candidate_set ? serial_near(s->candidate, v) : 0, out);
}

int serial_take64(serial_space_t *s, uint64_t v, uint64_t *out) {
    if (!s->anchored) {
        s->anchored = 1;
        s->highest = v;
        s->candidate_set = 0;
        *out = v;
        return SERIAL_OK;
    }
    if (v >= SERIAL_WIDE_LIMIT) {
        s->candidate_set = 0;
        *out = v;
        return SERIAL_FAR_AWAY;
    }
    return guard(s, v, v, out);
}
