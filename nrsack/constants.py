"""Wire constants of docs/wire-formats.md, in one place for all Python code.

Experimental code points (FSACK chunk types, TCP ExID) are the spec's defaults; the Wireshark
plugins expose the same values as preferences.
"""

# SCTP chunk types
SCTP_DATA = 0x00
SCTP_INIT = 0x01
SCTP_INIT_ACK = 0x02
SCTP_SACK = 0x03
SCTP_COOKIE_ECHO = 0x0A
SCTP_COOKIE_ACK = 0x0B
SCTP_NR_SACK = 0x10
FSACK_INIT = 0xA0
FSACK_ACK = 0xA1
FSACK_COMPLETE = 0xA2
FSACK_CHUNK_TYPES = (FSACK_INIT, FSACK_ACK, FSACK_COMPLETE)

# SCTP parameters
SCTP_PARAM_IPV4 = 5
SCTP_PARAM_IPV6 = 6
SCTP_PARAM_SUPPORTED_EXTENSIONS = 0x8008
SCTP_OVER_UDP_PORT = 9899

# The endpoints the simulator writes and the lab runs between, so both name their flows alike: path i
# from 10.0.i.1 (the sender) to 10.0.i.2 (the receiver), ports (sender's, receiver's)
SCTP_PORTS = (5001, 5002)
TCP_PORTS = (40000, 5201)  # a kernel's sender (the lab's) takes an ephemeral port of its own


def path_addresses(path):
    """(sender address, receiver address) of path `path`."""
    return f"10.0.{path}.1", f"10.0.{path}.2"


# TCP options
TCP_OPT_SACK_PERMITTED = 4
TCP_OPT_SACK = 5
TCP_OPT_MPTCP = 30
TCP_OPT_EXPERIMENTAL = (253, 254)
TCP_OPT_EXP_DEFAULT = 253
TCP_NRSACK_EXID = 0x4E52
NRSACK_FLAG_NEVER_RENEGE = 0x01
NRSACK_FLAG_MPTCP = 0x02
TCP_NRSACK_MAX_BLOCKS = 4

# MPTCP (RFC 8684) subtypes and DSS flags
MPTCP_MP_CAPABLE = 0x0
MPTCP_MP_JOIN = 0x1
MPTCP_DSS = 0x2
DSS_FLAG_A = 0x01  # DATA ACK present
DSS_FLAG_a = 0x02  # DATA ACK is 8 octets
DSS_FLAG_M = 0x04  # DSN, SSN, length (and checksum) present
DSS_FLAG_m = 0x08  # DSN is 8 octets
DSS_FLAG_F = 0x10  # DATA FIN
DSS_FLAG_N = 0x20  # NR blocks present
DSS_FLAG_n = 0x40  # NR block offsets are 8 octets

# FSACK procedure
FSACK_MAX_UPDATE_INTERVAL_S = 1.0
