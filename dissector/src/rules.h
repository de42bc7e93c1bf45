/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Rules of docs/rules.md, by ID; raised as expert info nrsack.rule.<ID without dash>. */
#ifndef NRSACK_RULES_H
#define NRSACK_RULES_H

#include <epan/packet.h>

typedef enum {
    NR01, NR02, NR03, NR04, NR05, NR06, NR07, NR08, NR09,
    TN01, TN02, TN03, TN04, TN05,
    MN01, MN02, MN03, MN04, MN05,
    FS01, FS02, FS03, FS04, FS05, FS06,
    GEN01,
    RULE_COUNT
} rule_t;

typedef struct frame_result frame_result_t;
typedef struct finding finding_t;

const char *rule_name(rule_t rule); /* "NR-03" */
/* Records a finding on this frame; `note` selects the note variant the rule allows
 * (handshake not captured). The message is prefixed with the rule ID. */
void rules_raise(frame_result_t *fr, rule_t rule, gboolean note, const char *fmt, ...) G_GNUC_PRINTF(4, 5);
void rules_emit(const finding_t *findings, packet_info *pinfo, proto_item *item);

#endif
