/* Serial-number unwrapping: the one rule of docs/scoreboard.md "Units and serial numbers".
 *
 * A 32-bit value becomes the 64-bit serial nearest to the highest serial seen in its space (RFC 1982
 * distance: up to 2^31 either side). The highest, not the previous value: a reordered or stale ack
 * far behind must not drag the reference back. A value that lands more than SERIAL_FAR from the
 * highest (a damaged or hostile field: an ack 2^31 away would make every later ack look 2^32 behind)
 * is not adopted: it is reported SERIAL_FAR_AWAY and becomes a candidate; if the next far value lies
 * within SERIAL_FAR of that candidate, the space really jumped (a capture that missed a gigabyte) and
 * the second value is adopted as the new reference. Any value near the reference clears the
 * candidate. */
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

int serial_unwrap(serial_space_t *s, uint32_t v, uint64_t *out) {
    if (!s->anchored) {
        serial_anchor(s, v);
        *out = s->highest;
        return SERIAL_OK;
    }
    uint64_t x = serial_near(s->highest, v);
    if (distance(x, s->highest) > SERIAL_FAR) {
        uint64_t near_candidate = s->candidate_set ? serial_near(s->candidate, v) : 0;
        if (!s->candidate_set || distance(near_candidate, s->candidate) > SERIAL_FAR) {
            s->candidate_set = 1;
            s->candidate = x;
            *out = x;
            return SERIAL_FAR_AWAY;
        }
        /* confirmed: the space jumped, in either direction */
        s->candidate_set = 0;
        s->highest = near_candidate;
        *out = near_candidate;
        return SERIAL_OK;
    }
    s->candidate_set = 0;
    if (x > s->highest) s->highest = x;
    *out = x;
    return SERIAL_OK;
}

uint64_t serial_take64(serial_space_t *s, uint64_t v) {
    if (!s->anchored || v > s->highest) {
        s->anchored = 1;
        s->highest = v;
    }
    return v;
}
