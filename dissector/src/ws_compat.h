/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One source tree for Wireshark 4.0, 4.4 and 4.6: the plugin is written against the newest API, and
 * this header maps it onto the older releases. Keyed on the version the plugin is built for
 * (WIRESHARK_VERSION_MAJOR/MINOR: ws_version.h, or the CMake definitions of the same names). */
#ifndef NRSACK_WS_COMPAT_H
#define NRSACK_WS_COMPAT_H

#include <epan/packet.h>
#include <wsutil/pint.h>

#ifndef WIRESHARK_VERSION_MAJOR
#include <ws_version.h>
#endif

#define NRSACK_WS_AT_LEAST(major, minor) \
    (WIRESHARK_VERSION_MAJOR > (major) || (WIRESHARK_VERSION_MAJOR == (major) && WIRESHARK_VERSION_MINOR >= (minor)))

/* 4.4 deprecates the GLib-typed accessor; older releases have only that one. */
#if !NRSACK_WS_AT_LEAST(4, 4)
#define tvb_get_uint8 tvb_get_guint8
#endif

/* 4.6 renames pntoh32 (and pntoh64) and deprecates dissector_try_uint_new in favor of the _with_data name. */
#if !NRSACK_WS_AT_LEAST(4, 6)
#define pntohu32 pntoh32
#define pntohu64 pntoh64
#define dissector_try_uint_with_data dissector_try_uint_new
#endif

/* 4.6's stat_tap_ui init callback returns whether the tap could start; before, failing meant exiting. */
#if NRSACK_WS_AT_LEAST(4, 6)
#define NRSACK_STAT_INIT_RESULT bool
#define NRSACK_STAT_INIT_STARTED return true
#define NRSACK_STAT_INIT_FAILED return false
#else
#define NRSACK_STAT_INIT_RESULT void
#define NRSACK_STAT_INIT_STARTED return
#define NRSACK_STAT_INIT_FAILED exit(1)
#endif

/* 4.2 added plugin_describe(), which `tshark -G plugins` uses for the plugin's type. */
#define NRSACK_HAS_PLUGIN_DESCRIBE NRSACK_WS_AT_LEAST(4, 2)
#if NRSACK_HAS_PLUGIN_DESCRIBE
#include <wsutil/plugins.h>
#endif

#endif
