-- SPDX-License-Identifier: GPL-2.0-or-later
-- nrsack.lua: the NR-SACK / FSACK Wireshark plugin in Lua, for any Wireshark from 4.0 on.
--
-- Mirrors the C plugin (dissector/): protocol `nrsack`, the fields of docs/fields.md, expert
-- info nrsack.rule.<ID> for rules.md, the same preferences and the same per-flow analysis
-- (docs/decisions.md). It is a postdissector that re-reads the SCTP and TCP layers' bytes, because
-- neither SCTP's chunk switch nor (from Lua) TCP's option table can be extended safely.
--
-- Written for Lua 5.2 (Wireshark 4.0) and unchanged on 5.3 / 5.4: no `//`, no native bit operators
-- (bit32 or Wireshark's `bit` library), sequence numbers unwrapped into doubles (exact below 2^53),
-- MPTCP 64-bit data sequence numbers kept as (high, low) word pairs, made relative to a per-flow
-- anchor for the scoreboard, and shown through UInt64.
--
-- Data flows one way: bytes -> events (data, ack) -> per-direction scoreboard -> frame result ->
-- tree items. The analysis runs once per frame (first pass) and its result is cached by frame
-- number, so later passes and filtered views show exactly the same fields and findings.

local TWO32 = 4294967296
local TWO31 = 2147483648

-- Bit operations: bit32 (Lua 5.2), Wireshark's `bit` (LuaBitOp), or, where a build has neither, plain
-- arithmetic over the 32 bits (slow, but only flags and the once-per-connection token hash use it).
local function arithmetic_bitlib()
    local function combine(a, b, keep)
        a, b = a % TWO32, b % TWO32
        local r, p = 0, 1
        for _ = 1, 32 do
            local x, y = a % 2, b % 2
            if keep(x, y) then r = r + p end
            a, b, p = (a - x) / 2, (b - y) / 2, p * 2
        end
        return r
    end
    local function fold(keep)
        return function(a, b, ...)
            local r = combine(a, b, keep)
            for i = 1, select("#", ...) do r = combine(r, (select(i, ...)), keep) end
            return r
        end
    end
    return {
        band = fold(function(x, y) return x == 1 and y == 1 end),
        bor = fold(function(x, y) return x == 1 or y == 1 end),
        bxor = fold(function(x, y) return x ~= y end),
        bnot = function(a) return TWO32 - 1 - a % TWO32 end,
        lshift = function(a, n) return (a * 2 ^ n) % TWO32 end,
        rshift = function(a, n) return math.floor((a % TWO32) / 2 ^ n) end,
    }
end
local bitlib = bit32 or bit or arithmetic_bitlib()
local band = bitlib.band

-- Whether single-bit `flag` is set in the non-negative integer `value` (arithmetic: no library call).
local function has_flag(value, flag) return value % (flag + flag) >= flag end

-- The empty list every packet without SACK blocks, MPTCP options or revocations shares (fewer tables
-- per packet for the collector); writing to it is a bug.
local NO_ITEMS = setmetatable({}, {__newindex = function() error("NO_ITEMS is shared and read-only") end})

------------------------------------------------------------------------------------------------
-- Protocol, fields, preferences, expert info
------------------------------------------------------------------------------------------------

-- What `tshark -G plugins` and About > Plugins show. The version is the repository's VERSION (a test
-- keeps them equal); spdx_id is read by releases that ask plugins for their license, ignored by older.
local NRSACK_VERSION = "0.1.0"
set_plugin_info({
    version = NRSACK_VERSION,
    description = "NR-SACK and FSACK analysis of SCTP, TCP and MPTCP: RtxQ, send-buffer blocking, rule findings",
    spdx_id = "GPL-2.0-or-later",
})

-- The C plugin registers the same protocol and fields: when it is loaded, it does the job, and this
-- script steps aside instead of failing on the duplicate protocol.
if pcall(Field.new, "nrsack.stream") then
    io.stderr:write("nrsack.lua: the nrsack C plugin is loaded; the Lua plugin stays inactive\n")
    return
end

local nrsack = Proto("nrsack", "NR-SACK analysis")

-- Labels and descriptions: docs/fields.md's table, word for word as the C plugin registers them
-- (tests/test_fields_table.py checks both through `tshark -G fields`).
local hf = {
    fsack_type = ProtoField.uint8("nrsack.fsack.type", "FSACK chunk type", base.HEX, nil, nil,
        "Type of this FSACK chunk: FSACK-INIT, FSACK-ACK or FSACK-COMPLETE (0xA0, 0xA1, 0xA2 unless the preferences say otherwise)"),
    fsack_timestamp = ProtoField.uint32("nrsack.fsack.timestamp", "FSACK timestamp (ms)", base.DEC, nil, nil,
        "Sender's clock in milliseconds, modulo 2^32, sent in an FSACK-INIT and echoed in the FSACK-ACK"),
    fsack_address_v4 = ProtoField.ipv4("nrsack.fsack.address_v4", "FSACK path address",
        "IPv4 address an FSACK-COMPLETE names as the path SACKs must take"),
    fsack_address_v6 = ProtoField.ipv6("nrsack.fsack.address_v6", "FSACK path address",
        "IPv6 address an FSACK-COMPLETE names as the path SACKs must take"),
    fsack_rtt_ms = ProtoField.uint32("nrsack.fsack.rtt_ms", "FSACK RTT (ms)", base.DEC, nil, nil,
        "On an FSACK-ACK seen at the sender: its arrival time minus the timestamp it echoes, in milliseconds"),
    sctp_ext_nr_sack = ProtoField.bool("nrsack.sctp.ext_nr_sack", "Supported Extensions lists NR-SACK (0x10)", base.NONE, nil, nil,
        "The INIT or INIT-ACK Supported Extensions parameter lists chunk type 0x10 (NR-SACK)"),
    sctp_ext_fsack = ProtoField.bool("nrsack.sctp.ext_fsack", "Supported Extensions lists FSACK-INIT", base.NONE, nil, nil,
        "The INIT or INIT-ACK Supported Extensions parameter lists the FSACK-INIT chunk type"),
    tcp_exid = ProtoField.uint16("nrsack.tcp.exid", "Experiment ID", base.HEX, nil, nil,
        "RFC 6994 experiment ID of the TCP NR-SACK option"),
    tcp_permitted = ProtoField.bool("nrsack.tcp.permitted", "NR-SACK-Permitted", base.NONE, nil, nil,
        "The option is NR-SACK-Permitted (SYN or SYN-ACK)"),
    tcp_flags = ProtoField.uint8("nrsack.tcp.flags", "NR-SACK-Permitted flags", base.HEX, nil, nil,
        "Flags octet of NR-SACK-Permitted: 0x01 never renege, 0x02 MPTCP data-level NR-SACK"),
    tcp_never_renege = ProtoField.bool("nrsack.tcp.never_renege", "Never renege", base.NONE, nil, nil,
        "NR-SACK-Permitted flag 0x01: this endpoint never reneges, so its SACK blocks count as NR-acked"),
    tcp_block_count = ProtoField.uint8("nrsack.tcp.block_count", "NR-SACK blocks", base.DEC, nil, nil,
        "Number of NR-SACK blocks in the option"),
    tcp_block_left = ProtoField.uint32("nrsack.tcp.block.left", "NR-SACK block left edge", base.DEC, nil, nil,
        "First sequence number of an NR-SACK block (absolute)"),
    tcp_block_right = ProtoField.uint32("nrsack.tcp.block.right", "NR-SACK block right edge", base.DEC, nil, nil,
        "Sequence number just after an NR-SACK block (absolute)"),
    mptcp_capable = ProtoField.bool("nrsack.mptcp.capable", "MPTCP data-level NR-SACK capable", base.NONE, nil, nil,
        "NR-SACK-Permitted flag 0x02: NR blocks may follow in MPTCP DSS options"),
    mptcp_wide = ProtoField.bool("nrsack.mptcp.wide", "8-octet block offsets", base.NONE, nil, nil,
        "DSS flag n: the NR block offsets are 8 octets wide, else 4"),
    mptcp_block_count = ProtoField.uint8("nrsack.mptcp.block_count", "NR blocks", base.DEC, nil, nil,
        "Number of NR blocks in the DSS option"),
    mptcp_block_start = ProtoField.uint64("nrsack.mptcp.block.start", "NR block start (DSN)", base.DEC, nil, nil,
        "First data sequence number of an MPTCP NR block (absolute)"),
    mptcp_block_end = ProtoField.uint64("nrsack.mptcp.block.end", "NR block end (DSN, exclusive)", base.DEC, nil, nil,
        "Data sequence number just after an MPTCP NR block (absolute)"),
    stream = ProtoField.uint32("nrsack.stream", "Stream index", base.DEC, nil, nil,
        "Index of the SCTP association or TCP / MPTCP connection, counted as tcp.stream is"),
    direction = ProtoField.string("nrsack.direction", "Data sender direction", base.NONE,
        "Sender -> receiver of the data whose retransmission queue the figures that follow describe"),
    rtxq_bytes = ProtoField.uint32("nrsack.rtxq.bytes", "RtxQ (bytes)", base.DEC, nil, nil,
        "After this packet: the sender's retransmission queue under the semantics the capture used (NR-SACK when negotiated or seen, else SACK)"),
    rtxq_sack_bytes = ProtoField.uint32("nrsack.rtxq.sack_bytes", "RtxQ under SACK semantics (bytes)", base.DEC, nil, nil,
        "After this packet: bytes sent and not yet cumulatively acked, as a plain SACK sender keeps them"),
    rtxq_nr_acked_bytes = ProtoField.uint32("nrsack.rtxq.nr_acked_bytes", "NR-acked above the cum ack (bytes)", base.DEC, nil, nil,
        "After this packet: bytes above the cumulative ack that an ack reported non-renegable"),
    rtxq_nr_bytes = ProtoField.uint32("nrsack.rtxq.nr_bytes", "RtxQ under NR-SACK semantics (bytes)", base.DEC, nil, nil,
        "After this packet: the SACK-semantics queue minus the NR-acked bytes, as a sender that honors NR-SACKs keeps it"),
    rtxq_sacked_bytes = ProtoField.uint32("nrsack.rtxq.sacked_bytes", "Gap-acked above the cum ack (bytes)", base.DEC, nil, nil,
        "After this packet: bytes above the cumulative ack that any gap block (renegable or not) reported"),
    rtxq_whatif_bytes = ProtoField.uint32("nrsack.rtxq.whatif_bytes", "RtxQ had every SACK been an NR-SACK (bytes)", base.DEC, nil, nil,
        "After this packet: the SACK-semantics queue minus the gap-acked bytes, the queue had every SACK been an NR-SACK"),
    freed_bytes = ProtoField.uint32("nrsack.freed_bytes", "Freed beyond the cum ack (bytes)", base.DEC, nil, nil,
        "Bytes this ack reports non-renegable for the first time: what it lets the sender free beyond what the cumulative ack frees"),
    blocked = ProtoField.bool("nrsack.blocked", "Send buffer blocked", base.NONE, nil, nil,
        "After this packet the send buffer is full of sent data: with the sndbuf preference, no room for another full-size packet; without it, as estimated from the capture (nrsack.sndbuf.*); absent where the capture cannot tell"),
    sndbuf_bytes = ProtoField.uint32("nrsack.sndbuf.bytes", "Send buffer B (bytes)", base.DEC, nil, nil,
        "The B in payload bytes nrsack.blocked uses for this direction: the sndbuf preference, or the estimate where the capture shows the sender held back"),
    sndbuf_source = ProtoField.string("nrsack.sndbuf.source", "Send buffer B from", base.NONE,
        "How B was obtained: given (the sndbuf preference), estimated from the whole capture (second pass, or the flow ended), or estimated so far (one pass)"),
    sndbuf_verdict = ProtoField.string("nrsack.sndbuf.verdict", "Send buffer verdict", base.NONE,
        "Estimated B: the sender was held back by a full send buffer at times, never, or the capture cannot tell (then no frame is marked blocked)"),
    sndbuf_reason = ProtoField.string("nrsack.sndbuf.reason", "Send buffer evidence", base.NONE,
        "Estimated B: the waits for acks the verdict rests on, or why the capture cannot tell"),
    sndbuf_waits = ProtoField.uint32("nrsack.sndbuf.waits", "Send buffer waits", base.DEC, nil, nil,
        "Estimated B: the sender's waits for an ack that ended in new data, the evidence B is estimated from"),
    gap_open = ProtoField.bool("nrsack.gap_open", "Gap open", base.NONE, nil, nil,
        "The last ack of this direction reports a gap block above its cumulative ack: data is out of order at the receiver (loss recovery)"),
    revoked = ProtoField.uint32("nrsack.revoked", "Revoked TSN / byte", base.DEC, nil, nil,
        "A TSN, or the first byte of a range, that this ack revokes after an earlier ack reported it non-renegable"),
}
local hf_list = {}
for _, f in pairs(hf) do hf_list[#hf_list + 1] = f end

nrsack.prefs.sndbuf = Pref.uint("Send buffer (bytes)", 0,
    "Send buffer B in payload bytes for nrsack.blocked; 0 = estimated from the capture")
nrsack.prefs.tcp_exid = Pref.uint("TCP experiment ID", 0x4E52,
    "RFC 6994 ExID of the TCP NR-SACK options (kinds 253 and 254)")
nrsack.prefs.fsack_init_type = Pref.uint("FSACK-INIT chunk type", 0xA0, "SCTP chunk type of FSACK-INIT")
nrsack.prefs.fsack_ack_type = Pref.uint("FSACK-ACK chunk type", 0xA1, "SCTP chunk type of FSACK-ACK")
nrsack.prefs.fsack_complete_type = Pref.uint("FSACK-COMPLETE chunk type", 0xA2, "SCTP chunk type of FSACK-COMPLETE")
nrsack.prefs.sctp_udp_port = Pref.uint("SCTP over UDP port", 9899, "UDP port of SCTP encapsulation (RFC 6951)")
nrsack.prefs.max_open_flows = Pref.uint("Flows held open at most", 10000,
    "Past this many open flows the least recently active are finished early, those without data first; 0 = no bound")

-- The rule table of rules.md: ID, severity, group, whether a "cannot be decided" note variant exists,
-- summary (the label), description (docs/fields.md, the same text as the C plugin's).
local E = expert
local RULES = {
    {"NR-01", E.severity.ERROR, E.group.PROTOCOL, true, "NR-SACK without 0x10 in both INIT and INIT-ACK Supported Extensions",
        "An NR-SACK chunk is sent in an association where INIT and INIT-ACK did not both list 0x10 in Supported Extensions"},
    {"NR-02", E.severity.ERROR, E.group.PROTOCOL, false, "TSN in both an R and an NR gap block",
        "A TSN lies in both an R gap block and an NR gap block of the same NR-SACK"},
    {"NR-03", E.severity.ERROR, E.group.SEQUENCE, false, "NR-acked TSN revoked",
        "A TSN NR-acked earlier is neither cum-acked nor NR-acked by a later NR-SACK of the same direction"},
    {"NR-04", E.severity.WARN, E.group.SEQUENCE, true, "Retransmission of a TSN already NR-acked or cum-acked",
        "The data sender retransmits a TSN after it has received an NR-SACK or SACK that NR-acked or cum-acked it"},
    {"NR-05", E.severity.ERROR, E.group.MALFORMED, false, "Malformed NR-SACK / SACK gap blocks",
        "A gap block has Start < 2 or Start > End, the blocks of one list are not ascending or overlap, or the counts disagree with the chunk length"},
    {"NR-06", E.severity.WARN, E.group.PROTOCOL, false, "Plain SACK after NR-SACK was negotiated",
        "A plain SACK is sent after NR-SACK was negotiated"},
    {"NR-07", E.severity.NOTE, E.group.SEQUENCE, false, "Cumulative TSN ack moves backwards",
        "The cumulative TSN ack is lower than an earlier one of the same direction: a reordered or stale ack"},
    {"NR-08", E.severity.WARN, E.group.PROTOCOL, false, "Adjacent gap blocks should have been merged",
        "Two blocks of one list touch (End + 1 = next Start): legal to decode, but they should have been one block"},
    {"NR-09", E.severity.ERROR, E.group.SEQUENCE, true, "Ack covers a TSN never sent",
        "An ack (cum, R or NR block) covers a TSN that was never sent"},
    {"TN-01", E.severity.ERROR, E.group.PROTOCOL, true, "TCP NR-SACK blocks without NR-SACK-Permitted on SYN and SYN-ACK",
        "A TCP NR-SACK block option appears without NR-SACK-Permitted on both SYN and SYN-ACK"},
    {"TN-02", E.severity.ERROR, E.group.PROTOCOL, false, "Byte in both a SACK block and an NR-SACK block",
        "A byte lies in both a SACK block and an NR-SACK block of the same segment"},
    {"TN-03", E.severity.ERROR, E.group.SEQUENCE, false, "NR-acked bytes revoked",
        "Bytes NR-acked earlier are neither cum-acked nor NR-acked by a later ack of the same direction"},
    {"TN-04", E.severity.WARN, E.group.SEQUENCE, true, "Retransmission of bytes already NR-acked or cum-acked",
        "The data sender retransmits bytes after they were NR-acked or cum-acked"},
    {"TN-05", E.severity.ERROR, E.group.MALFORMED, false, "Malformed TCP NR-SACK option",
        "The NR-SACK option has a wrong length, a block with left >= right, or a block at or below the ack"},
    {"MN-01", E.severity.ERROR, E.group.PROTOCOL, true, "DSS NR blocks without MPTCP NR-SACK capability on SYN and SYN-ACK",
        "A DSS with flag N appears although the SYN and SYN-ACK of the initial subflow did not both carry NR-SACK-Permitted with flag 0x02"},
    {"MN-02", E.severity.ERROR, E.group.MALFORMED, false, "DSS flag N without DATA ACK, or count disagrees with length",
        "A DSS has flag N without a DATA ACK, or a block count that disagrees with the option length"},
    {"MN-03", E.severity.ERROR, E.group.SEQUENCE, false, "NR-acked data-level bytes revoked",
        "Data-level bytes NR-acked earlier are neither DATA-ACKed nor NR-acked by a later ack of the same direction"},
    {"MN-04", E.severity.WARN, E.group.SEQUENCE, true, "Data-level retransmission of bytes already NR-acked or DATA-ACKed",
        "The data sender sends data-level bytes again, on any subflow, after they were NR-acked or DATA-ACKed"},
    {"MN-05", E.severity.ERROR, E.group.MALFORMED, false, "Malformed MPTCP NR blocks",
        "An MPTCP NR block has Start >= End, or the blocks are not ascending or overlap"},
    {"FS-01", E.severity.ERROR, E.group.PROTOCOL, false, "FSACK-ACK timestamp never sent in an FSACK-INIT",
        "An FSACK-ACK carries a timestamp that no earlier FSACK-INIT of the association carried"},
    {"FS-02", E.severity.WARN, E.group.PROTOCOL, false, "FSACK-INIT answered on fewer return paths than receiver addresses",
        "An FSACK-INIT is answered on fewer return paths than the receiver has addresses"},
    {"FS-03", E.severity.WARN, E.group.PROTOCOL, false, "FSACK-COMPLETE names a path other than the first FSACK-ACK's",
        "FSACK-COMPLETE names a path other than the one whose FSACK-ACK arrived first"},
    {"FS-04", E.severity.ERROR, E.group.PROTOCOL, false, "SACK sent off the FSACK path",
        "After FSACK-COMPLETE, the receiver sends a SACK or NR-SACK on a path other than the FSACK path"},
    {"FS-05", E.severity.WARN, E.group.SEQUENCE, false, "FSACK path not updated within the maximum update interval",
        "During data transfer the FSACK path is not confirmed or updated within the maximum update interval (1 s by default)"},
    {"FS-06", E.severity.ERROR, E.group.PROTOCOL, true, "FSACK chunks without 0xA0 in both INIT and INIT-ACK Supported Extensions",
        "FSACK chunks are sent although INIT and INIT-ACK did not both list 0xA0 in Supported Extensions"},
    {"GEN-01", E.severity.ERROR, E.group.MALFORMED, false, "Malformed packet prevents analysis",
        "A truncated chunk or a bad length prevents analysis of the packet; analysis continues with the next packet"},
}

local rule_expert = {}      -- "NR-03" -> ProtoExpert
local rule_note_expert = {} -- "NR-01" -> ProtoExpert of the note variant
do
    local experts = {}
    for _, r in ipairs(RULES) do
        local id, severity, group, has_note, summary, description = r[1], r[2], r[3], r[4], r[5], r[6]
        local compact = id:gsub("-", "")
        -- ProtoExpert.new takes no description, so its field lists none in `tshark -G fields`. A
        -- ProtoField.none of the same name, label and a description is registered first and listed
        -- instead (decisions.md 68); it is never added to a tree, so packets carry the expert's field.
        local function expert_field(abbr, label, level)
            hf_list[#hf_list + 1] = ProtoField.none(abbr, label, description)
            experts[#experts + 1] = ProtoExpert.new(abbr, label, group, level)
            return experts[#experts]
        end
        rule_expert[id] = expert_field("nrsack.rule." .. compact, id .. ": " .. summary, severity)
        if has_note then
            rule_note_expert[id] = expert_field("nrsack.rule." .. compact .. ".note",
                id .. ": " .. summary .. " (cannot be decided from this capture)", E.severity.NOTE)
        end
    end
    nrsack.fields = hf_list
    nrsack.experts = experts
end

------------------------------------------------------------------------------------------------
-- Byte reading over a Lua string (TvbRange:raw()); offsets are 0-based like the wire spec.
------------------------------------------------------------------------------------------------

local sbyte = string.byte

local function u8(s, off) return sbyte(s, off + 1) end
local function u16(s, off)
    local a, b = sbyte(s, off + 1, off + 2)
    return a * 256 + b
end
local function u32(s, off)
    local a, b, c, d = sbyte(s, off + 1, off + 4)
    return ((a * 256 + b) * 256 + c) * 256 + d
end

------------------------------------------------------------------------------------------------
-- The scoreboard core: a line-by-line translation of core/ (nrsack_core.h, serial.c, iset.c,
-- scoreboard.c) with the same names (docs/scoreboard.md). Serials are doubles, exact below 2^53:
-- unwrapped 32-bit values stay near 2^32 and MPTCP's 64-bit DSNs are made relative to their
-- direction's first one (wide_serial), so no value comes near 2^53; a UInt64 per serial would cost an
-- allocation per number on every packet. An ival is {lo, hi}, [lo, hi); an iset keeps its intervals
-- in two parallel arrays lo[1..n], hi[1..n] (no table per interval).
------------------------------------------------------------------------------------------------

-- What the rest of the file uses of the core; its helpers stay inside the block (Lua allows 200
-- locals a function, the main chunk included).
local SERIAL_ORIGIN, SERIAL_FAR, SERIAL_OK, SERIAL_FAR_AWAY, SB_TSN_WINDOW, REVOKE_NONE, REVOKE_ALL, REVOKE_IN_SPAN
local nearest, serial_anchor, serial_unwrap, serial_take64, sb_init, sb_copy, sb_data_facts_new, sb_data, sb_ack_facts_new, sb_ack, sb_received, sb_figures, sb_blocked, sb_bytes, sctp_gap_block
do
SERIAL_ORIGIN = TWO32
SERIAL_FAR = 1073741824 -- 2^30
SERIAL_OK, SERIAL_FAR_AWAY = 0, 1
SB_TSN_WINDOW = 1048576 -- 2^20
local SB_MAX_REPORTED = 16

-- ---- serial numbers ----

local function serial_space_new() return {anchored = false, highest = 0, candidate_set = false, candidate = 0} end

function nearest(reference, v)
    local delta = (v - reference) % TWO32
    if delta >= TWO31 then delta = delta - TWO32 end
    return reference + delta
end

local function distance(a, b) return a > b and a - b or b - a end

function serial_anchor(s, initial)
    if not s.anchored then
        s.anchored = true
        s.highest = SERIAL_ORIGIN + initial
    else
        s.highest = nearest(s.highest, initial)
    end
    s.candidate_set = false
end

-- The far guard on x, a serial of s's space (y: the same wire value seen from the candidate);
-- serials never go below 0 (nor, as C's unsigned ones wrap there, to 2^63). -> status, serial
local TWO63 = 2 ^ 63
local SERIAL_WIDE_LIMIT = 2 ^ 53
local function guard(s, x, y)
    if x >= 0 and x < TWO63 and distance(x, s.highest) <= SERIAL_FAR then
        s.candidate_set = false
        if x > s.highest then s.highest = x end
        return SERIAL_OK, x
    end
    if s.candidate_set and y >= 0 and y < TWO63 and distance(y, s.candidate) <= SERIAL_FAR then
        -- confirmed: the space jumped, in either direction
        s.candidate_set = false
        s.highest = y
        return SERIAL_OK, y
    end
    s.candidate_set = x >= 0 and x < TWO63
    s.candidate = x
    return SERIAL_FAR_AWAY, x
end

-- -> status, serial
function serial_unwrap(s, v)
    if not s.anchored then
        serial_anchor(s, v)
        return SERIAL_OK, s.highest
    end
    return guard(s, nearest(s.highest, v), s.candidate_set and nearest(s.candidate, v) or 0)
end

-- -> status, serial
function serial_take64(s, v)
    if not s.anchored then
        s.anchored = true
        s.highest = v
        s.candidate_set = false
        return SERIAL_OK, v
    end
    if v >= SERIAL_WIDE_LIMIT then -- far, never a candidate: beyond the doubles' exact range (core/serial.c)
        s.candidate_set = false
        return SERIAL_FAR_AWAY, v
    end
    return guard(s, v, v)
end

-- ---- TSN weights: size[i] is TSN base + i (i from 0) ----

local function weights_new() return {base = 0, size = {}, n = 0} end

local function weights_sum(w, lo, hi)
    if not w then return hi > lo and hi - lo or 0 end
    if lo < w.base then lo = w.base end
    if hi > w.base + w.n then hi = w.base + w.n end
    local sum, size, base = 0, w.size, w.base
    for t = lo, hi - 1 do sum = sum + size[t - base] end
    return sum
end

local function weights_set(w, unit, size)
    if w.n == 0 then w.base = unit end
    local sz = w.size
    if unit < w.base then
        -- grow downwards by at least the table's length, so a run of ever lower TSNs moves it
        -- O(log) times (a receiver-side capture whose first DATA was lost)
        local down = w.base - unit
        if down < w.n then down = w.n end
        if down > w.base then down = w.base end
        for i = w.n - 1, 0, -1 do sz[i + down] = sz[i] end
        for i = 0, down - 1 do sz[i] = 0 end
        w.n = w.n + down
        w.base = w.base - down
    elseif unit - w.base >= w.n then
        local need = unit - w.base + 1
        for i = w.n, need - 1 do sz[i] = 0 end
        w.n = need
    end
    sz[unit - w.base] = size
end

local function weights_drop_below(w, cut)
    if cut <= w.base then return end
    if cut - w.base >= w.n then
        w.n = 0
        w.base = cut
        w.size = {}
        return
    end
    local drop = cut - w.base
    if drop * 2 < w.n then return end -- moved when half of it is dead: amortized O(1) per TSN
    local old, new = w.size, {}
    for i = drop, w.n - 1 do new[i - drop] = old[i] end
    w.size = new
    w.n = w.n - drop
    w.base = cut
end

local function weights_copy(src)
    local dst = weights_new()
    for i = 0, src.n - 1 do dst.size[i] = src.size[i] end
    dst.n, dst.base = src.n, src.base
    return dst
end

-- ---- interval sets ----

local function iset_new() return {lo = {}, hi = {}, n = 0, units = 0, weight = 0} end

local function iset_copy(src)
    local dst = iset_new()
    for i = 1, src.n do dst.lo[i], dst.hi[i] = src.lo[i], src.hi[i] end
    dst.n, dst.units, dst.weight = src.n, src.units, src.weight
    return dst
end

-- appends [lo, hi) to a set used as a plain vector (units and weight not kept)
local function push(out, lo, hi)
    local n = out.n + 1
    out.lo[n], out.hi[n], out.n = lo, hi, n
end

-- The first interval with hi >= x (touching x counts); n + 1 when none.
local function first_reaching(s, x)
    local a, b = 1, s.n + 1
    local hi = s.hi
    while a < b do
        local m = a + b
        m = (m - m % 2) / 2
        if hi[m] < x then a = m + 1 else b = m end
    end
    return a
end

-- Adds [lo, hi); returns the weight newly covered.
local function iset_add(s, lo, hi, w)
    if lo >= hi then return 0 end
    local L, H, n = s.lo, s.hi, s.n
    local i = first_reaching(s, lo)
    local j = i
    local new_lo, new_hi, next, units, weight = lo, hi, lo, 0, 0 -- next: first unit not looked at
    while j <= n and L[j] <= hi do
        if L[j] > next then units = units + (L[j] - next); weight = weight + weights_sum(w, next, L[j]) end
        if H[j] > next then next = H[j] end
        if L[j] < new_lo then new_lo = L[j] end
        if H[j] > new_hi then new_hi = H[j] end
        j = j + 1
    end
    if next < hi then units = units + (hi - next); weight = weight + weights_sum(w, next, hi) end
    if j == i then
        for k = n, i, -1 do L[k + 1], H[k + 1] = L[k], H[k] end
        n = n + 1
    elseif j > i + 1 then
        local gone = j - i - 1
        for k = j, n do L[k - gone], H[k - gone] = L[k], H[k] end
        for k = n - gone + 1, n do L[k], H[k] = nil, nil end
        n = n - gone
    end
    L[i], H[i] = new_lo, new_hi
    s.n = n
    s.units = s.units + units
    s.weight = s.weight + weight
    return weight
end

-- Below this many intervals a batch joins one by one (binary search, usually no move).
local MERGE_WALK_FROM = 16

-- Adds the sorted, disjoint intervals of vector v (ivals_normalize's output); returns the weight
-- newly covered.
local function iset_union(s, v, w)
    local n = v.n
    local VL, VH = v.lo, v.hi
    if n < MERGE_WALK_FROM then
        local added = 0
        for k = 1, n do added = added + iset_add(s, VL[k], VH[k], w) end
        return added
    end
    local L, H, sn = s.lo, s.hi, s.n
    -- the newly covered parts: v minus s, both sorted
    local units, weight, i = 0, 0, 1
    for k = 1, n do
        local x, vhi = VL[k], VH[k]
        while i <= sn and H[i] <= x do i = i + 1 end
        local m = i
        while m <= sn and L[m] < vhi and x < vhi do
            if L[m] > x then units = units + (L[m] - x); weight = weight + weights_sum(w, x, L[m]) end
            if H[m] > x then x = H[m] end
            m = m + 1
        end
        if x < vhi then units = units + (vhi - x); weight = weight + weights_sum(w, x, vhi) end
    end
    -- the union, merged into new arrays
    local OL, OH = {}, {}
    local a, b, m = 1, 1, 0
    while a <= sn or b <= n do
        local lo, hi
        if b > n or (a <= sn and L[a] <= VL[b]) then
            lo, hi = L[a], H[a]
            a = a + 1
        else
            lo, hi = VL[b], VH[b]
            b = b + 1
        end
        if m > 0 and OH[m] >= lo then
            if hi > OH[m] then OH[m] = hi end
        else
            m = m + 1
            OL[m], OH[m] = lo, hi
        end
    end
    s.lo, s.hi, s.n = OL, OH, m
    s.units = s.units + units
    s.weight = s.weight + weight
    return weight
end

-- Drops every unit below cut; returns the weight dropped.
local function iset_trim_below(s, cut, w)
    local L, H, n = s.lo, s.hi, s.n
    local whole, weight = 0, 0
    local k = 1
    while k <= n and L[k] < cut do
        local hi = H[k] < cut and H[k] or cut
        s.units = s.units - (hi - L[k])
        weight = weight + weights_sum(w, L[k], hi)
        if H[k] > cut then L[k] = cut else whole = whole + 1 end
        k = k + 1
    end
    if whole > 0 then
        for m = whole + 1, n do L[m - whole], H[m - whole] = L[m], H[m] end
        for m = n - whole + 1, n do L[m], H[m] = nil, nil end
        s.n = n - whole
    end
    s.weight = s.weight - weight
    return weight
end

local function iset_overlaps(s, lo, hi)
    local i = first_reaching(s, lo + 1) -- the first interval ending after lo
    return lo < hi and i <= s.n and s.lo[i] < hi
end

local function iset_covers(s, lo, hi)
    if lo >= hi then return true end
    local i = first_reaching(s, hi)
    return i <= s.n and s.lo[i] <= lo
end

local function by_lo(x, y) return x[1] < y[1] end

-- Sorts vector v by lo and merges overlapping or touching intervals, dropping empty ones.
local function ivals_normalize(v)
    local L, H, n = v.lo, v.hi, v.n
    local sorted = true
    for k = 2, n do
        if L[k - 1] > L[k] then sorted = false; break end
    end
    if not sorted then -- hostile input only: a table per interval is fine here
        local pairs_ = {}
        for k = 1, n do pairs_[k] = {L[k], H[k]} end
        table.sort(pairs_, by_lo)
        for k = 1, n do L[k], H[k] = pairs_[k][1], pairs_[k][2] end
    end
    local m = 0
    for k = 1, n do
        if L[k] < H[k] then
            if m > 0 and H[m] >= L[k] then
                if H[k] > H[m] then H[m] = H[k] end
            else
                m = m + 1
                L[m], H[m] = L[k], H[k]
            end
        end
    end
    for k = m + 1, n do L[k], H[k] = nil, nil end
    v.n = m
end

-- Appends to vector out s's parts inside the sorted intervals of vector v, in order.
local function iset_clip(s, v, out)
    local L, H, n = s.lo, s.hi, s.n
    for k = 1, v.n do
        local vlo, vhi = v.lo[k], v.hi[k]
        local i = first_reaching(s, vlo + 1)
        while i <= n and L[i] < vhi do
            local lo = L[i] > vlo and L[i] or vlo
            local hi = H[i] < vhi and H[i] or vhi
            if lo < hi then push(out, lo, hi) end
            i = i + 1
        end
    end
end

-- ---- the scoreboard ----

REVOKE_NONE, REVOKE_ALL, REVOKE_IN_SPAN = 0, 1, 2
local WORK_R, WORK_NR, WORK_ALL, WORK_CLIP = 1, 2, 3, 4

local function weights_of(sb) return sb.tsn_units and sb.weights or nil end

do
-- The scratch sets of sb_ack and sb_received, refilled by every call: one for all scoreboards, since a flood
-- of flows holds thousands of scoreboards open (decisions.md 84).
local work = {iset_new(), iset_new(), iset_new(), iset_new()}
function sb_init(tsn_units)
    return {
        tsn_units = tsn_units, space = serial_space_new(), have_data = false, cum_known = false,
        cum = 0, snd_max = 0, lowest = 0, sent = iset_new(), sacked = iset_new(), nracked = iset_new(),
        weights = weights_new(), gap_open = false, news_known = false, news_path = 0, data_bytes = 0, acked_bytes = 0,
        last_revoked = iset_new(), work = work,
    }
end
end

-- dst becomes a copy of src (keep_data false: only the ack state, cum and gap_open).
function sb_copy(src, keep_data)
    local dst = sb_init(src.tsn_units)
    local sp = src.space
    dst.space = {anchored = sp.anchored, highest = sp.highest, candidate_set = sp.candidate_set, candidate = sp.candidate}
    dst.cum_known, dst.cum, dst.gap_open = src.cum_known, src.cum, src.gap_open
    dst.news_known, dst.news_path = src.news_known, src.news_path
    if not keep_data then return dst end
    dst.have_data, dst.snd_max, dst.lowest = src.have_data, src.snd_max, src.lowest
    dst.data_bytes, dst.acked_bytes = src.data_bytes, src.acked_bytes
    dst.sent, dst.sacked, dst.nracked = iset_copy(src.sent), iset_copy(src.sacked), iset_copy(src.nracked)
    dst.weights = weights_copy(src.weights)
    return dst
end

-- TSN mode: the weights table spans at most SB_TSN_WINDOW TSNs, from the cum ack (before any ack:
-- the lowest TSN seen, so it may grow downwards) to the highest TSN sent.
local function in_window(sb, lo, hi)
    if sb.cum_known then return lo < sb.cum or hi - sb.cum <= SB_TSN_WINDOW end
    if not sb.have_data then return true end
    local low = lo < sb.lowest and lo or sb.lowest
    local high = hi > sb.snd_max and hi or sb.snd_max
    return high - low <= SB_TSN_WINDOW
end

function sb_data_facts_new()
    return {out_of_window = false, below_cum = false, was_nracked = false, retransmission = false,
            new_units = 0, new_bytes = 0}
end

-- A transmission of [lo, hi): TCP / MPTCP bytes, or one TSN [tsn, tsn + 1) weighing tsn_size.
function sb_data(sb, lo, hi, tsn_size, f)
    f.out_of_window, f.below_cum, f.was_nracked, f.retransmission, f.new_units, f.new_bytes =
        false, false, false, false, 0, 0
    if lo >= hi then return end
    if sb.tsn_units and not in_window(sb, lo, hi) then
        f.out_of_window = true
        return
    end
    f.below_cum = sb.cum_known and lo < sb.cum
    f.was_nracked = iset_overlaps(sb.nracked, lo, hi)
    local from = (sb.cum_known and sb.cum > lo) and sb.cum or lo
    if from < hi then
        if sb.tsn_units then -- the first captured transmission of a TSN fixes its weight
            for t = from, hi - 1 do
                if not iset_covers(sb.sent, t, t + 1) then weights_set(sb.weights, t, tsn_size) end
            end
        end
        local units = sb.sent.units
        f.new_bytes = iset_add(sb.sent, from, hi, weights_of(sb))
        f.new_units = sb.sent.units - units
    end
    f.retransmission = f.new_units == 0
    sb.data_bytes = sb.data_bytes + f.new_bytes
    if not sb.have_data or lo < sb.lowest then sb.lowest = lo end
    if not sb.have_data or hi > sb.snd_max then sb.snd_max = hi end
    sb.have_data = true
end

-- Copies blocks (a list of {lo, hi}) into a scratch vector, sorted and merged.
local function normalized(out, v)
    local L, H = out.lo, out.hi
    for k = 1, #v do L[k], H[k] = v[k][1], v[k][2] end
    for k = #v + 1, out.n do L[k], H[k] = nil, nil end
    out.n = #v
    ivals_normalize(out)
end

local function meet(a, b)
    local i, j = 1, 1
    while i <= a.n and j <= b.n do
        if a.hi[i] <= b.lo[j] then i = i + 1
        elseif b.hi[j] <= a.lo[i] then j = j + 1
        else return true end
    end
    return false
end

local function note_revoked(f, lo, hi)
    if f.n_revoked < SB_MAX_REPORTED then f.revoked[f.n_revoked + 1] = {lo, hi} end
    f.n_revoked = f.n_revoked + 1
    f.revoked_units = f.revoked_units + (hi - lo)
end

local function clear(v)
    for k = 1, v.n do v.lo[k], v.hi[k] = nil, nil end
    v.n, v.units, v.weight = 0, 0, 0
end

-- Revoked: NR-acked units inside what the ack claims to report that its NR blocks leave out.
local function find_revoked(sb, revoke, f)
    local R, N = sb.work[WORK_R], sb.work[WORK_NR]
    local claimed, inside, out = sb.work[WORK_ALL], sb.work[WORK_CLIP], sb.last_revoked
    clear(claimed)
    clear(inside)
    if revoke == REVOKE_ALL then
        iset_clip(sb.nracked, {lo = {sb.cum}, hi = {math.huge}, n = 1}, inside)
    else
        for k = 1, R.n do iset_add(claimed, R.lo[k], R.hi[k], nil) end
        if N.n > 0 then iset_add(claimed, N.lo[1], N.hi[N.n], nil) end
        iset_clip(sb.nracked, claimed, inside)
    end
    local j = 1 -- inside minus N, both sorted
    for k = 1, inside.n do
        local x, hi = inside.lo[k], inside.hi[k]
        while j <= N.n and N.hi[j] <= x do j = j + 1 end
        local m = j
        while m <= N.n and N.lo[m] < hi and x < hi do
            if N.lo[m] > x then
                iset_add(out, x, N.lo[m], nil)
                note_revoked(f, x, N.lo[m])
            end
            if N.hi[m] > x then x = N.hi[m] end
            m = m + 1
        end
        if x < hi then
            iset_add(out, x, hi, nil)
            note_revoked(f, x, hi)
        end
    end
end

-- Joins blocks (sorted), clipped to sent, to `into`; returns the weight newly covered.
local function join_clipped(sb, into, blocks)
    local clip = sb.work[WORK_CLIP]
    clear(clip)
    iset_clip(sb.sent, blocks, clip)
    return iset_union(into, clip, weights_of(sb))
end

function sb_ack_facts_new()
    return {stale = false, older = false, beyond_sent = false, r_and_nr = false, gap_open = false, freed_units = 0,
            freed_bytes = 0, acked_units = 0, n_revoked = 0, revoked_units = 0, revoked = {}}
end

-- A SACK / NR-SACK / TCP SACK and NR options / MPTCP DSS: r and nr are lists of {lo, hi}, maybe
-- unsorted or overlapping. path: any value equal for the acks of one path (CMT: address pair, MPTCP:
-- subflow; one path: 0).
function sb_ack(sb, cum, r, nr, revoke, path, f)
    f.stale, f.older, f.beyond_sent, f.r_and_nr, f.gap_open = false, false, false, false, false
    f.freed_units, f.freed_bytes, f.acked_units, f.n_revoked, f.revoked_units = 0, 0, 0, 0, 0
    for k = 1, #f.revoked do f.revoked[k] = nil end
    clear(sb.last_revoked)
    local R, N, all = sb.work[WORK_R], sb.work[WORK_NR], sb.work[WORK_ALL]
    normalized(R, r)
    normalized(N, nr)
    f.r_and_nr = meet(R, N)
    if sb.have_data then
        f.beyond_sent = cum > sb.snd_max or (R.n > 0 and R.hi[R.n] > sb.snd_max)
            or (N.n > 0 and N.hi[N.n] > sb.snd_max)
    end
    f.stale = sb.cum_known and cum < sb.cum
    local news = not sb.cum_known or cum > sb.cum
    if not f.stale and news then
        f.acked_units = sb.cum_known and cum - sb.cum or 0
        local w = weights_of(sb)
        iset_trim_below(sb.sacked, cum, w)
        iset_trim_below(sb.nracked, cum, w)
        sb.acked_bytes = sb.acked_bytes + iset_trim_below(sb.sent, cum, w) -- last: the weights go next
        if sb.tsn_units then weights_drop_below(sb.weights, cum) end
        sb.cum = cum
        sb.cum_known = true
    end
    -- R and NR blocks together join sacked (before the revocation test: a unit not sacked before is news)
    clear(all)
    for k = 1, R.n do push(all, R.lo[k], R.hi[k]) end
    for k = 1, N.n do push(all, N.lo[k], N.hi[k]) end
    if N.n > 0 then ivals_normalize(all) end
    local sacked_units = sb.sacked.units
    join_clipped(sb, sb.sacked, all)
    news = news or sb.sacked.units > sacked_units
    if not f.stale then
        -- Acks of one path arrive in the order they were sent; across paths the capture cannot order
        -- two acks of the same cum. One that tells nothing new, on another path than the last ack
        -- that did, may have been sent before it (rules.md NR-03): it judges no revocation.
        f.older = not news and sb.news_known and path ~= sb.news_path
        if news then sb.news_path, sb.news_known = path, true end
        sb.gap_open = (R.n > 0 and R.hi[R.n] > cum) or (N.n > 0 and N.hi[N.n] > cum)
        if revoke ~= REVOKE_NONE and not f.older then find_revoked(sb, revoke, f) end
    end
    f.gap_open = sb.gap_open
    local nr_units = sb.nracked.units -- the NR blocks join nracked
    f.freed_bytes = join_clipped(sb, sb.nracked, N)
    f.freed_units = sb.nracked.units - nr_units
end

-- Units known received above cum without a block (MPTCP subflow acks, decisions 12): a list of
-- {lo, hi}.
function sb_received(sb, r)
    local R = sb.work[WORK_R]
    normalized(R, r)
    join_clipped(sb, sb.sacked, R)
end

function sb_figures(sb, f)
    f.rtxq_sack = sb.sent.weight
    f.sacked = sb.sacked.weight
    f.nr_acked = sb.nracked.weight
    f.rtxq_nr = f.rtxq_sack - f.nr_acked
    f.rtxq_whatif = f.rtxq_sack - f.sacked
    f.units_sack = sb.sent.units
    f.units_sacked = sb.sacked.units
    f.units_nr = sb.nracked.units
end

-- metrics.md: B - rtxq < S, with rtxq_nr when NR-SACK is in use (decisions 7), else rtxq_sack.
function sb_blocked(f, sndbuf, full_packet, nr_in_use)
    local rtxq = nr_in_use and f.rtxq_nr or f.rtxq_sack
    return rtxq + full_packet > sndbuf
end

-- Bytes of [lo, hi) (TSN mode: the sizes of the TSNs in the window).
function sb_bytes(sb, lo, hi) return weights_sum(weights_of(sb), lo, hi) end

-- SCTP gap block (start, end offsets from the cum TSN ack) -> TSNs [cum_tsn + start, cum_tsn + end + 1);
-- an inverted block comes out empty and sb_ack ignores it.
function sctp_gap_block(cum_tsn, start, stop) return {cum_tsn + start, cum_tsn + stop + 1} end
end

------------------------------------------------------------------------------------------------
-- The send buffer B from the capture alone: a line-by-line translation of core/sndbuf.c (sbe_*, the
-- estimator the C plugin and the analyzer link), names kept, in one table (the main chunk's locals are
-- few). tests/test_plugin_sndbuf.py holds it to the core on the sample captures and lab runs.
------------------------------------------------------------------------------------------------

local sbe = {SACK = 0, NR = 1, HELD_BACK = 0, NEVER = 1, CANNOT_TELL = 2,
             CEILING = 0, LONG_WAITS = 1, ONE_FLIGHT = 2, ANSWERED = 3, NO_DATA = 4, FEW_WAITS = 5, UNSETTLED = 6,
             DATA_LEVEL = 7, PATHS_TOP_BRIEF = 8, SETTLED_CEILING = 9, NO_PILE = 10,
             NOT_BY_SENDER = 11, PATHS_TOP_HELD = 12, PATHS_UNTIMED = 13, PATHS_TOP_ONCE = 14, LEFT_CEILING = 15,
             ONE_PATH = 0, A_PATH_OF_SEVERAL = 1, MPTCP_DATA_LEVEL = 2, CMT_ASSOCIATION = 3, TCP_CONNECTION = 4,
             LEVEL_PATH = 0, LEVEL_CMT = 1, LEVEL_MPTCP = 2, LEVEL_PACED = 3}
do
local BIN, MIN_WAITS, LONG_WAIT, SIZES, CEILING_BAND, MPTCP_BAND = 64, 16, 3, 33, 1, 2
local PACED_NS = 50000 -- a wait ended paced: its new data this long or more after the last freeing ack
local floor = math.floor

-- a levels vector: bins ascending, bin[k], waits[k], top[k] (the highest RtxQ seen in the bin), wait_ns[k] (the
-- waits' time, each to its last freeing ack), longest_ns[k] (the longest of them), last[k] (the ordinal of its last
-- wait in the levels), 1..n
local function levels_new()
    return {bin = {}, waits_of = {}, top = {}, wait_ns = {}, longest_ns = {}, last = {}, n = 0, waits = 0}
end

-- An estimator's levels are made at their first wait, and its packet sizes counted per power of two seen:
-- a flood's flows mostly never wait, and a flow held open is most of the heap (decisions.md 84); until
-- then the levels read as sbe.NO_LEVELS, no wait.
sbe.NO_LEVELS = levels_new()
function sbe.new()
    local none = sbe.NO_LEVELS
    return {all = {[0] = none, [1] = none}, held = {[0] = none, [1] = none}, settled = {[0] = none, [1] = none},
            record = {[0] = 0, [1] = 0}, deep = {[0] = none, [1] = none}, after_new = {[0] = 0, [1] = 0},
            size_count = {}, size_sum = {}, acks = 0, sent_new = false, gap_seen = false, gap_ever = false,
            first_new_ns = 0, new_at_ns = 0, freed_at_ns = 0, ended = 0, ended_paced = 0}
end

-- A wait counted in levels group[k].
local function count_wait(group, k, level, waited_ns)
    local l = group[k]
    if l == sbe.NO_LEVELS then
        l = levels_new()
        group[k] = l
    end
    local bin = floor(level / BIN)
    local lo, hi = 1, l.n + 1 -- the first bin >= bin
    while lo < hi do
        local mid = floor((lo + hi) / 2)
        if l.bin[mid] < bin then lo = mid + 1 else hi = mid end
    end
    if lo > l.n or l.bin[lo] ~= bin then
        table.insert(l.bin, lo, bin)
        table.insert(l.waits_of, lo, 0)
        table.insert(l.top, lo, level)
        table.insert(l.wait_ns, lo, 0)
        table.insert(l.longest_ns, lo, 0)
        table.insert(l.last, lo, 0)
        l.n = l.n + 1
    end
    l.waits_of[lo] = l.waits_of[lo] + 1
    l.wait_ns[lo] = l.wait_ns[lo] + waited_ns
    if waited_ns > l.longest_ns[lo] then l.longest_ns[lo] = waited_ns end
    if level > l.top[lo] then l.top[lo] = level end
    l.waits = l.waits + 1
    l.last[lo] = l.waits
end

function sbe.new_data(e, rtxq_sack, rtxq_nr, bytes, now_ns)
    if e.sent_new and e.acks > 0 then -- a wait for an ack ended in new data: it began at after_new
        local long_wait = e.acks >= LONG_WAIT and not e.gap_seen
        -- to its last freeing ack: the ack resumes a writer on a full buffer (core/sndbuf.c sbe_new_data)
        local waited = e.freed_at_ns > e.new_at_ns and e.freed_at_ns - e.new_at_ns or 0
        e.ended = e.ended + 1
        if now_ns - e.freed_at_ns >= PACED_NS then e.ended_paced = e.ended_paced + 1 end
        for k = 0, 1 do
            local rtxq = k == sbe.SACK and rtxq_sack or rtxq_nr
            local before = rtxq > bytes and rtxq - bytes or 0
            -- deep: a quarter of the level acked before new data left
            if long_wait and e.after_new[k] > before and (e.after_new[k] - before) * 4 >= e.after_new[k] then
                count_wait(e.deep, k, e.after_new[k], waited)
            end
            count_wait(e.all, k, e.after_new[k], waited)
            if long_wait then count_wait(e.held, k, e.after_new[k], waited) end
            if e.after_new[k] > e.record[k] then -- a new highest level: what came before is a transient
                e.record[k] = e.after_new[k]
                e.settled[k] = sbe.NO_LEVELS
            else
                count_wait(e.settled, k, e.after_new[k], waited)
            end
        end
    end
    local power = 0
    while power < SIZES - 1 and bytes >= 2 ^ (power + 1) do power = power + 1 end
    e.size_count[power] = (e.size_count[power] or 0) + 1
    e.size_sum[power] = (e.size_sum[power] or 0) + bytes
    e.after_new[0], e.after_new[1] = rtxq_sack, rtxq_nr
    if not e.sent_new then e.first_new_ns = now_ns end
    e.new_at_ns = now_ns
    e.sent_new, e.acks, e.gap_seen = true, 0, false
end

function sbe.freeing_ack(e, gap_open, now_ns)
    if not e.sent_new then return end
    e.acks = e.acks + 1
    e.freed_at_ns = now_ns
    e.gap_seen = e.gap_seen or gap_open
    e.gap_ever = e.gap_ever or gap_open
end

-- Waits whose level is in [lo, hi].
local function waits_within(l, lo, hi)
    local count = 0
    for k = 1, l.n do
        if l.top[k] >= lo and l.top[k] <= hi then count = count + l.waits_of[k] end
    end
    return count
end

local function median_level(l)
    local seen = 0
    for k = 1, l.n do
        seen = seen + l.waits_of[k]
        if seen * 2 >= l.waits then return l.top[k] end
    end
    return 0
end

-- Waits within a packet below the level of bin k, the highest of them (a ceiling's or a pile's band), their
-- time, the ordinal of the band's last wait, and the longest wait's time.
local function band_waits(l, k, packet)
    local x = l.top[k]
    local lowest = x > packet and x - packet or 0
    local count, ns, latest, longest = 0, 0, 0, 0
    local j = k
    while j >= 1 and l.top[j] >= lowest do
        count = count + l.waits_of[j]
        ns = ns + l.wait_ns[j]
        if l.longest_ns[j] > longest then longest = l.longest_ns[j] end
        if l.last[j] > latest then latest = l.last[j] end
        j = j - 1
    end
    return count, ns, latest, longest
end

-- The most waits within a packet below one level, of the levels under `limit`.
local function fullest_band_under(l, limit, packet)
    local most, count, lowest = 0, 0, 1
    local j = 1
    while j <= l.n and l.top[j] < limit do
        count = count + l.waits_of[j]
        while l.top[lowest] + packet < l.top[j] do
            count = count - l.waits_of[lowest]
            lowest = lowest + 1
        end
        if count > most then most = count end
        j = j + 1
    end
    return most
end

-- A ceiling: the highest level x with at least `percent` % of the waits of `l` within a packet below it, at
-- most 10 % above it, and more than any band of a packet below it (a window growing a packet per round trip
-- spends its waits on the way up: its highest band ends a slope that holds more further down). r.packet
-- set; fills r and returns true and the waits of `l` after the band's last one when found.
local function find_ceiling(l, percent, r, why)
    local above = 0
    for k = l.n, 1, -1 do
        if above * 10 > l.waits then break end
        local x = l.top[k]
        local count, _, last = band_waits(l, k, r.packet)
        if count >= MIN_WAITS and count * 100 >= percent * l.waits and
            count > fullest_band_under(l, x > r.packet and x - r.packet or 0, r.packet) then
            r.verdict, r.why, r.sndbuf, r.high = sbe.HELD_BACK, why, x, x
            r.low = x > CEILING_BAND * r.packet and x - CEILING_BAND * r.packet or 0
            r.at_ceiling, r.above = count, above
            return true, l.waits - last
        end
        above = above + l.waits_of[k]
    end
    return false
end

-- A ceiling the sender left for good, as many waits after its last one as at it, and no loss recovery in the
-- whole flow: a window that shrank with no loss held it lower, and may have set the ceiling too. Cannot tell.
local function left_for_good(e, after, r)
    if e.gap_ever or after < r.at_ceiling then return end
    r.verdict, r.why, r.sndbuf = sbe.CANNOT_TELL, sbe.LEFT_CEILING, 0
end

-- The most waits within one packet below a level with at most a quarter of the waits above it.
local function fullest_band(l, packet)
    local most, above = 0, 0
    local k = l.n
    while k >= 1 and above * 4 <= l.waits do
        local count = band_waits(l, k, packet)
        if count > most then most = count end
        above = above + l.waits_of[k]
        k = k - 1
    end
    return most
end

function sbe.decide(e, nr, data_level)
    local all, held = e.all[nr and 1 or 0], e.held[nr and 1 or 0]
    local r = {verdict = sbe.CANNOT_TELL, why = 0, sndbuf = 0, low = 0, high = 0, waits = all.waits,
               long_waits = held.waits, at_ceiling = 0, above = 0, packet = 0, deep_waits = 0,
               level = sbe.LEVEL_PATH}
    local usual = 0 -- the usual packet: the mean size of the most common power of two
    local count = e.size_count
    for k = 1, SIZES - 1 do
        if (count[k] or 0) > (count[usual] or 0) then usual = k end
    end
    if (count[usual] or 0) > 0 then r.packet = floor(e.size_sum[usual] / count[usual]) end
    if not e.sent_new or r.packet == 0 then
        r.why = sbe.NO_DATA
        return r
    end
    if all.waits == 0 then
        r.verdict, r.why = sbe.NEVER, sbe.ONE_FLIGHT
        return r
    end
    if all.waits < MIN_WAITS then
        r.why = sbe.FEW_WAITS
        return r
    end
    if data_level then
        r.why = sbe.DATA_LEVEL
        return r
    end
    local found, after = find_ceiling(all, 30, r, sbe.CEILING)
    if found then
        left_for_good(e, after, r)
        return r
    end
    if held.waits >= MIN_WAITS / 2 and held.waits * 25 >= all.waits then
        local m = median_level(held)
        local near = waits_within(held, m - floor(m * 15 / 100), m + floor(m * 15 / 100))
        if near * 3 >= held.waits * 2 then
            r.verdict, r.why, r.sndbuf = sbe.HELD_BACK, sbe.LONG_WAITS, m
            r.low, r.high, r.at_ceiling = m - floor(m / 10), m + floor(m / 10), near
            return r
        end
    end
    local settled = e.settled[nr and 1 or 0]
    if settled.waits * 2 >= all.waits then
        found, after = find_ceiling(settled, 50, r, sbe.SETTLED_CEILING)
        if found then
            left_for_good(e, after, r)
            return r
        end
    end
    if held.waits * 50 <= all.waits then
        r.verdict, r.why = sbe.NEVER, sbe.ANSWERED
        return r
    end
    -- deep waits above the median level: a full buffer is the top of the waits
    local median = median_level(all)
    r.deep_waits = waits_within(e.deep[nr and 1 or 0], (floor(median / BIN) + 1) * BIN, math.huge)
    local fullest = fullest_band(all, r.packet)
    r.at_ceiling = fullest
    if r.deep_waits * 50 <= all.waits and fullest * 5 < all.waits then
        r.verdict, r.why = sbe.NEVER, sbe.NO_PILE
        return r
    end
    r.why = sbe.UNSETTLED
    return r
end

function sbe.blocked(r, rtxq_after_new, rtxq_now, gap_open, before_last_new)
    if r.verdict ~= sbe.HELD_BACK or not before_last_new or rtxq_after_new < r.low then return false end
    if (r.level == sbe.LEVEL_MPTCP or r.level == sbe.LEVEL_PACED) and rtxq_now < rtxq_after_new then return false end
    -- above a ceiling in loss recovery; not above long waits' band (it spans a tenth either side already)
    return rtxq_after_new <= r.high or (gap_open and r.why ~= sbe.LONG_WAITS)
end

-- CMT: usrsctp counts the association's whole queue in payload against its buffer, so the RtxQ never
-- exceeds the buffer and a buffer full of sent data is the highest level: the writer was held back at most
-- as long as the waits that began within a packet of the highest level lasted to their last freeing acks. A
-- twentieth of the span of the waits (first to last new data) or more: held back there (a window stalls at its
-- peak but briefly, for the new data after a loss rises above it); less: never (b is below a twentieth); no span (frames
-- without time): cannot tell. A twentieth or more only with the longest wait: cannot tell, for a window-limited
-- sender's timeout at its peak waits there as long as a full buffer (core/sndbuf.c top_of_association).
local function top_of_association(e, nr, packets, r)
    local all = e.all[nr and 1 or 0]
    local k = all.n -- waits were counted: the highest bin
    local x, band = all.top[k], packets * r.packet
    local span = e.new_at_ns > e.first_new_ns and e.new_at_ns - e.first_new_ns or 0
    local at, waited, _, longest = band_waits(all, k, band)
    local twentieth = floor(span / 20) + (span % 20 ~= 0 and 1 or 0)
    r.at_ceiling, r.above, r.deep_waits = at, 0, 0
    r.high = x
    r.low = x > band and x - band or 0
    if span == 0 then -- frames without time, or a clock set back: no twentieth to read
        r.verdict, r.why, r.sndbuf = sbe.CANNOT_TELL, sbe.PATHS_UNTIMED, 0
    elseif waited < twentieth then
        r.verdict, r.why, r.sndbuf = sbe.NEVER, sbe.PATHS_TOP_BRIEF, 0
    elseif waited - longest < twentieth then
        r.verdict, r.why, r.sndbuf = sbe.CANNOT_TELL, sbe.PATHS_TOP_ONCE, 0
    else
        r.verdict, r.why, r.sndbuf = sbe.HELD_BACK, sbe.PATHS_TOP_HELD, x
    end
end

function sbe.decide_paths(e, nr, paths)
    local r = sbe.decide(e, nr, paths == sbe.A_PATH_OF_SEVERAL)
    if paths == sbe.TCP_CONNECTION then
        -- a paced TCP sender sends what the writer copied after an ack freed room when its pacing timer fires:
        -- blocked ends at that ack (core/sndbuf.c sbe_decide_paths)
        if r.verdict == sbe.HELD_BACK and e.ended_paced * 2 >= e.ended then r.level = sbe.LEVEL_PACED end
        return r
    end
    if paths <= sbe.A_PATH_OF_SEVERAL or r.why == sbe.ONE_FLIGHT or r.why == sbe.NO_DATA or
        r.why == sbe.FEW_WAITS then
        return r
    end
    if paths == sbe.CMT_ASSOCIATION then
        r.level = sbe.LEVEL_CMT
        if r.why ~= sbe.CEILING then top_of_association(e, nr, CEILING_BAND, r) end
        return r
    end
    -- MPTCP: the connection's buffer counts payload, so its highest level's time tells, as CMT's, over two
    -- packets (the write that overshoots B, the packet below it), blocked until an ack frees room (what is
    -- written after it may wait unsent in the connection or a subflow)
    r.level = sbe.LEVEL_MPTCP
    top_of_association(e, nr, MPTCP_BAND, r)
    return r
end

function sbe.vantage(r, by_sender)
    if by_sender or r.why == sbe.ONE_FLIGHT then return end
    r.verdict, r.why = sbe.CANNOT_TELL, sbe.NOT_BY_SENDER
end

-- The connection level whose highest RtxQ top_of_association read, as its reasons name it.
local SBE_LEVEL_WORDS = {cmt = {name = "CMT", ack = "an ack", whose = "association's"},
                         mptcp = {name = "MPTCP", ack = "a data-level ack", whose = "connection's"}}

function sbe.reason(r, vantage)
    local why, fmt = r.why, string.format
    local level = r.level == sbe.LEVEL_MPTCP and SBE_LEVEL_WORDS.mptcp or SBE_LEVEL_WORDS.cmt
    if why == sbe.CEILING then
        return fmt("%d of %d waits for an ack began at an RtxQ of %d-%d bytes, %d above", r.at_ceiling, r.waits, r.low,
            r.high, r.above)
    elseif why == sbe.LONG_WAITS then
        return fmt("%d of %d waits for an ack outlasted %d acks, %d of them at an RtxQ of %d-%d bytes", r.long_waits,
            r.waits, LONG_WAIT, r.at_ceiling, r.low, r.high)
    elseif why == sbe.ONE_FLIGHT then return "all new data left before an ack freed room"
    elseif why == sbe.ANSWERED then
        return fmt("%d of %d waits for an ack ended within %d acks, at no ceiling", r.waits - r.long_waits, r.waits,
            LONG_WAIT - 1)
    elseif why == sbe.NO_DATA then return "no new data"
    elseif why == sbe.FEW_WAITS then return fmt("too short: %d waits for an ack, %d needed", r.waits, MIN_WAITS)
    elseif why == sbe.UNSETTLED then
        return fmt("%d of %d waits for an ack outlasted %d acks, at no settled RtxQ; %d of them above the median " ..
            "RtxQ until a quarter of their RtxQ was acked, up to %d within a packet of one RtxQ", r.long_waits,
            r.waits, LONG_WAIT, r.deep_waits, r.at_ceiling)
    elseif why == sbe.DATA_LEVEL then
        return "a path of data over several paths (MPTCP, CMT): the buffer they share holds the connection's data, " ..
            "see its entry"
    elseif why == sbe.PATHS_UNTIMED then
        return fmt("%s: %d of %d waits for %s began at the highest RtxQ, %d-%d bytes, but the capture's clock " ..
            "gives the waits no span to time them in", level.name, r.at_ceiling, r.waits, level.ack, r.low, r.high)
    elseif why == sbe.PATHS_TOP_ONCE and r.at_ceiling < 2 then
        return fmt("%s: only one wait at the highest RtxQ, %d-%d bytes, of %d, took a twentieth of the time or more: " ..
            "a window's timeout at its peak waits as long as a full buffer", level.name, r.low, r.high, r.waits)
    elseif why == sbe.PATHS_TOP_ONCE then
        return fmt("%s: %d of %d waits for %s began at the highest RtxQ, %d-%d bytes, and took a twentieth of the " ..
            "time or more only with the longest: a window's timeout at its peak waits as long as a full buffer",
            level.name, r.at_ceiling, r.waits, level.ack, r.low, r.high)
    elseif why == sbe.PATHS_TOP_BRIEF or why == sbe.PATHS_TOP_HELD then
        local held = why == sbe.PATHS_TOP_HELD
        return fmt("%s: %d of %d waits for %s began at the highest RtxQ, %d-%d bytes, and took %s: the %s buffer " ..
            "counts payload, so %s", level.name, r.at_ceiling, r.waits, level.ack, r.low, r.high,
            held and "a twentieth of the time or more" or "less than a twentieth of the time", level.whose,
            held and "it was full there" or "only there could it be full")
    elseif why == sbe.SETTLED_CEILING then
        return fmt("%d of the %d waits for an ack began at an RtxQ of %d-%d bytes, %d above, after a transient at " ..
            "a higher RtxQ", r.at_ceiling, r.waits, r.low, r.high, r.above)
    elseif why == sbe.NO_PILE then
        return fmt("at most %d of %d waits for an ack began within a packet of one RtxQ, and %d above the median RtxQ " ..
            "lasted until a quarter of their RtxQ was acked: no sign of a full buffer", r.at_ceiling, r.waits, r.deep_waits)
    elseif why == sbe.LEFT_CEILING then
        return fmt("%d of %d waits for an ack began at an RtxQ of %d-%d bytes, then as many lower with no loss: a " ..
            "window that shrank held it lower, and may have held it there", r.at_ceiling, r.waits, r.low, r.high)
    end
    return fmt("the capture is not by the sender (vantage %s)", vantage)
end
end

------------------------------------------------------------------------------------------------
-- Frame results and findings
------------------------------------------------------------------------------------------------

local MAX_REVOKED = 16
local MAX_UPDATES = 2

-- Records a finding; `note` selects the rule's note variant where rules.md allows one.
local function raise(fr, id, note, message)
    if not fr then return end
    local is_note = note and rule_note_expert[id] ~= nil
    if fr.findings == NO_ITEMS then fr.findings = {} end
    fr.findings[#fr.findings + 1] = {id = id, note = is_note, message = id .. ": " .. message}
end

-- The frame being analyzed: one scratch result, reset per frame and then stored compactly
-- (stored.store), since a table per frame kept for the whole capture makes every GC cycle walk it.
local function new_update()
    return {dir = nil, is_ack = false, freed_bytes = 0, revoked = NO_ITEMS, rtxq_sack = 0, nr_acked = 0,
            sacked = 0, nr_figure = false, blocked = false, gap_open = false}
end
local scratch_result = {stream = nil, rtt_ms = nil, findings = NO_ITEMS, n_upd = 0, upd = {new_update(), new_update()}}

local function new_frame_result()
    local fr = scratch_result
    fr.stream, fr.rtt_ms, fr.findings, fr.n_upd = nil, nil, NO_ITEMS, 0
    return fr
end

------------------------------------------------------------------------------------------------
-- RtxQ bookkeeping of one sender direction (packet-nrsack-rtxq.c): events -> scoreboard -> frame result
------------------------------------------------------------------------------------------------

local state -- per-capture state, reset in init

-- Capture time of the frame in ns since the first frame the plugin saw: exact (frame.time_epoch is an
-- NSTime), and small enough for doubles.
local f_time_epoch = Field.new("frame.time_epoch")
local function frame_ns()
    local t = f_time_epoch().value
    if not state.t0_secs then state.t0_secs = t.secs end
    return (t.secs - state.t0_secs) * 1e9 + t.nsecs
end

local VANTAGE_UNKNOWN, VANTAGE_MIDDLE = -2, -1 -- where the capture sits beside the endpoint indexes (decisions 17)

local function flow_dir_new(stream, index, protocol, tsn_units, rule_rtx_after_ack, rule_revoked)
    return {
        sb = sb_init(tsn_units), stream = stream, index = index, protocol = protocol,
        sender = "", receiver = "", label = "", max_payload = 0, nr_mode = false, gap_open = false,
        rule_rtx_after_ack = rule_rtx_after_ack, rule_revoked = rule_revoked,
        -- B from the capture (packet-nrsack-rtxq.c): the estimator, fed as the analyzer feeds it, and its
        -- decisions per semantics, kept until it is fed again (changes); at release, final. The estimator is
        -- made when first fed (sbe.of).
        estimate = nil, changes = 0, decided = nil, decided_at = 0, after_new = {[0] = 0, [1] = 0},
        last_new_frame = 0, data_path = nil, data_paths = false,
    }
end

-- A flow that ended gives its scoreboards back (decisions.md 44: memory bounded by the live flows); once out
-- of the lookups its tables go too, the stored frame results keeping only its labels.
-- sbe.decide_paths per semantics, kept until the estimator is fed again; with `current` false (one pass, the
-- estimate so far) until its events have grown by a sixteenth (packet-nrsack-rtxq.c decide, alike).
-- Direction d's estimator, made when first fed: a flood's flows mostly never are, and it is most of a
-- direction's tables (decisions.md 84); sbe.NONE is what decide reads of one never fed (never changed).
sbe.NONE = sbe.new()
function sbe.of(d)
    local e = d.estimate
    if not e then
        e = sbe.new()
        d.estimate = e
    end
    return e
end

local function decide(d, current)
    local fed = d.changes - d.decided_at
    if d.decided and (fed == 0 or (not current and fed < math.max(1, math.floor(d.decided_at / 16)))) then return end
    -- MPTCP's data level, an association whose DATA went over several address pairs (CMT), or one path
    local paths = d.protocol == "mptcp" and sbe.MPTCP_DATA_LEVEL or d.data_paths and sbe.CMT_ASSOCIATION or
        d.protocol == "tcp" and sbe.TCP_CONNECTION or sbe.ONE_PATH
    local e = d.estimate or sbe.NONE
    d.decided = {[0] = sbe.decide_paths(e, false, paths), [1] = sbe.decide_paths(e, true, paths)}
    d.decided_at = d.changes
end

-- What the frames of a direction show of it (packet-nrsack-rtxq.c shown_dir_t): made at its first update,
-- kept for the whole file, small; the direction itself goes with its flow (decisions.md 44, 84).
local function shown_sync(s, d)
    s.nr_mode, s.index, s.last_new_frame, s.decided = d.nr_mode, d.index, d.last_new_frame, d.decided
    s.vantage = d.hs and d.hs.vantage or VANTAGE_UNKNOWN
end

-- A final decision, shared with every equal one: a flood's finished flows mostly decide alike ("no new
-- data", "all new data left before an ack freed room"), and their frames keep it for the whole file.
do
local FIELDS = {"verdict", "why", "sndbuf", "low", "high", "waits", "long_waits", "at_ceiling", "above", "packet", "deep_waits",
                "level"}
function sbe.shared(decided)
    local key = {}
    for nr = 0, 1 do
        for _, name in ipairs(FIELDS) do key[#key + 1] = decided[nr][name] end
    end
    key = table.concat(key, ",")
    local same = state.decisions[key]
    if same then return same end
    state.decisions[key] = decided
    return decided
end
end

local function release_dirs(dirs)
    for i = 0, 1 do
        local d = dirs[i]
        if d then
            if d.sb then -- the flow's estimate is final: its state goes
                decide(d, true)
                d.decided = sbe.shared(d.decided)
            end
            d.sb, d.estimate = nil, nil
            if d.shown then
                shown_sync(d.shown, d)
                d.shown.live = nil
            end
        end
    end
end

-- The budget of open flows (packet-nrsack-rtxq.c, decisions.md 84): the flows held open (TCP connections
-- and subflows, SCTP associations) in two lists, least recently active first, [0] those that carried no
-- data, finished first; flow.finish ends one early, as the idle bound would.
local open_flows = {}

function open_flows.unlink(f)
    local l = state.open_lists[f.open_has_data and 1 or 0]
    if f.open_prev then f.open_prev.open_next = f.open_next else l.head = f.open_next end
    if f.open_next then f.open_next.open_prev = f.open_prev else l.tail = f.open_prev end
    f.open_prev, f.open_next = nil, nil
end

function open_flows.remove(f)
    if not f.open_listed then return end
    open_flows.unlink(f)
    f.open_listed = false
    state.open_count = state.open_count - 1
end

function open_flows.touch(f, has_data)
    if f.open_listed then open_flows.unlink(f) else state.open_count = state.open_count + 1 end
    f.open_listed = true
    f.open_has_data = f.open_has_data or has_data
    local l = state.open_lists[f.open_has_data and 1 or 0]
    f.open_prev = l.tail
    if l.tail then l.tail.open_next = f else l.head = f end
    l.tail = f
end

-- sub becomes a subflow of MPTCP connection m; its activity so far becomes the connection's (decisions.md 93):
-- the budget holds and finishes a connection's subflows together, so an idle subflow is never finished while
-- its connection is active on another, which would split the data level.
function open_flows.attach(m, sub)
    sub.mptcp = m
    m.live = m.live + 1
    m.subflows[sub] = true
    if sub.open_listed then
        local has_data = sub.open_has_data
        open_flows.remove(sub)
        open_flows.touch(m, has_data)
    end
end

-- The budget finishes an MPTCP connection: each of its subflows ends (the last takes the data level).
function open_flows.finish_subflows(m)
    for sub in pairs(m.subflows) do sub.finish(sub) end
end

-- After a frame's analysis: past the budget, the least recently active flows are finished early, those
-- without data first, down to three quarters of it; a note on the frame says how many and why.
function open_flows.enforce(fr)
    local budget = state.prefs.max_open_flows
    if budget == 0 or state.open_count <= budget then return end
    local target = math.max(budget - math.floor(budget / 4), 1)
    local n = {[0] = 0, [1] = 0}
    for k = 0, 1 do
        local l = state.open_lists[k]
        while state.open_count > target and l.head do
            local f = l.head
            open_flows.remove(f)
            n[k] = n[k] + 1
            f.finish(f)
        end
    end
    -- the flows just finished are garbage now: a collector step sized to them (about what a flow's tables
    -- take) keeps the heap near the budget's, where the collector's own pace let a flood's grow tenfold
    collectgarbage("step", 32 * (n[0] + n[1]))
    state.released_early[0] = state.released_early[0] + n[0]
    state.released_early[1] = state.released_early[1] + n[1]
    raise(fr, "GEN-01", true, string.format("%d flows finished before their end, more than %d being open at once " ..
        "(nrsack.max_open_flows): %d without data, %d with data finished at their last packet; a later packet of " ..
        "one starts a new stream", n[0] + n[1], budget, n[0], n[1]))
end

-- Names a direction by its data sender (decisions 13); the label is the nrsack.direction value.
local function set_endpoints(d, sender, receiver)
    d.sender, d.receiver, d.label = sender, receiver, sender .. " -> " .. receiver
end

-- A frame may touch both directions (SCTP bundling DATA with a SACK): one update per direction.
local function update_for(fr, d)
    local upd, n = fr.upd, fr.n_upd
    for i = 1, n do
        if upd[i].dir == d then return upd[i] end
    end
    if n == MAX_UPDATES then return nil end
    n = n + 1
    fr.n_upd = n
    local u = upd[n]
    u.dir, u.is_ack, u.freed_bytes, u.revoked = d, false, 0, NO_ITEMS
    if not d.shown then d.shown = {live = d, label = d.label} end -- the direction's frames will show it
    return u
end

-- The direction's figures after this event (the last event of the frame wins). One scratch table
-- for every call, and one for each kind of facts (their callers read them at once).
local figures = {}
local data_facts, ack_facts = sb_data_facts_new(), sb_ack_facts_new()
local function refresh_figures(u, d)
    local f = figures
    sb_figures(d.sb, f)
    if d.gap_from_sacked then d.gap_open = f.sacked > 0 end -- MPTCP data level (decisions 12)
    u.rtxq_sack, u.nr_acked, u.sacked, u.nr_figure = f.rtxq_sack, f.nr_acked, f.sacked, d.nr_mode
    local sndbuf = state.prefs.sndbuf
    u.blocked = sndbuf > 0 and d.max_payload > 0 and sb_blocked(f, sndbuf, d.max_payload, d.nr_mode)
    u.gap_open = d.gap_open
    u.after_new_sack, u.after_new_nr = d.after_new[0], d.after_new[1]
end

local function rtxq_on_data(fr, d, lo, hi, payload_bytes)
    if payload_bytes > d.max_payload then d.max_payload = payload_bytes end
    -- a TCP keep-alive resends the byte below the ack on purpose (decisions 21)
    local sb = d.sb
    local keepalive = not sb.tsn_units and hi - lo <= 1 and sb.cum_known and lo + 1 == sb.cum
    local f = data_facts
    sb_data(sb, lo, hi, payload_bytes, f)
    local below_cum, was_nracked = f.below_cum, f.was_nracked
    if f.out_of_window then
        raise(fr, "GEN-01", false, string.format("TSN %d lies more than %d TSNs above the oldest unacked one; not analyzed",
            lo % TWO32, SB_TSN_WINDOW))
        return
    end
    if (below_cum or was_nracked) and not keepalive then
        -- strict only where the capture sits by the data sender (decisions 17)
        local by_sender = d.hs ~= nil and d.hs.vantage == d.index
        raise(fr, d.rule_rtx_after_ack, not by_sender, string.format("%s from %s retransmitted after it was %s%s",
            sb.tsn_units and "TSN" or "data", d.sender, was_nracked and "NR-acked" or "cum-acked",
            by_sender and "" or "; the capture is not at the sender: the ack may have crossed it"))
    end
    if f.new_units > 0 then -- new data: the estimator's input as analyzer/state/_scoreboard.c note_estimate gives it
        d.after_new[0], d.after_new[1] = sb.sent.weight, sb.sent.weight - sb.nracked.weight
        d.last_new_frame = state.frame
        d.changes = d.changes + 1
        sbe.new_data(sbe.of(d), d.after_new[0], d.after_new[1], f.new_bytes, frame_ns())
    end
    if f.new_bytes == 0 then return end -- decisions 4: retransmissions do not change the RtxQ
    local u = update_for(fr, d)
    if not u then return end
    refresh_figures(u, d)
end

local function rtxq_on_ack(fr, d, cum, r, nr, revoke, path)
    local res = ack_facts
    local acked_before = d.sb.acked_bytes
    sb_ack(d.sb, cum, r, nr, revoke, path, res)
    if not res.stale and not d.gap_from_sacked then d.gap_open = res.gap_open end
    if d.sb.acked_bytes > acked_before or res.freed_bytes > 0 then -- an ack that freed room
        d.changes = d.changes + 1
        sbe.freeing_ack(sbe.of(d), d.sb.gap_open, frame_ns())
    end
    local u = update_for(fr, d)
    if not u then return res end
    u.is_ack = true
    u.freed_bytes = u.freed_bytes + res.freed_bytes
    for i = 1, #res.revoked do
        -- report each revoked TSN (SCTP) or the first byte of each revoked range (TCP, MPTCP)
        local x = res.revoked[i][1]
        repeat
            if #u.revoked >= MAX_REVOKED then break end -- a corrupt ack may revoke 2^31 TSNs
            if u.revoked == NO_ITEMS then u.revoked = {} end
            u.revoked[#u.revoked + 1] = x % TWO32
            x = x + 1
        until not (d.sb.tsn_units and x < res.revoked[i][2])
    end
    if res.n_revoked > 0 then
        raise(fr, d.rule_revoked, false, string.format(
            "%d %s range(s) NR-acked earlier are neither cum-acked nor NR-acked by this ack, first at %d",
            res.n_revoked, d.sb.tsn_units and "TSN" or "byte", res.revoked[1][1] % TWO32))
    end
    refresh_figures(u, d)
    return res
end

-- Units the receiver is known to hold beyond the ack's own blocks (MPTCP: DSNs its subflow ack covers).
-- An ack before any data of d: it sets the state the first data row shows (cum, gap_open), as in the
-- analyzer, but has no row of its own and judges nothing.
local function rtxq_ack_before_data(d, cum, r, nr)
    local res = ack_facts
    sb_ack(d.sb, cum, r, nr, REVOKE_NONE, 0, res)
    if not d.gap_from_sacked then d.gap_open = res.gap_open end
end

-- SCTP: a DATA chunk of d went over the address pair `path` (several pairs: CMT).
local function rtxq_data_path(d, path)
    if not d.data_path then
        d.data_path = path
    elseif path ~= d.data_path and not d.data_paths then
        d.data_paths = true
        d.changes = d.changes + 1
    end
end

-- Where the capture sits for the sender of shown direction d, as the analyzer's summary names it (vantage).
local function vantage_name(d)
    local v = d.vantage
    return v == VANTAGE_UNKNOWN and "unknown" or v == VANTAGE_MIDDLE and "middle" or v == d.index and "sender" or "receiver"
end

-- Which B nrsack.blocked uses for shown direction d (packet-nrsack-rtxq.c rtxq_sndbuf_view): the preference (given), else
-- core/sndbuf.c's verdict, from the whole capture once the frame is shown again after its first pass.
local function sndbuf_view(d, shown_again)
    local sndbuf = state.prefs.sndbuf
    if sndbuf > 0 then return {given = true, sndbuf = sndbuf} end
    local whole = d.live == nil or shown_again
    if d.live then -- else synced at its release
        decide(d.live, whole)
        shown_sync(d, d.live)
    end
    local decided = d.decided[d.nr_mode and 1 or 0]
    local r = {}
    for k, v in pairs(decided) do r[k] = v end
    local where = vantage_name(d)
    sbe.vantage(r, where == "sender" or where == "unknown")
    return {given = false, whole = whole, r = r, sndbuf = r.verdict == sbe.HELD_BACK and math.min(r.sndbuf, 4294967295) or 0,
            where = where}
end

-- nrsack.blocked of an update of frame `number` (after_new: the RtxQ after d's last new data, as of it).
local function update_blocked(d, view, number, blocked, after_new_sack, after_new_nr, rtxq_sack, nr_acked, gap_open)
    if view.given then return blocked end
    -- one pass: more new data may follow (the estimate so far)
    local before_last_new = not view.whole or number < d.last_new_frame
    return sbe.blocked(view.r, d.nr_mode and after_new_nr or after_new_sack,
        d.nr_mode and rtxq_sack - nr_acked or rtxq_sack, gap_open, before_last_new)
end

local function rtxq_on_received(fr, d, r)
    if #r == 0 then return end
    sb_received(d.sb, r)
    local u = update_for(fr, d)
    if u then refresh_figures(u, d) end
end

-- A 32-bit serial of direction d's space, unwrapped once (docs/scoreboard.md), or with take64 a 64-bit
-- one; nil and fed nothing when it lands more than SERIAL_FAR from the highest seen and no earlier far
-- value agrees (decisions 33: one damaged ack must not make every later one look 2^32 behind),
-- reported once per direction (a corrupt capture must not bury the real findings). wire: the value
-- as reported (default v).
local function unwrap(fr, d, v, what, take64, wire)
    local status, x = (take64 and serial_take64 or serial_unwrap)(d.sb.space, v)
    if status == SERIAL_FAR_AWAY then
        if not d.far_reported then
            d.far_reported = true
            raise(fr, "GEN-01", true, string.format(
                "%s %s lies more than 2^30 from the highest seen in %s; not analyzed (later ones: not reported)",
                what, wire or string.format("%d", v), d.label or "this direction"))
        end
        return nil
    end
    return x
end

-- Where the capture sits (decisions 17): next to endpoint 0 or 1, or:
local VANTAGE_RATIO = 2.5 -- one handshake gap this many times the other puts the capture by one end

local function handshake_new() return {seen = {}, ns = {}, vantage = VANTAGE_UNKNOWN} end

-- Records step 0..2 of the opening exchange (INIT, INIT-ACK, COOKIE-ECHO; SYN, SYN-ACK, ACK), first
-- of each; the vantage follows when all three are seen.
local function handshake_step(hs, step)
    if hs.seen[step] or (step > 0 and not hs.seen[step - 1]) then return end
    hs.seen[step] = true
    hs.ns[step] = frame_ns()
    if step < 2 then return end
    -- the opener's reply came back late and it confirmed at once: we sit by the opener
    local reply, confirm = hs.ns[1] - hs.ns[0], hs.ns[2] - hs.ns[1]
    if reply > VANTAGE_RATIO * confirm then hs.vantage = 0
    elseif confirm > VANTAGE_RATIO * reply then hs.vantage = 1
    else hs.vantage = VANTAGE_MIDDLE end
end

local function new_stream_index()
    local s = state.next_stream
    state.next_stream = s + 1
    return s
end

local function endpoint_str(addr, port)
    local a = tostring(addr)
    if a:find(":", 1, true) then return "[" .. a .. "]:" .. port end
    return a .. ":" .. port
end

------------------------------------------------------------------------------------------------
-- SCTP (packet-nrsack-sctp.c): NR-SACK / SACK / DATA events, Supported Extensions, FSACK chunks
------------------------------------------------------------------------------------------------

local CHUNK_DATA, CHUNK_INIT, CHUNK_INIT_ACK, CHUNK_SACK, CHUNK_COOKIE_ECHO, CHUNK_NR_SACK = 0x00, 0x01, 0x02, 0x03, 0x0A, 0x10
local CHUNK_ABORT, CHUNK_SHUTDOWN_COMPLETE = 0x06, 0x0E
local PARAM_IPV4, PARAM_IPV6, PARAM_SUPPORTED_EXT = 5, 6, 0x8008
local MAX_FSACK_TS, MAX_BLOCKS = 32, 256

local function sctp_learn_tag(a, ep, tag)
    if a.tag_known[ep] then return end
    a.tag_known[ep] = true
    a.tag[ep] = tag
    state.sctp_by_endpoint[a.port[ep] * TWO32 + tag] = a
end

local sctp_release -- below: a new association's finish

local function sctp_new_assoc(pinfo, sport, dport)
    local stream = new_stream_index()
    local a = {
        stream = stream, port = {[0] = sport, [1] = dport}, tag = {}, tag_known = {},
        init_seen = false, init_ack_seen = false, ext_nr = {}, ext_fsack = {}, hs = handshake_new(),
        complete_ns = {}, last_data_ns = {}, -- FS-05: endpoint i's last FSACK-COMPLETE and DATA
        fsack_ts = {}, n_fsack_ts = 0, first_fsack_ack_src = nil,
        fsack_path = {}, finish = sctp_release,
        dir = {
            [0] = flow_dir_new(stream, 0, "sctp", true, "NR-04", "NR-03"),
            [1] = flow_dir_new(stream, 1, "sctp", true, "NR-04", "NR-03"),
        },
    }
    a.dir[0].hs, a.dir[1].hs = a.hs, a.hs
    local src, dst = endpoint_str(pinfo.net_src, sport), endpoint_str(pinfo.net_dst, dport)
    set_endpoints(a.dir[0], src, dst)
    set_endpoints(a.dir[1], dst, src)
    return a
end

-- After SHUTDOWN-COMPLETE or ABORT: the association leaves the lookups (a later packet with its tags
-- starts a new one, as a capture starting mid-association would) and its state goes.
function sctp_release(a)
    for ep = 0, 1 do
        local key = a.tag_known[ep] and a.port[ep] * TWO32 + a.tag[ep]
        if key and state.sctp_by_endpoint[key] == a then state.sctp_by_endpoint[key] = nil end
    end
    for _, key in ipairs({a.port[0] * 65536 + a.port[1], a.port[1] * 65536 + a.port[0]}) do
        if state.sctp_pending[key] == a then state.sctp_pending[key] = nil end
    end
    open_flows.remove(a)
    release_dirs(a.dir)
    a.fsack_ts, a.fsack_path, a.complete_ns, a.last_data_ns = nil, nil, nil, nil
end

-- Finds (or creates) the association of a packet; returns it and the sending endpoint's index.
local function sctp_find_assoc(pinfo, sport, dport, vtag, is_init, init_tag)
    local a
    if is_init then
        a = state.sctp_by_endpoint[sport * TWO32 + init_tag]
        if not a then
            a = sctp_new_assoc(pinfo, sport, dport)
            sctp_learn_tag(a, 0, init_tag)
        end
        return a, 0
    end
    a = state.sctp_by_endpoint[dport * TWO32 + vtag]
    if a then
        local from = (a.tag_known[1] and a.tag[1] == vtag and a.port[1] == dport) and 0 or 1
        return a, from
    end
    local key = sport * 65536 + dport
    a = state.sctp_pending[key]
    if a then
        -- the reverse direction of an association first seen mid-stream
        state.sctp_pending[key] = nil
        sctp_learn_tag(a, 0, vtag)
        return a, 1
    end
    a = sctp_new_assoc(pinfo, sport, dport)
    sctp_learn_tag(a, 1, vtag)
    state.sctp_pending[dport * 65536 + sport] = a
    return a, 0
end

local function sctp_init_params(s, base, off, stop, tree, a, ep, fr)
    while off + 4 <= stop do
        local ptype, plen = u16(s, off), u16(s, off + 2)
        if plen < 4 or off + plen > stop then
            raise(fr, "GEN-01", false, string.format("INIT parameter at offset %d has bad length %d", off, plen))
            return
        end
        if ptype == PARAM_SUPPORTED_EXT then
            local nr, fs = false, false
            for i = off + 4, off + plen - 1 do
                local ct = u8(s, i)
                if ct == CHUNK_NR_SACK then nr = true end
                if ct == state.prefs.fsack_init then fs = true end
            end
            if tree then
                tree:add(hf.sctp_ext_nr_sack, base(off, plen), nr)
                tree:add(hf.sctp_ext_fsack, base(off, plen), fs)
            end
            if a then
                a.ext_nr[ep] = nr
                a.ext_fsack[ep] = fs
            end
        end
        off = off + plen + (4 - plen % 4) % 4
    end
end

-- Reads and checks one block list (NR-05, NR-08); returns the blocks as unwrapped [lo, hi) pairs.
local function sctp_read_blocks(s, off, n, cum_tsn, list, fr)
    if n == 0 then return NO_ITEMS end -- most SACKs
    local out = {}
    local prev_end = 0
    for i = 0, n - 1 do
        local start, stop = u16(s, off), u16(s, off + 2)
        if start < 2 or start > stop then
            raise(fr, "NR-05", false, string.format("%s block %d is %d-%d (Start must be >= 2 and <= End)", list, i + 1, start, stop))
        elseif i > 0 and start <= prev_end then
            raise(fr, "NR-05", false, string.format("%s block %d (%d-%d) is not above the previous one", list, i + 1, start, stop))
        elseif i > 0 and start == prev_end + 1 then
            raise(fr, "NR-08", false, string.format("%s blocks %d and %d touch (%d-%d): should be one block", list, i, i + 1, prev_end, start))
        end
        if start <= stop then
            if #out < MAX_BLOCKS then out[#out + 1] = sctp_gap_block(cum_tsn, start, stop) end
            if stop > prev_end then prev_end = stop end
        end
        off = off + 4
    end
    return out
end

local function sctp_sack(s, off, ctype, clen, pinfo, a, from, fr)
    local nr_sack = ctype == CHUNK_NR_SACK
    local name = nr_sack and "NR-SACK" or "SACK"
    local hdr = nr_sack and 20 or 16
    if clen < hdr then
        raise(fr, "GEN-01", false, string.format("%s chunk too short (%d bytes)", name, clen))
        return
    end
    local d = a.dir[1 - from] -- the acks of endpoint `from` are about the other's data
    local cum = u32(s, off + 4)
    local n_r, n_nr, n_dup = u16(s, off + 12), 0, 0
    if nr_sack then
        n_nr, n_dup = u16(s, off + 14), u16(s, off + 16)
    else
        n_dup = u16(s, off + 14)
    end
    local need = hdr + 4 * (n_r + n_nr + n_dup)
    if need ~= clen then
        -- counts the chunk cannot hold: nothing of it is trusted (decisions.md 40), only this finding
        raise(fr, nr_sack and "NR-05" or "GEN-01", false, string.format(
            "block counts (%d R, %d NR, %d dup) need %d bytes, chunk has %d; not analyzed", n_r, n_nr, n_dup, need, clen))
        return
    end
    local handshake = a.init_seen and a.init_ack_seen
    if nr_sack then
        d.nr_mode = true
        if not (a.ext_nr[0] and a.ext_nr[1]) then
            raise(fr, "NR-01", not handshake, "NR-SACK although INIT and INIT-ACK did not both list 0x10")
        end
    elseif a.ext_nr[0] and a.ext_nr[1] then
        raise(fr, "NR-06", false, "SACK sent although NR-SACK was negotiated")
    end
    local path = a.fsack_path[from]
    if path and tostring(pinfo.net_src) ~= path then
        raise(fr, "FS-04", false, string.format("%s sent from %s, FSACK path is %s", name, tostring(pinfo.net_src), path))
    end

    local cum64 = unwrap(fr, d, cum, "cumulative TSN ack")
    if not cum64 then return end
    local r = sctp_read_blocks(s, off + hdr, n_r, cum64, "R gap", fr)
    local nr = sctp_read_blocks(s, off + hdr + 4 * n_r, n_nr, cum64, "NR gap", fr)
    local had_data = d.sb.have_data
    -- the path: the ack's address pair (CMT acks return on several)
    local path = tostring(pinfo.net_src) .. " > " .. tostring(pinfo.net_dst)
    local res = rtxq_on_ack(fr, d, cum64 + 1, r, nr, nr_sack and REVOKE_ALL or REVOKE_NONE, path)
    if res.r_and_nr then
        raise(fr, "NR-02", false, "a TSN lies in both an R and an NR gap block")
    end
    if res.stale then
        raise(fr, "NR-07", false, string.format("cumulative TSN ack %d is below %d", cum, (d.sb.cum - 1) % TWO32))
    end
    -- the core judges acks after some data; one before any DATA covers TSNs never sent too (rules.md)
    if res.beyond_sent or not had_data then -- a note when the direction's initial TSN was not captured
        raise(fr, "NR-09", not (d.index == 0 and a.init_seen or d.index == 1 and a.init_ack_seen),
            string.format("ack covers TSNs never sent (highest sent %d)", (d.sb.snd_max - 1) % TWO32))
    end
end

local function is_fsack_type(t)
    local p = state.prefs
    return t == p.fsack_init or t == p.fsack_ack or t == p.fsack_complete
end

local function sctp_fsack(s, base, off, ctype, clen, pinfo, tree, a, from, fr)
    local p = state.prefs
    local name = ctype == p.fsack_init and "FSACK-INIT" or ctype == p.fsack_ack and "FSACK-ACK" or "FSACK-COMPLETE"
    local st = tree and tree:add(nrsack, base(off, clen), name)
    if st then st:add(hf.fsack_type, base(off, 1)) end
    local handshake = a and a.init_seen and a.init_ack_seen
    if a and not (a.ext_fsack[0] and a.ext_fsack[1]) then
        raise(fr, "FS-06", not handshake, string.format(
            "%s although INIT and INIT-ACK did not both list 0x%02X", name, p.fsack_init))
    end

    if ctype ~= p.fsack_complete then
        if clen ~= 8 then
            raise(fr, "GEN-01", false, string.format("%s chunk length %d, expected 8", name, clen))
            if clen < 8 then return end
        end
        local ts = u32(s, off + 4)
        if st then st:add(hf.fsack_timestamp, base(off + 4, 4)) end
        if not a then return end
        if ctype == p.fsack_init then
            a.fsack_ts[a.n_fsack_ts % MAX_FSACK_TS] = ts
            a.n_fsack_ts = a.n_fsack_ts + 1
            a.first_fsack_ack_src = nil
            return
        end
        local known = false
        for i = 0, math.min(a.n_fsack_ts, MAX_FSACK_TS) - 1 do
            if a.fsack_ts[i] == ts then known = true end
        end
        if not known then
            raise(fr, "FS-01", false, string.format("FSACK-ACK timestamp %d was in no earlier FSACK-INIT", ts))
            return
        end
        -- capture at the sender: arrival time in ms minus the timestamp, mod 2^32
        local t = f_time_epoch().value
        local now_ms = (t.secs % TWO32) * 1000 + math.floor(t.nsecs / 1000000)
        fr.rtt_ms = (now_ms - ts) % TWO32
        if not a.first_fsack_ack_src then a.first_fsack_ack_src = tostring(pinfo.net_src) end
        return
    end

    -- FSACK-COMPLETE: one address parameter
    local ptype = clen >= 8 and u16(s, off + 4) or 0
    local plen = clen >= 8 and u16(s, off + 6) or 0
    local addr
    if ptype == PARAM_IPV4 and plen == 8 and clen >= 12 then
        if st then st:add(hf.fsack_address_v4, base(off + 8, 4)) end
        addr = tostring(base(off + 8, 4):ipv4())
    elseif ptype == PARAM_IPV6 and plen == 20 and clen >= 24 then
        if st then st:add(hf.fsack_address_v6, base(off + 8, 16)) end
        addr = tostring(base(off + 8, 16):ipv6())
    else
        raise(fr, "GEN-01", false, "FSACK-COMPLETE without a valid address parameter")
        return
    end
    if not a then return end
    if a.first_fsack_ack_src and addr ~= a.first_fsack_ack_src then
        raise(fr, "FS-03", false, string.format("FSACK-COMPLETE names %s, first FSACK-ACK came from %s",
            addr, a.first_fsack_ack_src))
    end
    a.fsack_path[1 - from] = addr
    a.complete_ns[from] = frame_ns()
end

-- FS-05 on the first DATA of each whole update interval after the sender's last FSACK-COMPLETE
-- (decisions 20), judged against the sender's previous DATA.
local FSACK_MAX_UPDATE_INTERVAL_NS = 1e9
local function check_fsack_update_interval(a, from, fr)
    local since = a.complete_ns[from]
    if not since then
        -- no FSACK-COMPLETE yet: any later one makes this DATA "before it" (a whole interval of 0)
        a.last_data_ns[from] = -math.huge
        return
    end
    local now = frame_ns()
    local last = a.last_data_ns[from]
    if last then
        local overdue = math.floor((now - since) / FSACK_MAX_UPDATE_INTERVAL_NS)
        local before = math.max(0, math.floor((last - since) / FSACK_MAX_UPDATE_INTERVAL_NS))
        if overdue >= 1 and overdue > before then
            raise(fr, "FS-05", false, string.format(
                "DATA %.3f s after the last FSACK-COMPLETE; the path must be confirmed every 1 s", (now - since) / 1e9))
        end
    end
    a.last_data_ns[from] = now
end

-- One SCTP packet: s = its captured bytes (common header first; only the first chunk's header when
-- that chunk is a lone DATA chunk, see sctp_bytes), read from offset `start` of Tvb `source`;
-- captured and reported = its length in the capture and on the wire.
local function sctp_dissect(s, source, start, captured, reported, pinfo, tree, fr)
    if captured < 12 then
        raise(fr, "GEN-01", false, "SCTP common header truncated")
        return
    end
    local sport, dport, vtag = u16(s, 0), u16(s, 2), u32(s, 4)
    local a, from
    if fr then
        local is_init = captured >= 20 and u8(s, 12) == CHUNK_INIT
        a, from = sctp_find_assoc(pinfo, sport, dport, vtag, is_init, is_init and u32(s, 16) or 0)
        fr.stream = a.stream
        open_flows.touch(a, a.dir[0].sb ~= nil and a.dir[0].sb.have_data or a.dir[1].sb ~= nil and a.dir[1].sb.have_data)
    end
    local data_checked = false
    local off = 12
    while off + 4 <= reported do
        if off + 4 > captured then
            raise(fr, "GEN-01", false, string.format("chunk header at offset %d truncated by the capture", off))
            return
        end
        local ctype, clen = u8(s, off), u16(s, off + 2)
        if clen < 4 or off + clen > reported then
            raise(fr, "GEN-01", false, string.format("chunk type %d at offset %d has bad length %d", ctype, off, clen))
            return
        end
        if off + clen > captured then
            raise(fr, "GEN-01", false, string.format("chunk type %d at offset %d truncated by the capture", ctype, off))
            return
        end
        if a and (ctype == CHUNK_INIT or ctype == CHUNK_INIT_ACK or ctype == CHUNK_COOKIE_ECHO) then
            handshake_step(a.hs, ctype == CHUNK_INIT and 0 or ctype == CHUNK_INIT_ACK and 1 or 2)
        end
        if (ctype == CHUNK_INIT or ctype == CHUNK_INIT_ACK) and clen >= 20 then
            local ep = ctype == CHUNK_INIT and 0 or 1
            if a then
                if ctype == CHUNK_INIT then
                    a.init_seen = true
                else
                    a.init_ack_seen = true
                    sctp_learn_tag(a, from, u32(s, off + 4))
                end
                if from ~= ep then a = nil end -- an INIT-ACK from the initiator: collision, leave the state alone
                -- the initial TSN anchors the sender's space (docs/scoreboard.md "anchor")
                if a then serial_anchor(a.dir[ep].sb.space, u32(s, off + 16)) end
            end
            sctp_init_params(s, source:range(start, captured), off + 20, off + clen, tree, a, ep, fr)
            if a and ctype == CHUNK_INIT_ACK and a.ext_nr[0] and a.ext_nr[1] then
                a.dir[0].nr_mode, a.dir[1].nr_mode = true, true
            end
        elseif ctype == CHUNK_DATA and a then
            if clen < 16 then
                raise(fr, "GEN-01", false, string.format("DATA chunk too short (%d bytes)", clen))
            else
                local d = a.dir[from]
                local tsn = unwrap(fr, d, u32(s, off + 4), "TSN")
                if not data_checked then
                    check_fsack_update_interval(a, from, fr)
                    -- the budget's lists: from this packet on, a flow with data (as TCP's segment with payload)
                    if not a.open_has_data then open_flows.touch(a, true) end
                end
                data_checked = true
                if tsn then
                    rtxq_data_path(d, tostring(pinfo.net_src) .. ">" .. tostring(pinfo.net_dst))
                    rtxq_on_data(fr, d, tsn, tsn + 1, clen - 16)
                end
            end
        elseif (ctype == CHUNK_SACK or ctype == CHUNK_NR_SACK) and a then
            sctp_sack(s, off, ctype, clen, pinfo, a, from, fr)
        elseif is_fsack_type(ctype) then
            sctp_fsack(s, source:range(start, captured), off, ctype, clen, pinfo, tree, a, from, fr)
        elseif (ctype == CHUNK_ABORT or ctype == CHUNK_SHUTDOWN_COMPLETE) and a then
            sctp_release(a)
            a = nil -- the packet's later chunks come after the end: not analyzed, as in the analyzer
        end
        off = off + clen + (4 - clen % 4) % 4
    end
end

-- The bytes sctp_dissect reads, as a Lua string. A packet whose only chunk is DATA needs just the
-- common and DATA chunk headers: copying its payload too would allocate ~1.4 kB per data packet, and
-- the collector runs by bytes allocated.
local SCTP_DATA_HEADERS = 12 + 16
local SCTP_SMALL = 128 -- a packet this short is copied whole at once (SACKs, control chunks)
local function sctp_bytes(source, start, captured, reported)
    if captured == 0 then return "" end
    if captured > SCTP_SMALL and not is_fsack_type(CHUNK_DATA) then
        local head = source:raw(start, SCTP_DATA_HEADERS)
        local clen = u16(head, 14)
        -- the chunk loop stops after this chunk: no room for another chunk header behind it
        if u8(head, 12) == CHUNK_DATA and clen >= 16 and 12 + clen + (4 - clen % 4) % 4 + 4 > reported then
            return head
        end
    end
    return source:raw(start, captured)
end

------------------------------------------------------------------------------------------------
-- SHA-1 / SHA-256 of an MPTCP key (8 bytes, one block): RFC 8684 tokens tie subflows together.
------------------------------------------------------------------------------------------------

local bor, bxor, bnot = bitlib.bor, bitlib.bxor, bitlib.bnot
local lshift, rshift = bitlib.lshift, bitlib.rshift
-- `bit` (LuaBitOp) returns signed results; bring everything back to 0 .. 2^32-1.
local function u32n(x) return x % TWO32 end
local function rol(x, n) return u32n(bor(lshift(x, n), rshift(x, 32 - n))) end
local function ror(x, n) return u32n(bor(rshift(x, n), lshift(x, 32 - n))) end

-- The 16 big-endian words of the single padded block of an 8-byte message.
local function key_block(key)
    local w = {u32(key, 0), u32(key, 4), 0x80000000}
    for i = 4, 15 do w[i] = 0 end
    w[16] = 64 -- message length in bits
    return w
end

-- -> the token (first word) and the IDSN (last 64 bits) as high, low words (RFC 8684 3.1).
local function sha1_token_idsn(key)
    local w = key_block(key)
    for i = 17, 80 do w[i] = rol(bxor(w[i - 3], w[i - 8], w[i - 14], w[i - 16]), 1) end
    local h0, h1, h2, h3, h4 = 0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0
    local a, b, c, d, e = h0, h1, h2, h3, h4
    for i = 1, 80 do
        local f, k
        if i <= 20 then f, k = bor(band(b, c), band(bnot(b), d)), 0x5A827999
        elseif i <= 40 then f, k = bxor(b, c, d), 0x6ED9EBA1
        elseif i <= 60 then f, k = bor(band(b, c), band(b, d), band(c, d)), 0x8F1BBCDC
        else f, k = bxor(b, c, d), 0xCA62C1D6 end
        local t = u32n(rol(a, 5) + u32n(f) + e + k + w[i])
        a, b, c, d, e = t, a, rol(b, 30), c, d
    end
    return u32n(h0 + a), u32n(h3 + d), u32n(h4 + e)
end

local SHA256_K = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
}

local function sha256_token_idsn(key)
    local w = key_block(key)
    for i = 17, 64 do
        local s0 = bxor(ror(w[i - 15], 7), ror(w[i - 15], 18), rshift(w[i - 15], 3))
        local s1 = bxor(ror(w[i - 2], 17), ror(w[i - 2], 19), rshift(w[i - 2], 10))
        w[i] = u32n(w[i - 16] + u32n(s0) + w[i - 7] + u32n(s1))
    end
    local h0 = 0x6a09e667
    local a, b, c, d = h0, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a
    local e, f, g, h = 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19
    for i = 1, 64 do
        local S1 = u32n(bxor(ror(e, 6), ror(e, 11), ror(e, 25)))
        local ch = u32n(bxor(band(e, f), band(bnot(e), g)))
        local t1 = u32n(h + S1 + ch + SHA256_K[i] + w[i])
        local S0 = u32n(bxor(ror(a, 2), ror(a, 13), ror(a, 22)))
        local maj = u32n(bxor(band(a, b), band(a, c), band(b, c)))
        local t2 = u32n(S0 + maj)
        h, g, f, e, d, c, b, a = g, f, e, u32n(d + t1), c, b, a, u32n(t1 + t2)
    end
    return u32n(h0 + a), u32n(0x1f83d9ab + g), u32n(0x5be0cd19 + h)
end

------------------------------------------------------------------------------------------------
-- TCP (packet-nrsack-tcp.c): NR-SACK options, SACK / NR-SACK blocks, per-connection analysis
------------------------------------------------------------------------------------------------

local OPT_EOL, OPT_NOP, OPT_SACK_PERM, OPT_SACK, OPT_MPTCP, OPT_EXP_FD, OPT_EXP_FE = 0, 1, 4, 5, 30, 253, 254
local TCP_FLAG_FIN, TCP_FLAG_SYN, TCP_FLAG_RST, TCP_FLAG_ACK = 0x01, 0x02, 0x04, 0x10
local TCP_MAX_BLOCKS, TCP_MAX_MPTCP_OPTS = 4, 4

-- One NR-SACK option (wire-formats.md section 3); nil when the ExID is not ours.
local function nr_option_parse(s, off, len)
    if len < 4 or u16(s, off + 2) ~= state.prefs.tcp_exid then return nil end
    local o = {off = off, len = len, permitted = false, flags = 0, bad_length = false, left = {}, right = {}}
    if len == 5 then
        o.permitted = true
        o.flags = u8(s, off + 4)
        return o
    end
    local n = math.floor((len - 4) / 8)
    if (len - 4) % 8 ~= 0 or len == 4 or n > TCP_MAX_BLOCKS then o.bad_length = true end
    if n > TCP_MAX_BLOCKS then n = TCP_MAX_BLOCKS end
    for i = 1, n do
        o.left[i] = u32(s, off + 8 * i - 4)
        o.right[i] = u32(s, off + 8 * i)
    end
    return o
end

-- The option's fields, as the C plugin shows them in the TCP option tree.
local function add_nr_option_fields(tree, base, o)
    local st = tree:add(nrsack, base(o.off, o.len), o.permitted and "NR-SACK Permitted" or "NR-SACK blocks")
    st:add(hf.tcp_exid, base(o.off + 2, 2))
    if o.permitted then
        st:add(hf.tcp_permitted, base(o.off, o.len), true)
        st:add(hf.tcp_flags, base(o.off + 4, 1))
        st:add(hf.tcp_never_renege, base(o.off + 4, 1), has_flag(o.flags, 0x01))
        st:add(hf.mptcp_capable, base(o.off + 4, 1), has_flag(o.flags, 0x02))
    else
        st:add(hf.tcp_block_count, base(o.off + 1, 1), #o.left)
        for i = 1, #o.left do
            st:add(hf.tcp_block_left, base(o.off + 8 * i - 4, 4))
            st:add(hf.tcp_block_right, base(o.off + 8 * i, 4))
        end
    end
end

-- The TCP header's options; every NR-SACK option with our ExID is decoded into the tree, the first
-- one is analyzed. Returns nil when the header itself is unusable. The segment is one scratch table
-- reused for every packet (nothing keeps it): counts say how much of its lists is this packet's.
local scratch_seg = {sack_left = {}, sack_right = {}, mptcp_off = {}, mptcp_len = {}}
local function parse_segment(s, base, tree)
    if #s < 20 then return nil end
    local sp1, sp2, dp1, dp2, q1, q2, q3, q4, a1, a2, a3, a4, data_off, flags = sbyte(s, 1, 14)
    local hlen = (data_off - data_off % 16) / 4
    if hlen < 20 then return nil end
    -- a header longer than its bytes (IP says less follows, or the capture cut it) is not analyzed, but
    -- the options within the bytes still show, as Wireshark's option table shows them to the C plugin
    local stop = math.min(hlen, #s)
    local seg = scratch_seg
    seg.sport, seg.dport = sp1 * 256 + sp2, dp1 * 256 + dp2
    seg.seq = ((q1 * 256 + q2) * 256 + q3) * 256 + q4
    seg.ack = ((a1 * 256 + a2) * 256 + a3) * 256 + a4
    seg.hlen, seg.flags = hlen, flags
    seg.syn_flag, seg.ack_flag = has_flag(flags, TCP_FLAG_SYN), has_flag(flags, TCP_FLAG_ACK)
    seg.n_sack, seg.n_mptcp, seg.nr, seg.nr_overruns = 0, 0, nil, false
    local off = 20
    while off < stop do
        local kind = sbyte(s, off + 1)
        if kind == OPT_EOL then break end
        if kind == OPT_NOP then
            off = off + 1
        else
            if off + 2 > stop then break end
            local len = sbyte(s, off + 2)
            if len < 2 or off + len > stop then
                -- Wireshark's TCP dissector reports the bad option; ours is also TN-05
                seg.nr_overruns = (kind == OPT_EXP_FD or kind == OPT_EXP_FE) and off + 4 <= stop
                    and u16(s, off + 2) == state.prefs.tcp_exid
                break
            end
            if kind == OPT_SACK then
                local n = seg.n_sack
                for i = 0, math.floor((len - 2) / 8) - 1 do
                    if n >= TCP_MAX_BLOCKS then break end
                    n = n + 1
                    seg.sack_left[n] = u32(s, off + 2 + 8 * i)
                    seg.sack_right[n] = u32(s, off + 6 + 8 * i)
                end
                seg.n_sack = n
            elseif kind == OPT_EXP_FD or kind == OPT_EXP_FE then
                local o = nr_option_parse(s, off, len)
                if o then
                    if tree then add_nr_option_fields(tree, base, o) end
                    if not seg.nr then seg.nr = o end
                end
            elseif kind == OPT_MPTCP and seg.n_mptcp < TCP_MAX_MPTCP_OPTS then
                local n = seg.n_mptcp + 1
                seg.n_mptcp, seg.mptcp_off[n], seg.mptcp_len[n] = n, off, len
            end
            off = off + len
        end
    end
    if hlen > #s then return nil end
    return seg
end

local function int32(x)
    x = x % TWO32
    if x >= TWO31 then return x - TWO32 end
    return x
end

-- Connections are listed by their port pair (lower port first), so both directions find the same
-- list; addresses are compared as Address objects (no strings built per packet).
-- Returns the index of c in the list and which end sent the segment, or nil.
local function conn_match(list, sport, dport, src, dst)
    for k = 1, #list do
        local c = list[k]
        local port, addr = c.port, c.addr_obj
        if port[0] == sport and port[1] == dport and addr[0] == src and addr[1] == dst then return k, 0 end
        if port[0] == dport and port[1] == sport and addr[0] == dst and addr[1] == src then return k, 1 end
    end
    return nil
end

local tcp_release -- below: a new connection's finish

local function tcp_find_conn(pinfo, seg, create)
    local sport, dport = seg.sport, seg.dport
    local src, dst = pinfo.net_src, pinfo.net_dst
    local key = sport < dport and sport * 65536 + dport or dport * 65536 + sport
    local list = state.tcp_conns[key]
    if not list then
        if not create then return nil end
        list = {}
        state.tcp_conns[key] = list
    end
    local k, from = conn_match(list, sport, dport, src, dst)
    local c = k and list[k]
    -- a new SYN (not a retransmission of the first) after the old connection starts a new one
    if c and create and seg.syn_flag and not seg.ack_flag and c.isn_known[0]
        and c.isn[0] ~= seg.seq and c.dir[0] and c.dir[0].sb.have_data then
        c = nil
    end
    if not c then
        if not create then return nil end
        -- a SYN-ACK seen first: its receiver is the initiator
        local i = (seg.syn_flag and seg.ack_flag) and 1 or 0
        c = {
            port = {}, addr_obj = {}, syn_seen = {}, nr_permitted = {}, nr_flags = {}, dir = {},
            hs = handshake_new(), is_mptcp = false, mptcp = nil, isn_known = {}, isn = {}, finish = tcp_release,
            -- MPTCP's tables come with its options (tcp_dissect): a flood's connections mostly never need them
        }
        c.addr_obj[i], c.addr_obj[1 - i] = src, dst
        c.port[i], c.port[1 - i] = sport, dport
        list[k or #list + 1] = c
        from = (sport == c.port[0] and src == c.addr_obj[0]) and 0 or 1
    end
    return c, from
end

-- A connection's directions are made at its first segment that is not a bare SYN (no ack, no payload, no NR
-- blocks): a bare SYN feeds them nothing but its anchor, kept until then in c.bare_syns, so a SYN flood's
-- connections hold no scoreboards (as the analyzer's dormant flows, decisions.md 85).
local function init_tcp_dirs(c)
    for i = 0, 1 do
        c.dir[i] = flow_dir_new(c.stream, i, "tcp", false, "TN-04", "TN-03")
        c.dir[i].hs = c.hs
        set_endpoints(c.dir[i], endpoint_str(c.addr_obj[i], c.port[i]), endpoint_str(c.addr_obj[1 - i], c.port[1 - i]))
    end
    local syns = c.bare_syns or NO_ITEMS -- each: the sender, its first byte; as tcp_dissect would have fed them
    for k = 1, #syns, 2 do serial_anchor(c.dir[syns[k]].sb.space, syns[k + 1]) end
    if c.bare_syn_nr then c.dir[0].nr_mode, c.dir[1].nr_mode = true, true end
    c.bare_syns = nil
end

local function analyze_tcp(seg, payload_len, c, from, fr)
    local mine, peer = c.dir[from], c.dir[1 - from]
    if payload_len > 0 then
        local seq = unwrap(fr, mine, seg.seq, "sequence number")
        if seq then rtxq_on_data(fr, mine, seq, seq + payload_len, payload_len) end
    end
    if seg.nr_overruns then
        raise(fr, "TN-05", false, "NR-SACK option length runs past the end of the TCP options")
    end
    local o = seg.nr
    local nr_blocks_option = o and not o.permitted
    if nr_blocks_option then
        local handshake = c.syn_seen[0] and c.syn_seen[1]
        if not (c.nr_permitted[0] and c.nr_permitted[1]) then
            raise(fr, "TN-01", not handshake, "NR-SACK block option without NR-SACK-Permitted on both SYN and SYN-ACK")
        end
        if o.bad_length then
            raise(fr, "TN-05", false, "NR-SACK option length is not 4 + 8n with n = 1..4")
        end
        for i = 1, #o.left do
            if int32(o.right[i] - o.left[i]) <= 0 then
                raise(fr, "TN-05", false, string.format("NR-SACK block %d: left %d >= right %d", i, o.left[i], o.right[i]))
            elseif seg.ack_flag and int32(o.left[i] - seg.ack) <= 0 then
                raise(fr, "TN-05", false, string.format("NR-SACK block %d (%d-%d) at or below the ack %d",
                    i, o.left[i], o.right[i], seg.ack))
            end
        end
        local overlap = false
        for i = 1, #o.left do
            for j = 1, seg.n_sack do
                if not overlap and int32(o.left[i] - seg.sack_right[j]) < 0 and int32(seg.sack_left[j] - o.right[i]) < 0 then
                    raise(fr, "TN-02", false, string.format("SACK block %d-%d and NR-SACK block %d-%d overlap",
                        seg.sack_left[j], seg.sack_right[j], o.left[i], o.right[i]))
                    overlap = true
                end
            end
        end
        peer.nr_mode = true
    end
    if not seg.ack_flag then return end
    local ack = unwrap(fr, peer, seg.ack, "ack")
    if not ack then return end
    -- never-renege receiver (decisions 9): its SACK blocks are non-renegable
    local never_renege = c.nr_permitted[from] and has_flag(c.nr_flags[from] or 0, 0x01)
    local sack, nr = NO_ITEMS, NO_ITEMS -- most acks carry no blocks
    if seg.n_sack > 0 then
        if never_renege then nr = {} else sack = {} end
        local list = never_renege and nr or sack
        for i = 1, seg.n_sack do
            -- block edges lie near the ack: they never move the space's reference
            list[i] = {nearest(ack, seg.sack_left[i]), nearest(ack, seg.sack_right[i])}
        end
    end
    if nr_blocks_option and not o.bad_length then -- an option failing its length check feeds nothing
        if nr == NO_ITEMS then nr = {} end
        for i = 1, #o.left do
            nr[#nr + 1] = {nearest(ack, o.left[i]), nearest(ack, o.right[i])}
        end
    end
    if not peer.sb.have_data then -- the SYN-ACK, or a capture that starts mid-connection
        rtxq_ack_before_data(peer, ack, sack, nr)
    else
        rtxq_on_ack(fr, peer, ack, sack, nr, REVOKE_IN_SPAN, 0)
    end
end

------------------------------------------------------------------------------------------------
-- MPTCP (packet-nrsack-mptcp.c): data-level NR-SACK; subflows tied to their connection by RFC 8684 tokens
------------------------------------------------------------------------------------------------

local SUB_MP_CAPABLE, SUB_MP_JOIN, SUB_DSS = 0x0, 0x1, 0x2
local DSS_A, DSS_a, DSS_M, DSS_m, DSS_N, DSS_n = 0x01, 0x02, 0x04, 0x08, 0x20, 0x40
local MAX_NR_BLOCKS = 32
-- Data-level numbers are (high, low) pairs of 32-bit words, high = 0 for 4-octet values: doubles
-- would lose the low bits of a 64-bit DSN, and a table or UInt64 per number costs an allocation.
local function to_u64(hi, lo) return UInt64.new(lo, hi) end
local function dl_less(a_hi, a_lo, b_hi, b_lo) return a_hi < b_hi or (a_hi == b_hi and a_lo < b_lo) end
local function dl_number(hi, lo) return hi * TWO32 + lo end

local function new_mptcp_conn(sub)
    local stream = new_stream_index()
    local m = {stream = stream, handshake_seen = false, capable = false, csum_known = false, csum = false,
               token_known = {}, token = {}, dir = {}, live = 0, subflows = {}, -- live: the subflows not ended
               idsn_anchor = {}, wide_offset_hi = {}, -- as packet-nrsack-mptcp.c's
               finish = open_flows.finish_subflows}
    for i = 0, 1 do
        m.dir[i] = flow_dir_new(stream, i, "mptcp", false, "MN-04", "MN-03")
        m.dir[i].gap_from_sacked = true
        m.dir[i].hs = sub.hs -- the initial subflow's
        set_endpoints(m.dir[i], endpoint_str(sub.addr_obj[i], sub.port[i]), endpoint_str(sub.addr_obj[1 - i], sub.port[1 - i]))
    end
    sub.mptcp_side[0], sub.mptcp_side[1] = 0, 1
    open_flows.attach(m, sub)
    return m
end

-- A 64-bit data-level number (high, low words) of m.dir[side] as a serial: from 2^52 up made relative
-- to the direction's first one less 256 * 2^32 (whole multiples of 2^32 keep the low 32 bits, which
-- 4-octet numbers unwrap against), so serials stay exact doubles (packet-nrsack-mptcp.c's wide_serial).
local WIDE_AS_IS_BELOW_HI = 1048576 -- 2^20 high words: 2^52
local function wide_serial(m, side, hi, lo)
    if not m.wide_offset_hi[side] then
        m.wide_offset_hi[side] = hi < WIDE_AS_IS_BELOW_HI and 0 or hi - 256
    end
    return (hi - m.wide_offset_hi[side]) * TWO32 + lo
end

local function learn_key(sub, ep, s, off)
    if sub.key_known[ep] or not sub.mptcp then return end
    sub.key_known[ep] = true
    local key = s:sub(off + 1, off + 8)
    local m = sub.mptcp
    local side = sub.mptcp_side[ep]
    local token, idsn_hi, idsn_lo
    if sub.mp_version == 0 then token, idsn_hi, idsn_lo = sha1_token_idsn(key)
    else token, idsn_hi, idsn_lo = sha256_token_idsn(key) end
    local space = m.dir[side].sb.space
    if not space.anchored then -- the first data byte is IDSN + 1; a key learned after the data anchors nothing
        if idsn_lo == TWO32 - 1 then idsn_hi, idsn_lo = (idsn_hi + 1) % TWO32, 0 else idsn_lo = idsn_lo + 1 end
        serial_take64(space, wide_serial(m, side, idsn_hi, idsn_lo))
        m.idsn_anchor[side] = true
    end
    m.token[side] = token
    m.token_known[side] = true
    state.mptcp_by_token[token] = m
end

local function handle_mp_capable(s, off, len, seg, sub, from)
    local flags = u8(s, off + 3)
    local syn, ack = seg.syn_flag, seg.ack_flag
    if syn and not ack then
        sub.mp_version = u8(s, off + 2) % 16
        if not sub.mptcp then new_mptcp_conn(sub) end
        sub.mp_capable_syn[0] = true
    end
    if not sub.mptcp then return end
    if syn then
        sub.mptcp.csum_known = true
        if has_flag(flags, 0x80) then sub.mptcp.csum = true end
        if ack then sub.mp_capable_syn[1] = true end
        if len >= 12 then learn_key(sub, from, s, off + 4) end
    elseif len >= 20 then
        learn_key(sub, from, s, off + 4)
        learn_key(sub, 1 - from, s, off + 12)
    end
end

local function handle_mp_join(s, off, len, seg, sub, from)
    if not seg.syn_flag or seg.ack_flag or len < 12 or sub.mptcp then
        return
    end
    local token = u32(s, off + 4)
    local m = state.mptcp_by_token[token]
    if not m then return end
    -- the token names the receiver of the SYN
    local receiver_side = (m.token_known[1] and m.token[1] == token) and 1 or 0
    sub.mptcp_side[from] = 1 - receiver_side
    sub.mptcp_side[1 - from] = receiver_side
    open_flows.attach(m, sub)
end

-- A 4- or 8-octet number as (high, low).
local function read_dl(s, off, wide)
    if wide then return u32(s, off), u32(s, off + 4) end
    return 0, u32(s, off)
end

-- The DSS option of one segment, with its NR blocks (offsets from the DATA ACK); nil when its length does not fit its flags.
-- One scratch table reused for every option (nothing keeps it); n_blocks counts its block lists.
local scratch_dss = {start_hi = {}, start_lo = {}, stop_hi = {}, stop_lo = {}, block_off = {}}
local function parse_dss(s, off, len, m)
    if len < 4 then return nil end
    local d = scratch_dss
    local flags = u8(s, off + 3)
    d.flags, d.has_ack, d.has_map, d.has_nr, d.nr_count_bad = flags, false, false, false, false
    d.k, d.k_off, d.n_blocks, d.ack_hi, d.ack_lo, d.ack_wide = 0, 0, 0, 0, 0, false
    local p, stop = off + 4, off + len
    if has_flag(flags, DSS_A) then
        local wide = has_flag(flags, DSS_a)
        local w = wide and 8 or 4
        if p + w > stop then return nil end
        d.ack_wide = wide
        d.ack_hi, d.ack_lo = read_dl(s, p, wide)
        d.has_ack = true
        p = p + w
    end
    if has_flag(flags, DSS_M) then
        local wide = has_flag(flags, DSS_m)
        local w = wide and 8 or 4
        if p + w + 6 > stop then return nil end
        d.dsn_wide = wide
        d.dsn_hi, d.dsn_lo = read_dl(s, p, wide)
        d.ssn = u32(s, p + w)
        d.dll = u16(s, p + w + 4)
        d.has_map = true
        p = p + w + 6
    end
    -- RFC 8684 3.3: without N the flags fix the length exactly (the checksum, 2 octets after a mapping,
    -- when negotiated: either length is legal), as the analyzer's reader checks it
    if not has_flag(flags, DSS_N) then
        if p == stop or (d.has_map and p + 2 == stop) then return d end
        return nil
    end
    d.has_nr = true
    local wide_blocks = has_flag(flags, DSS_n)
    local bs = wide_blocks and 16 or 8
    local rest = stop - p
    -- the checksum (if any) precedes the count byte; find which reading the length supports
    local fits_plain = rest >= 2 and rest == 2 + u8(s, p) * bs
    local fits_csum = d.has_map and rest >= 4 and rest == 4 + u8(s, p + 2) * bs
    local csum
    if m and m.csum_known and d.has_map then csum = m.csum else csum = (not fits_plain) and fits_csum end
    if csum then p = p + 2 end
    if p + 2 > stop then
        d.nr_count_bad = true
        return d
    end
    d.k = u8(s, p)
    d.k_off = p
    p = p + 2
    d.nr_count_bad = stop - p ~= d.k * bs
    local n = 0
    while n < d.k and p + bs <= stop and n < MAX_NR_BLOCKS do
        n = n + 1
        d.block_off[n] = p
        d.start_hi[n], d.start_lo[n] = read_dl(s, p, wide_blocks)
        d.stop_hi[n], d.stop_lo[n] = read_dl(s, p + bs / 2, wide_blocks)
        p = p + bs
    end
    d.n_blocks = n
    return d
end

local function add_dss_fields(tree, base, d)
    if not d.has_nr or not tree then return end
    local bs = has_flag(d.flags, DSS_n) and 16 or 8
    local w = bs == 16 and 8 or 4
    local st = tree:add(nrsack, base(d.k_off, 2 + d.n_blocks * bs), "MPTCP DSS NR blocks")
    st:add(hf.mptcp_wide, base(d.k_off, 1), has_flag(d.flags, DSS_n))
    if d.k_off ~= 0 then st:add(hf.mptcp_block_count, base(d.k_off, 1), d.k) end
    local ack = to_u64(d.ack_hi, d.ack_lo)
    for i = 1, d.n_blocks do
        st:add(hf.mptcp_block_start, base(d.block_off[i], w), ack + to_u64(d.start_hi[i], d.start_lo[i]))
        st:add(hf.mptcp_block_end, base(d.block_off[i] + w, w), ack + to_u64(d.stop_hi[i], d.stop_lo[i]))
    end
end


-- The first data-level number on the wire of direction side, against the IDSN + 1 its key gave: the
-- wire anchors instead when it lies more than SERIAL_FAR away (packet-nrsack-mptcp.c's check_idsn_anchor, decisions 40).
local function check_idsn_anchor(m, side, hi, lo, wide)
    if not m.idsn_anchor[side] then return end
    m.idsn_anchor[side] = false
    local space = m.dir[side].sb.space
    local x = wide and (hi - m.wide_offset_hi[side]) * TWO32 + lo or nearest(space.highest, lo)
    if math.abs(x - space.highest) > SERIAL_FAR then
        space.anchored, space.highest, space.candidate_set, space.candidate = false, 0, false, 0
        m.wide_offset_hi[side] = nil
    end
end

-- Data-level number -> scoreboard number: 32-bit values unwrap, 64-bit ones are taken (wide_serial),
-- both under the far guard; nil (reported) when far away.
local function unwrap_dl(fr, m, side, what, hi, lo, wide)
    local dir = m.dir[side]
    check_idsn_anchor(m, side, hi, lo, wide)
    if not wide then return unwrap(fr, dir, lo, what) end
    return unwrap(fr, dir, wide_serial(m, side, hi, lo), what, true, tostring(to_u64(hi, lo)))
end

-- One direction of a subflow (decisions 12): its mapped segments {lo, hi, dsn} (subflow bytes -> DSNs,
-- sorted by subflow sequence number, first transmissions; live from index `first`; a segment that
-- continues the last one in both numbering spaces widens it, so in-order data is one entry) and the
-- highest subflow ack the data level has taken in.
local function sub_maps(sub, dir)
    local m = sub.sent_maps[dir]
    if not m then
        m = {v = {}, first = 1, ref = nil, cum = nil}
        sub.sent_maps[dir] = m
    end
    return m
end

-- A subflow sequence number, unwrapped next to the highest seen (only to find mapped bytes: the
-- scoreboard's spaces are the data level's).
local function sub_unwrap(m, v)
    if not m.ref then
        m.ref = SERIAL_ORIGIN + v
        return m.ref
    end
    local x = nearest(m.ref, v)
    if x > m.ref then m.ref = x end
    return x
end

-- index of the first live entry with hi > x
local function sub_maps_find(m, x)
    local v = m.v
    local a, b = m.first, #v + 1
    while a < b do
        local mid = a + b
        mid = (mid - mid % 2) / 2 -- floor without a library call
        if v[mid][2] <= x then a = mid + 1 else b = mid end
    end
    return a
end

local function sub_maps_add(m, lo, hi, dsn)
    local v = m.v
    local at = #v + 1
    -- the last entry reaching past lo (a widened one may start below it): the place must be searched
    if #v >= m.first and v[#v][2] > lo then
        at = sub_maps_find(m, lo)
        if at <= #v and v[at][1] <= lo then return end -- a retransmission: its bytes are mapped already
    end
    if m.first > 1 and (m.first - 1) * 2 >= #v then -- drop the entries trimmed away
        local live = {}
        for i = m.first, #v do live[#live + 1] = v[i] end
        at = at - (m.first - 1)
        m.v, m.first, v = live, 1, live
    end
    local last = v[at - 1]
    if at == #v + 1 and at > m.first and last[2] == lo and last[3] + (lo - last[1]) == dsn then
        last[2] = hi
        return
    end
    table.insert(v, at, {lo, hi, dsn})
end

-- Appends the DSN ranges of subflow bytes [lo, hi) to out (a list of {lo, hi}), merging adjacent ones.
local function sub_maps_to_dsn(m, lo, hi, out)
    local v = m.v
    local n = #out
    for i = sub_maps_find(m, lo), #v do
        local e = v[i]
        local e_lo, e_hi, dsn = e[1], e[2], e[3]
        if e_lo >= hi then break end
        local a = dsn + ((lo > e_lo and lo or e_lo) - e_lo)
        local b = dsn + ((hi < e_hi and hi or e_hi) - e_lo)
        if n > 0 and out[n][2] == a then
            out[n][2] = b
        else
            n = n + 1
            out[n] = {a, b}
        end
    end
end

-- The DSNs a subflow ack covers: what its cum ack covers beyond the subflow's previous data-level ack,
-- and its SACK (and TCP NR-SACK) blocks, through the mapped segments of direction dir. The result
-- is one scratch list reused for every ack (read at once by rtxq_on_received).
local acked_dsns = {}
local function subflow_acked_dsns(seg, sub, dir)
    local out = acked_dsns
    for k = #out, 1, -1 do out[k] = nil end
    local m = sub.sent_maps[dir]
    if not m or not seg.ack_flag then return out end
    local ack = sub_unwrap(m, seg.ack)
    local from = m.cum or (m.v[m.first] and m.v[m.first][1]) or ack
    if ack > from then sub_maps_to_dsn(m, from, ack, out) end
    if not m.cum or ack > m.cum then m.cum = ack end
    for i = 1, seg.n_sack do
        sub_maps_to_dsn(m, sub_unwrap(m, seg.sack_left[i]), sub_unwrap(m, seg.sack_right[i]), out)
    end
    local o = seg.nr
    if o and not o.permitted then
        for i = 1, #o.left do sub_maps_to_dsn(m, sub_unwrap(m, o.left[i]), sub_unwrap(m, o.right[i]), out) end
    end
    m.first = sub_maps_find(m, m.cum) -- bytes below the subflow's cum ack are never looked up again
    return out
end

-- The data-level bytes a segment carries (packet-nrsack-mptcp.c's mptcp_payload, decisions 70): its
-- payload bytes the subflow's current mapping covers, at their DSNs; a mapping's length bounds them
-- (0: an infinite mapping) and never adds bytes.
local function mptcp_payload(seg, payload_len, sub, from, fr)
    local m = sub.mptcp
    local mine = m.dir[sub.mptcp_side[from]]
    if payload_len == 0 or not sub.map_known[from] or not mine.sb then return end -- no sb: released
    local off = int32(seg.seq - sub.map_seq[from])
    local lo, hi = math.max(off, 0), off + payload_len
    if sub.map_len[from] > 0 then hi = math.min(hi, sub.map_len[from]) end
    if hi <= lo then return end
    local dsn = sub.map_dsn[from] + lo
    rtxq_on_data(fr, mine, dsn, dsn + hi - lo, hi - lo)
    local sm = sub_maps(sub, from)
    local first = sub_unwrap(sm, seg.seq) + lo - off
    sub_maps_add(sm, first, first + hi - lo, dsn)
end

local function analyze_dss(d, seg, payload_len, sub, from, fr)
    local m = sub.mptcp
    local side = sub.mptcp_side[from]
    local peer = m.dir[1 - side]
    local map_dsn = d.has_map and unwrap_dl(fr, m, side, "DSN", d.dsn_hi, d.dsn_lo, d.dsn_wide)
    if map_dsn then
        sub.map_known[from] = true
        sub.map_dsn[from] = map_dsn
        sub.map_seq[from] = sub.isn_known[from] and (sub.isn[from] + d.ssn) % TWO32 or seg.seq
        sub.map_len[from] = d.dll
    end
    mptcp_payload(seg, payload_len, sub, from, fr)
    local start_hi, start_lo, stop_hi, stop_lo = d.start_hi, d.start_lo, d.stop_hi, d.stop_lo
    if d.has_nr then
        if not m.capable then
            raise(fr, "MN-01", not m.handshake_seen,
                "DSS NR blocks although SYN and SYN-ACK did not both carry NR-SACK-Permitted with flag 0x02")
        end
        if not d.has_ack then raise(fr, "MN-02", false, "DSS flag N without a DATA ACK") end
        if d.nr_count_bad then
            raise(fr, "MN-02", false, string.format("NR block count %d disagrees with the option length", d.k))
        end
        for i = 1, d.n_blocks do
            if not dl_less(start_hi[i], start_lo[i], stop_hi[i], stop_lo[i]) then
                raise(fr, "MN-05", false, string.format("NR block %d: Start %s >= End %s", i,
                    tostring(to_u64(start_hi[i], start_lo[i])), tostring(to_u64(stop_hi[i], stop_lo[i]))))
            elseif i > 1 and dl_less(start_hi[i], start_lo[i], stop_hi[i - 1], stop_lo[i - 1]) then
                raise(fr, "MN-05", false, string.format("NR block %d overlaps or is below the previous one", i))
            end
        end
        peer.nr_mode = true
    end
    if not d.has_ack then return end
    local received = subflow_acked_dsns(seg, sub, 1 - from)
    if not peer.sb.have_data then return end
    local cum = unwrap_dl(fr, m, 1 - side, "DATA ACK", d.ack_hi, d.ack_lo, d.ack_wide)
    if not cum then return end
    local nr = NO_ITEMS
    -- NR blocks whose count the option cannot hold feed nothing (docs/scoreboard.md); the ack then says
    -- nothing reliable about non-renegable data either (decisions 40)
    for i = 1, d.nr_count_bad and 0 or d.n_blocks do
        if dl_less(start_hi[i], start_lo[i], stop_hi[i], stop_lo[i]) then
            if nr == NO_ITEMS then nr = {} end
            nr[#nr + 1] = {cum + dl_number(start_hi[i], start_lo[i]), cum + dl_number(stop_hi[i], stop_lo[i])}
        end
    end
    rtxq_on_ack(fr, peer, cum, NO_ITEMS, nr, d.nr_count_bad and REVOKE_NONE or REVOKE_IN_SPAN, sub) -- the path: the subflow
    rtxq_on_received(fr, peer, received)
end

local function mptcp_segment(s, base, tree, seg, payload_len, sub, from, fr)
    local had_dss, analyzed = false, false
    for i = 1, seg.n_mptcp do
        local off, len = seg.mptcp_off[i], seg.mptcp_len[i]
        if len >= 3 then
            local subtype = math.floor(u8(s, off + 2) / 16)
            if fr and subtype == SUB_MP_CAPABLE and len >= 4 then
                handle_mp_capable(s, off, len, seg, sub, from)
            elseif fr and subtype == SUB_MP_JOIN then
                handle_mp_join(s, off, len, seg, sub, from)
            elseif subtype == SUB_DSS and not had_dss then
                had_dss = true
                local d = parse_dss(s, off, len, sub.mptcp)
                if not d then
                    raise(fr, "GEN-01", false, string.format("DSS option length %d does not fit its flags 0x%02X (RFC 8684 3.3)",
                        len, len >= 4 and u8(s, off + 3) or 0))
                else
                    add_dss_fields(tree, base, d)
                    if fr then
                        if not sub.mptcp then new_mptcp_conn(sub) end -- the handshake was not captured
                        analyze_dss(d, seg, payload_len, sub, from, fr)
                        analyzed = true
                    end
                end
            end
        end
    end
    if not fr then return end
    local m = sub.mptcp or new_mptcp_conn(sub)
    -- no readable DSS: the payload continues the current mapping
    if not analyzed then mptcp_payload(seg, payload_len, sub, from, fr) end
    if seg.syn_flag and seg.ack_flag and sub.mp_capable_syn[0] and sub.mp_capable_syn[1] then
        -- the initial subflow's handshake decides the data-level capability
        m.handshake_seen = true
        m.capable = has_flag(sub.nr_flags[0] or 0, 0x02) and has_flag(sub.nr_flags[1] or 0, 0x02)
            and sub.nr_permitted[0] and sub.nr_permitted[1] or false
        if m.capable then m.dir[0].nr_mode, m.dir[1].nr_mode = true, true end
    end
    fr.stream = m.stream
end

-- A connection ends on RST, or once each end's FIN is acked: it leaves the lookups and its state goes;
-- an MPTCP connection goes with its last subflow.
function tcp_release(c)
    open_flows.remove(c)
    local sport, dport = c.port[0], c.port[1]
    local key = sport < dport and sport * 65536 + dport or dport * 65536 + sport
    local list = state.tcp_conns[key]
    for k = #(list or NO_ITEMS), 1, -1 do
        if list[k] == c then table.remove(list, k) end
    end
    if list and #list == 0 then state.tcp_conns[key] = nil end
    release_dirs(c.dir)
    c.sent_maps = nil
    local m = c.mptcp
    if m then
        m.live = m.live - 1
        m.subflows[c] = nil
        if m.live == 0 then
            open_flows.remove(m)
            for side = 0, 1 do
                if m.token_known[side] and state.mptcp_by_token[m.token[side]] == m then
                    state.mptcp_by_token[m.token[side]] = nil
                end
            end
            release_dirs(m.dir)
        end
    end
end

local function tcp_track_end(c, seg, from, payload_len)
    if has_flag(seg.flags, TCP_FLAG_RST) then return tcp_release(c) end -- with data too (decisions.md 44)
    if has_flag(seg.flags, TCP_FLAG_FIN) then
        c.fin_end = c.fin_end or {}
        c.fin_end[from] = (seg.seq + payload_len + 1) % TWO32
    end
    local peer_fin = c.fin_end and c.fin_end[1 - from]
    if seg.ack_flag and peer_fin and int32(seg.ack - peer_fin) >= 0 then
        c.fin_acked = c.fin_acked or {}
        c.fin_acked[1 - from] = true
        if c.fin_acked[from] then tcp_release(c) end
    end
end

-- One TCP segment: s = its header bytes, base = the TvbRange they came from.
local function tcp_dissect(s, base, pinfo, tree, payload_len, fr)
    local seg = parse_segment(s, base, tree)
    if not seg then
        raise(fr, "GEN-01", false, "TCP header truncated or bad data offset")
        return
    end
    local c, from = tcp_find_conn(pinfo, seg, fr ~= nil)
    if not c then
        -- shown again after its connection ended: the DSS fields need no state
        if seg.n_mptcp > 0 then mptcp_segment(s, base, tree, seg, payload_len, {}, 0, nil) end
        return
    end
    if fr then
        open_flows.touch(c.mptcp or c, payload_len > 0)
        local syn = seg.syn_flag
        if syn then
            handshake_step(c.hs, seg.ack_flag and 1 or 0)
        elseif seg.ack_flag and from == 0 then
            handshake_step(c.hs, 2)
        end
        if syn then
            local ep = seg.ack_flag and 1 or 0
            c.syn_seen[ep] = true
            c.nr_permitted[from] = seg.nr ~= nil and seg.nr.permitted
            c.nr_flags[from] = c.nr_permitted[from] and seg.nr.flags or 0
            c.isn_known[from] = true
            c.isn[from] = seg.seq
        end
        if not c.is_mptcp and not c.stream then
            if seg.n_mptcp > 0 then
                c.is_mptcp = true
                c.mp_capable_syn, c.mp_version, c.key_known, c.mptcp_side, c.sent_maps = {}, 0, {}, {}, {}
                c.map_known, c.map_dsn, c.map_seq, c.map_len = {}, {}, {}, {}
            else
                c.stream = new_stream_index()
            end
        end
        local bare_syn = syn and not seg.ack_flag and payload_len == 0 and not (seg.nr and not seg.nr.permitted)
        if not c.is_mptcp and not c.dir[0] and not bare_syn then init_tcp_dirs(c) end
        if syn and not c.is_mptcp then
            -- both ends permitted NR-SACK: the RtxQ is that of an NR-SACK sender
            local negotiated = c.nr_permitted[0] and c.nr_permitted[1]
            local first_byte = (seg.seq + 1) % TWO32 -- the first byte after the SYN anchors the direction
            if c.dir[0] then
                if negotiated then c.dir[0].nr_mode, c.dir[1].nr_mode = true, true end
                serial_anchor(c.dir[from].sb.space, first_byte)
            else
                local syns = c.bare_syns or {}
                syns[#syns + 1] = from
                syns[#syns + 1] = first_byte
                c.bare_syns = syns
                c.bare_syn_nr = c.bare_syn_nr or negotiated
            end
        end
    end
    if c.is_mptcp then
        mptcp_segment(s, base, tree, seg, payload_len, c, from, fr)
    elseif fr then
        fr.stream = c.stream
        analyze_tcp(seg, payload_len, c, from, fr)
    end
    if fr then tcp_track_end(c, seg, from, payload_len) end
end

------------------------------------------------------------------------------------------------
-- Output: the cached frame result as tree items and expert info
------------------------------------------------------------------------------------------------

-- The figures are queue sizes; clamp rather than wrap if a corrupt capture makes them huge or negative
-- (the C plugin's unsigned arithmetic turns a negative one into a huge one, then clamps it too).
local function queue_u32(v)
    if v < 0 or v > 4294967295 then return 4294967295 end
    return v
end

-- Stored results, kept for the whole file and so kept compact (decisions.md 84): one frame of a flood costs
-- a slot or a few. A frame's entry in state.at (frame_at) is 0 when it shows nothing, -(stream + 1) when it
-- shows only its stream (most frames of a flood), else where its record starts in state.rec:
--   a head, stream_code * 4 + n_upd (stream_code: stream + 1, or 0 for none), then n_upd times UPD_SLOTS:
--   the shown direction (its label and estimate's view, shown_sync), rtxq_sack, nr_acked, sacked,
--   freed_bytes|false (not an ack), flags (FLAG_*), after_new_sack, after_new_nr.
-- What few frames have lies apart, by record: state.rec_rtt, state.rec_findings; by update: state.rec_revoked.
-- Both arrays are made of CHUNK-slot tables: one Lua array grows by doubling, which leaves up to half of
-- it unused and holds the old and the new part at once while it grows.
local stored = {UPD_SLOTS = 8, CHUNK = 65536, FLAG = {nr_figure = 1, blocked = 2, gap_open = 4}}
do
local UPD_SLOTS, CHUNK = stored.UPD_SLOTS, stored.CHUNK

function stored.frame_at(number)
    local c = state.at[math.floor(number / CHUNK)]
    return c and c[number % CHUNK + 1]
end

function stored.set_frame_at(number, at)
    local k = math.floor(number / CHUNK)
    local c = state.at[k]
    if not c then
        c = {}
        state.at[k] = c
        if k > state.at_top then state.at_top = k end
    end
    c[number % CHUNK + 1] = at
end

-- A record's chunk and its offset there: a record never spans two chunks.
function stored.record_slots(i) return state.rec[math.floor(i / CHUNK)], i % CHUNK end

function stored.store(fr)
    local n_upd = fr.n_upd
    if n_upd == 0 and fr.findings == NO_ITEMS and not fr.rtt_ms then return fr.stream and -(fr.stream + 1) or 0 end
    local size = 1 + n_upd * UPD_SLOTS
    local i = state.rec_n + 1
    if i % CHUNK == 0 or i % CHUNK + size > CHUNK then i = (math.floor(i / CHUNK) + 1) * CHUNK + 1 end
    local k = math.floor(i / CHUNK)
    local c = state.rec[k]
    if not c then
        c = {}
        state.rec[k] = c
    end
    local o = i % CHUNK
    c[o] = (fr.stream and fr.stream + 1 or 0) * 4 + n_upd
    if fr.rtt_ms then state.rec_rtt[i] = fr.rtt_ms end
    if fr.findings ~= NO_ITEMS then state.rec_findings[i] = fr.findings end
    local s = o + 1
    for n = 1, n_upd do
        local u = fr.upd[n]
        c[s], c[s + 1], c[s + 2], c[s + 3] = u.dir.shown, u.rtxq_sack, u.nr_acked, u.sacked
        c[s + 4] = u.is_ack and u.freed_bytes
        c[s + 5] = (u.nr_figure and stored.FLAG.nr_figure or 0) + (u.blocked and stored.FLAG.blocked or 0) +
            (u.gap_open and stored.FLAG.gap_open or 0)
        c[s + 6], c[s + 7] = u.after_new_sack, u.after_new_nr
        if u.revoked ~= NO_ITEMS then state.rec_revoked[i + s - o] = u.revoked end
        s = s + UPD_SLOTS
    end
    state.rec_n = i + size - 1
    return i
end
end

local SBE_VERDICTS = {[0] = "held back", "never", "cannot tell"} -- as the analyzer's summary says them

-- The update at c[s] of frame `number`: its nrsack.blocked (nil: cannot tell) and the view of B it used.
local function stored_blocked(c, s, number, shown_again)
    local d = c[s]
    local view = sndbuf_view(d, shown_again)
    if not view.given and view.r.verdict == sbe.CANNOT_TELL then return nil, view end
    local flags = c[s + 5]
    return update_blocked(d, view, number, has_flag(flags, stored.FLAG.blocked), c[s + 6], c[s + 7], c[s + 1], c[s + 2],
        has_flag(flags, stored.FLAG.gap_open)), view
end

-- Which B nrsack.blocked used and how it was obtained (docs/fields.md).
local function add_sndbuf(t, view)
    if view.sndbuf > 0 then t:add(hf.sndbuf_bytes, view.sndbuf) end
    t:add(hf.sndbuf_source, view.given and "given" or view.whole and "estimated from the whole capture" or "estimated so far")
    if view.given then return end
    t:add(hf.sndbuf_verdict, SBE_VERDICTS[view.r.verdict])
    t:add(hf.sndbuf_reason, sbe.reason(view.r, view.where))
    t:add(hf.sndbuf_waits, math.min(view.r.waits, 4294967295))
end

local function emit_result(at, tree, number, shown_again)
    if at <= 0 then
        if at < 0 then tree:add(hf.stream, -at - 1):set_generated() end
        return
    end
    local c, o = stored.record_slots(at)
    local head = c[o]
    local stream_code, n_upd = math.floor(head / 4), head % 4
    if stream_code > 0 then tree:add(hf.stream, stream_code - 1):set_generated() end
    local rtt_ms = state.rec_rtt[at]
    if rtt_ms then tree:add(hf.fsack_rtt_ms, rtt_ms):set_generated() end
    local s = o + 1
    for _ = 1, n_upd do
        local d, rtxq_sack, nr_acked, sacked, freed_bytes, flags = c[s], c[s + 1], c[s + 2], c[s + 3], c[s + 4], c[s + 5]
        local blocked, view = stored_blocked(c, s, number, shown_again)
        local rtxq_nr = rtxq_sack - nr_acked
        -- one generated item per update holds its figures: marking each one costs a call per field
        local t = tree:add(hf.direction, d.label)
        t:set_generated()
        t:add(hf.rtxq_bytes, queue_u32(has_flag(flags, stored.FLAG.nr_figure) and rtxq_nr or rtxq_sack))
        t:add(hf.rtxq_sack_bytes, queue_u32(rtxq_sack))
        t:add(hf.rtxq_nr_bytes, queue_u32(rtxq_nr))
        t:add(hf.rtxq_nr_acked_bytes, queue_u32(nr_acked))
        t:add(hf.rtxq_sacked_bytes, queue_u32(sacked))
        t:add(hf.rtxq_whatif_bytes, queue_u32(rtxq_sack - sacked))
        if freed_bytes then t:add(hf.freed_bytes, queue_u32(freed_bytes)) end
        -- cannot tell: no verdict on the frame, the reason says why
        if blocked ~= nil then t:add(hf.blocked, blocked) end
        add_sndbuf(t, view)
        t:add(hf.gap_open, has_flag(flags, stored.FLAG.gap_open))
        local revoked = state.rec_revoked[at + s - o]
        if revoked then
            for r = 1, #revoked do t:add(hf.revoked, revoked[r]) end
        end
        s = s + stored.UPD_SLOTS
    end
    local findings = state.rec_findings[at]
    if findings then
        for f = 1, #findings do
            local x = findings[f]
            tree:add_proto_expert_info(x.note and rule_note_expert[x.id] or rule_expert[x.id], x.message)
        end
    end
end

------------------------------------------------------------------------------------------------
-- Postdissector
------------------------------------------------------------------------------------------------

local f_sctp = Field.new("sctp")
local f_tcp = Field.new("tcp")
local f_tcp_len = Field.new("tcp.len")
local f_icmp = Field.new("icmp")
local f_icmpv6 = Field.new("icmpv6")
local f_ip_len = Field.new("ip.len")
local f_ipv6_plen = Field.new("ipv6.plen")
local f_udp_length = Field.new("udp.length")

-- End (offset in the data source) of the innermost IP / UDP layer that encloses a layer starting at
-- `start`: the SCTP item's own length depends on whether a tree is built, the frame may carry a
-- trailer, so the enclosing length fields say where SCTP ends.
-- The innermost of the best so far and the length fields `...` (one field's values); a plain function
-- over varargs, not a closure over a table, as it runs three times on every SCTP packet.
local function consider_lengths(start, source, in_frame, header_at, fixed, best_start, best_end, ...)
    for i = 1, select("#", ...) do
        local x = select(i, ...)
        local s = x.offset - header_at
        -- a layer in the frame's own bytes is enclosed by layers there (reassembly makes new sources)
        if s < start and s > best_start and (in_frame or x.source == source) then
            best_start, best_end = s, s + fixed + x.value
        end
    end
    return best_start, best_end
end

local function enclosing_end(start, source, in_frame)
    local best_start, best_end = consider_lengths(start, source, in_frame, 2, 0, -1, nil, f_ip_len())
    best_start, best_end = consider_lengths(start, source, in_frame, 4, 40, best_start, best_end, f_ipv6_plen())
    local _, stop = consider_lengths(start, source, in_frame, 4, 0, best_start, best_end, f_udp_length())
    return stop
end

local function read_prefs()
    local p = nrsack.prefs
    return {
        sndbuf = p.sndbuf, tcp_exid = p.tcp_exid, fsack_init = p.fsack_init_type, fsack_ack = p.fsack_ack_type,
        fsack_complete = p.fsack_complete_type, sctp_udp_port = p.sctp_udp_port, max_open_flows = p.max_open_flows,
    }
end

function nrsack.init()
    -- A cycle of the collector starts when the heap has grown a fifth past what the last one kept, not
    -- doubled (Lua's default): the stored results and the open flows are most of the heap and stay, so on
    -- a flood the default let the heap reach twice the live tables (decisions.md 93); the cost, some CPU
    collectgarbage("setpause", 120)
    state = {
        prefs = read_prefs(),
        next_stream = 0,
        -- the stored frame results (stored.store): where each frame's is, by frame number (stored.frame_at), and
        -- the records, their rare parts apart
        at = {}, at_top = 0, rec = {}, rec_n = 0, rec_rtt = {}, rec_findings = {}, rec_revoked = {},
        sctp_by_endpoint = {}, -- port * 2^32 + tag -> association (the endpoint owning the tag)
        sctp_pending = {},     -- src port * 65536 + dst port -> association whose dst tag is unknown
        tcp_conns = {},        -- port pair -> its TCP connections (MPTCP subflows included), tcp_find_conn
        mptcp_by_token = {},   -- RFC 8684 token -> MPTCP connection
        open_lists = {[0] = {}, [1] = {}}, open_count = 0, -- the budget of open flows (open_flows.touch)
        released_early = {[0] = 0, [1] = 0},              -- flows it finished: without data, with data
        decisions = setmetatable({}, {__mode = "v"}),    -- the final decisions kept (sbe.shared)
    }
end

local registered_udp_port
local function register_udp_port()
    local udp = DissectorTable.get("udp.port")
    local sctp = Dissector.get("sctp")
    local port = nrsack.prefs.sctp_udp_port
    if registered_udp_port == port then return end
    if registered_udp_port and registered_udp_port ~= 0 then udp:remove(registered_udp_port, sctp) end
    if port ~= 0 then udp:add(port, sctp) end
    registered_udp_port = port
end

function nrsack.prefs_changed()
    register_udp_port()
end

function nrsack.dissector(tvb, pinfo, tree)
    -- headers quoted inside ICMP errors are not segments of the flow
    if f_icmp() or f_icmpv6() then return end
    local layer = f_sctp()
    local is_sctp = layer ~= nil
    if not is_sctp then
        layer = f_tcp()
        if not layer then return end
    end
    -- Analyze a frame the first time this plugin sees its layers (tshark -2 builds no tree in its first
    -- pass unless a filter or tap needs one), then only show the cached result.
    local fr
    local number = pinfo.number
    state.frame = number
    local at = stored.frame_at(number)
    -- a later dissection than the frame's first: the estimator has seen the whole capture (not pinfo.visited,
    -- which a tap sees set in tshark's single pass)
    local shown_again = at ~= nil
    if not at then fr = new_frame_result() end
    local subtree = tree:add(nrsack)
    local ok, err
    if is_sctp then
        local source, start = layer.source, layer.offset
        -- an IP length beyond the frame is bogus: Wireshark's IP layer then hands on the frame's bytes
        local stop = math.min(enclosing_end(start, source, source == tvb) or math.huge, source:reported_len())
        local captured = math.max(0, math.min(stop, source:len()) - start)
        ok, err = pcall(sctp_dissect, sctp_bytes(source, start, captured, stop - start), source, start, captured,
            stop - start, pinfo, subtree, fr)
    else
        -- the TCP item starts with the header (it covers just the header when a tree is built)
        local base = layer.range
        local len_fi = f_tcp_len()
        local header = base:raw()
        if not len_fi then
            -- no tcp.len: IP says less follows than the header claims (Wireshark's "short segment"), so
            -- the header is read only as far as IP says, as the C plugin reads its TCP tvb
            local source, start = layer.source, layer.offset
            local stop = math.min(enclosing_end(start, source, source == tvb) or math.huge, source:reported_len())
            header = header:sub(1, math.max(0, stop - start))
        end
        ok, err = pcall(tcp_dissect, header, base, pinfo, subtree, len_fi and len_fi.value or 0, fr)
    end
    if not ok and fr then
        -- a bug here must not hide the packet: report it where users look
        raise(fr, "GEN-01", false, "analysis stopped: " .. tostring(err))
    end
    if fr then
        open_flows.enforce(fr)
        at = stored.store(fr)
        stored.set_frame_at(number, at)
    end
    emit_result(at, subtree, number, shown_again)
end

register_postdissector(nrsack)
register_udp_port()

------------------------------------------------------------------------------------------------
-- Statistics: Statistics > NR-SACK in Wireshark's GUI, `-z nrsack,tree` in tshark; the C plugin's
-- stats tree of the same name shows the same figures (its data bytes aside: results keep none).
------------------------------------------------------------------------------------------------

-- Per flow direction, from the stored results of the frames dissected so far, in first-seen order.
local function statistics_text()
    local dirs, order, rules, rule_order = {}, {}, {}, {}
    local function count_update(stream, c, s, number)
        local name = string.format("Stream %s %s", tostring(stream or "-"), c[s].label)
        local d = dirs[name]
        if not d then
            d = {frames = 0, sum_sack = 0, sum_nr = 0, max_sack = 0, max_nr = 0, blocked = 0}
            dirs[name] = d
            order[#order + 1] = name
        end
        local rtxq_sack = queue_u32(c[s + 1])
        local rtxq_nr = queue_u32(c[s + 1] - c[s + 2])
        d.frames = d.frames + 1
        d.sum_sack, d.sum_nr = d.sum_sack + rtxq_sack, d.sum_nr + rtxq_nr
        d.max_sack, d.max_nr = math.max(d.max_sack, rtxq_sack), math.max(d.max_nr, rtxq_nr)
        -- drawn after the frames: the estimate from every frame dissected
        local blocked, view = stored_blocked(c, s, number, true)
        if blocked then d.blocked = d.blocked + 1 end
        d.view = view
    end
    for k = 0, state.at_top do -- the frames in order
        local frames = state.at[k] or NO_ITEMS
        for j = 1, stored.CHUNK do
            local at = frames[j]
            if at and at > 0 then
                local findings = state.rec_findings[at]
                for f = 1, findings and #findings or 0 do
                    local id = findings[f].id
                    if not rules[id] then rules[id] = 0; rule_order[#rule_order + 1] = id end
                    rules[id] = rules[id] + 1
                end
                local c, o = stored.record_slots(at)
                local stream_code, n_upd = math.floor(c[o] / 4), c[o] % 4
                for n = 0, n_upd - 1 do
                    count_update(stream_code > 0 and stream_code - 1 or nil, c, o + 1 + n * stored.UPD_SLOTS, k * stored.CHUNK + j - 1)
                end
            end
        end
    end
    local lines = {string.format("NR-SACK statistics; sndbuf preference: %d bytes%s", state.prefs.sndbuf,
        state.prefs.sndbuf > 0 and "" or " (0: B estimated per direction)")}
    for _, name in ipairs(order) do
        local d = dirs[name]
        lines[#lines + 1] = name
        lines[#lines + 1] = string.format("  Frames: %d", d.frames)
        lines[#lines + 1] = string.format("  RtxQ bytes (NR-SACK): mean %.2f, max %d", d.sum_nr / d.frames, d.max_nr)
        lines[#lines + 1] = string.format("  RtxQ bytes (SACK semantics): mean %.2f, max %d", d.sum_sack / d.frames,
            d.max_sack)
        lines[#lines + 1] = string.format("  Send-buffer blocked frames: %d", d.blocked)
        local view = d.view
        if view.given then
            lines[#lines + 1] = string.format("  Send buffer B: %d bytes, given", view.sndbuf)
        else
            lines[#lines + 1] = string.format("  Send buffer B: %s, estimated from the whole capture, %s: %s",
                view.sndbuf > 0 and string.format("%d bytes", view.sndbuf) or "none", SBE_VERDICTS[view.r.verdict],
                sbe.reason(view.r, view.where))
        end
    end
    local counts = {}
    for _, id in ipairs(rule_order) do counts[#counts + 1] = id .. "=" .. rules[id] end
    lines[#lines + 1] = "Rule findings: " .. (#counts > 0 and table.concat(counts, " ") or "none")
    return table.concat(lines, "\n") .. "\n"
end

-- Wireshark 4.0's Qt GUI shows no MENU_STAT_GENERIC entry; MENU_STAT_UNSORTED (renamed
-- MENU_PACKET_STAT_UNSORTED in 4.2) is the Statistics menu's section for protocol statistics.
if gui_enabled() then
    register_menu("NR-SACK", function()
        local window = TextWindow.new("NR-SACK statistics")
        window:set(statistics_text())
        window:add_button("Refresh", function() window:set(statistics_text()) end)
    end, MENU_PACKET_STAT_UNSORTED or MENU_STAT_UNSORTED)
end

-- tshark prints it after the last frame, as it does its own statistics.
register_stat_cmd_arg("nrsack,tree", function()
    local listener = Listener.new(nil, "nrsack")
    function listener.draw() io.write(statistics_text()) end
end)
