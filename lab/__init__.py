"""nrsack.lab: real stacks over an emulated path (`nrsack lab run`, `nrsack lab sweep`).

usrsctp (FreeBSD's SCTP stack as a library) runs both endpoints in one process over AF_CONN, joined
by a link emulated in C (_usrsctp_lab.c): serialisation at the bandwidth, propagation delay, a
drop-tail queue, loss drawn from the seed and the packet number. See docs/lab.md.
"""
