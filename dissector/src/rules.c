/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The rule table of rules.md and its expert-info registration. Findings are computed once per frame
 * (first pass) and kept in the frame's result, so every later pass shows the same ones. */
#include "nrsack.h"

#include <stdarg.h>
#include <epan/wmem_scopes.h>

typedef struct {
    const char *id;
    int severity;          /* PI_ERROR, PI_WARN, PI_NOTE */
    int group;
    gboolean has_note;     /* "note when the handshake is not captured" / "may have missed data" */
    const char *summary;
} rule_info_t;

static const rule_info_t rule_table[RULE_COUNT] = {
    [NR01] = {"NR-01", PI_ERROR, PI_PROTOCOL, TRUE, "NR-SACK without 0x10 in both INIT and INIT-ACK Supported Extensions"},
    [NR02] = {"NR-02", PI_ERROR, PI_PROTOCOL, FALSE, "TSN in both an R and an NR gap block"},
    [NR03] = {"NR-03", PI_ERROR, PI_SEQUENCE, FALSE, "NR-acked TSN revoked"},
    [NR04] = {"NR-04", PI_WARN, PI_SEQUENCE, TRUE, "Retransmission of a TSN already NR-acked or cum-acked"},
    [NR05] = {"NR-05", PI_ERROR, PI_MALFORMED, FALSE, "Malformed NR-SACK / SACK gap blocks"},
    [NR06] = {"NR-06", PI_WARN, PI_PROTOCOL, FALSE, "Plain SACK after NR-SACK was negotiated"},
    [NR07] = {"NR-07", PI_NOTE, PI_SEQUENCE, FALSE, "Cumulative TSN ack moves backwards"},
    [NR08] = {"NR-08", PI_WARN, PI_PROTOCOL, FALSE, "Adjacent gap blocks should have been merged"},
    [NR09] = {"NR-09", PI_ERROR, PI_SEQUENCE, TRUE, "Ack covers a TSN never sent"},
    [TN01] = {"TN-01", PI_ERROR, PI_PROTOCOL, TRUE, "TCP NR-SACK blocks without NR-SACK-Permitted on SYN and SYN-ACK"},
    [TN02] = {"TN-02", PI_ERROR, PI_PROTOCOL, FALSE, "Byte in both a SACK block and an NR-SACK block"},
    [TN03] = {"TN-03", PI_ERROR, PI_SEQUENCE, FALSE, "NR-acked bytes revoked"},
    [TN04] = {"TN-04", PI_WARN, PI_SEQUENCE, TRUE, "Retransmission of bytes already NR-acked or cum-acked"},
    [TN05] = {"TN-05", PI_ERROR, PI_MALFORMED, FALSE, "Malformed TCP NR-SACK option"},
    [MN01] = {"MN-01", PI_ERROR, PI_PROTOCOL, TRUE, "DSS NR blocks without MPTCP NR-SACK capability on SYN and SYN-ACK"},
    [MN02] = {"MN-02", PI_ERROR, PI_MALFORMED, FALSE, "DSS flag N without DATA ACK, or count disagrees with length"},
    [MN03] = {"MN-03", PI_ERROR, PI_SEQUENCE, FALSE, "NR-acked data-level bytes revoked"},
    [MN04] = {"MN-04", PI_WARN, PI_SEQUENCE, TRUE, "Data-level retransmission of bytes already NR-acked or DATA-ACKed"},
    [MN05] = {"MN-05", PI_ERROR, PI_MALFORMED, FALSE, "Malformed MPTCP NR blocks"},
    [FS01] = {"FS-01", PI_ERROR, PI_PROTOCOL, FALSE, "FSACK-ACK timestamp never sent in an FSACK-INIT"},
    [FS02] = {"FS-02", PI_WARN, PI_PROTOCOL, FALSE, "FSACK-INIT answered on fewer return paths than receiver addresses"},
    [FS03] = {"FS-03", PI_WARN, PI_PROTOCOL, FALSE, "FSACK-COMPLETE names a path other than the first FSACK-ACK's"},
    [FS04] = {"FS-04", PI_ERROR, PI_PROTOCOL, FALSE, "SACK sent off the FSACK path"},
    [FS05] = {"FS-05", PI_WARN, PI_SEQUENCE, FALSE, "FSACK path not updated within the maximum update interval"},
    [FS06] = {"FS-06", PI_ERROR, PI_PROTOCOL, TRUE, "FSACK chunks without 0xA0 in both INIT and INIT-ACK Supported Extensions"},
    [GEN01] = {"GEN-01", PI_ERROR, PI_MALFORMED, FALSE, "Malformed packet prevents analysis"},
};

static expert_field ei_rule[RULE_COUNT];
static expert_field ei_rule_note[RULE_COUNT];

const char *rule_name(rule_t rule)
{
    return rule_table[rule].id;
}

/* "NR-03" -> "NR03" */
static char *compact_id(const char *id)
{
    GString *s = g_string_new(NULL);
    for (const char *p = id; *p; p++)
        if (*p != '-')
            g_string_append_c(s, *p);
    return g_string_free(s, FALSE);
}

void rules_register(int proto)
{
    /* Expert registration keeps pointers to these for the life of the program. */
    ei_register_info *ei = g_new0(ei_register_info, 2 * RULE_COUNT);
    guint n = 0;
    for (guint r = 0; r < RULE_COUNT; r++) {
        const rule_info_t *ri = &rule_table[r];
        char *id = compact_id(ri->id);
        ei[n++] = (ei_register_info){&ei_rule[r],
            {g_strdup_printf("nrsack.rule.%s", id), ri->group, ri->severity,
             g_strdup_printf("%s: %s", ri->id, ri->summary), EXPFILL}};
        if (ri->has_note)
            ei[n++] = (ei_register_info){&ei_rule_note[r],
                {g_strdup_printf("nrsack.rule.%s.note", id), ri->group, PI_NOTE,
                 g_strdup_printf("%s: %s (cannot be decided from this capture)", ri->id, ri->summary), EXPFILL}};
        g_free(id);
    }
    expert_module_t *module = expert_register_protocol(proto);
    expert_register_field_array(module, ei, n);
}

void rules_raise(frame_result_t *fr, rule_t rule, gboolean note, const char *fmt, ...)
{
    if (!fr)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *detail = wmem_strdup_vprintf(wmem_file_scope(), fmt, ap);
    va_end(ap);
    finding_t *f = wmem_new0(wmem_file_scope(), finding_t);
    f->rule = rule;
    f->note = note && rule_table[rule].has_note;
    f->message = wmem_strdup_printf(wmem_file_scope(), "%s: %s", rule_table[rule].id, detail);
    if (fr->last_finding)
        fr->last_finding->next = f;
    else
        fr->findings = f;
    fr->last_finding = f;
}

void rules_emit(const finding_t *findings, packet_info *pinfo, proto_item *item)
{
    for (const finding_t *f = findings; f; f = f->next)
        expert_add_info_format(pinfo, item, f->note ? &ei_rule_note[f->rule] : &ei_rule[f->rule], "%s", f->message);
}
