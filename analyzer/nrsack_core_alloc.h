/* SPDX-License-Identifier: MIT */
/* The scoreboard core's allocator (core/nrsack_core.h, "Memory") as the analyzer's extension fills it:
 * the C library's, as macros, so the core's hot paths call realloc directly. */
#ifndef NRSACK_CORE_ALLOC_H
#define NRSACK_CORE_ALLOC_H

#include <stdlib.h>

#define core_realloc(p, size) realloc((p), (size))
#define core_free(p) free(p)

#endif
