/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The scoreboard core's allocator (core/nrsack_core.h, "Memory") as the Wireshark plugin fills it: GLib's,
 * as Wireshark code must use (tools/checkAPIs.pl). g_try_realloc, not g_realloc: the core reports a
 * failed allocation (GEN-01 "out of memory") rather than aborting Wireshark. The core's memory lives
 * as long as its flow, beyond any one packet, so it is not wmem's packet or file scope. */
#ifndef NRSACK_CORE_ALLOC_H
#define NRSACK_CORE_ALLOC_H

#include <glib.h>

#define core_realloc(p, size) g_try_realloc((p), (size))
#define core_free(p) g_free(p)

#endif
