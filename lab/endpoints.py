"""The lab's addresses and ports, in one place: the simulator's (nrsack.constants), so lab and
simulated runs name their flows alike, and the one form in which the compiled stacks take an address.

Path i runs from 10.0.i.1 (the sender) to 10.0.i.2 (the receiver); path 0's addresses are the only
ones of the single-path stacks. SCTP runs between ports 5001 and 5002 (AF_CONN, and over UDP on the
encapsulation port 9899, RFC 6951); Linux TCP and MPTCP connect to port 5201 from a port the kernel picks.
"""

import socket
import struct

from nrsack.constants import SCTP_OVER_UDP_PORT, SCTP_PORTS, TCP_PORTS, path_addresses

__all__ = ["SCTP_OVER_UDP_PORT", "SCTP_PORTS", "TCP_PORT", "SENDER", "RECEIVER", "path_addresses", "ipv4",
           "sctp_endpoints"]

TCP_PORT = TCP_PORTS[1]
SENDER, RECEIVER = path_addresses(0)


def ipv4(text):
    """An IPv4 address as the compiled lab takes it: an integer in host order (10.0.0.1 is 0x0A000001)."""
    return struct.unpack("!I", socket.inet_aton(text))[0]


def sctp_endpoints():
    """The SCTP association's sender and receiver as the analyzer names them: ("10.0.0.1:5001", ...)."""
    return tuple(f"{ip}:{port}" for ip, port in zip((SENDER, RECEIVER), SCTP_PORTS))
