"""SCTP labels in the papers' notation -> Scapy SCTP layers.

Grammar (chunks of one packet are joined with " + "):
  INIT [ext=0x10,0xA0]        INIT-ACK [ext=...]        COOKIE-ECHO        COOKIE-ACK
  DATA <tsn> [rtx] [ordered] [size=<bytes>]
  S:<cum>[;<start>-<end>,...][;D:<tsn>,...]                     SACK, gap blocks
  N:<cum>[;<nr blocks>][;R:<r blocks>][;NR:<nr blocks>][;D:...]  NR-SACK; bare blocks are NR blocks
  FSACK-INIT ts=<ms>   FSACK-ACK ts=<ms>   FSACK-COMPLETE <address>
Overrides for deliberately broken vectors: n_r=<k>, n_nr=<k>, len=<bytes> on an N: chunk.

Timeline options: `tags` {port: verification tag}, `initial_tsn` {port: tsn}, `addresses`
{port: [addresses, primary first]}, `payload` (bytes per DATA chunk), `unordered` (bool),
`a_rwnd` (bytes).
"""

from scapy.layers.sctp import (
    SCTP,
    SCTPChunkCookieAck,
    SCTPChunkCookieEcho,
    SCTPChunkData,
    SCTPChunkInit,
    SCTPChunkInitAck,
    SCTPChunkParamStateCookie,
    SCTPChunkSACK,
)

from nrsack.generator.layers import (
    SCTPChunkFsackAck,
    SCTPChunkFsackComplete,
    SCTPChunkFsackInit,
    SCTPChunkNRSACK,
    address_parameter,
    supported_extensions,
)
from .timeline import split_endpoint

COOKIE = b"nrsack-cookie-0123456789abcdef"


def _tokens(text):
    words = text.split()
    flags = {w for w in words[1:] if "=" not in w}
    settings = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    return words, flags, settings


def _blocks(text):
    """'2-2,4-5' -> ['2:2', '4:5'] (Scapy's gap block notation)."""
    return [b.replace("-", ":") for b in text.split(",") if b]


def _ack_parts(label):
    """'N:10;2-4;R:6-7;D:12' -> (cum, bare blocks, {prefix: blocks}, overrides)."""
    words = label.split()
    head, overrides = words[0], dict(w.split("=", 1) for w in words[1:] if "=" in w)
    kind_cum, *segments = head.split(";")
    cum = int(kind_cum.split(":")[1])
    bare, prefixed = [], {}
    for segment in segments:
        prefix, sep, rest = segment.partition(":")
        if sep:
            prefixed[prefix] = rest
        else:
            bare = _blocks(segment)
    return cum, bare, prefixed, overrides


def _init(timeline, step, ack):
    _, flags, settings = _tokens(step.label)
    opts = timeline.options
    _, port = split_endpoint(step.src)
    params = [address_parameter(a) for a in opts.get("addresses", {}).get(port, [])]
    if ack:
        params.insert(0, SCTPChunkParamStateCookie(cookie=COOKIE))
    if "ext" in settings:
        params.append(supported_extensions(*[int(x, 16) for x in settings["ext"].split(",")]))
    cls = SCTPChunkInitAck if ack else SCTPChunkInit
    chunk = cls(init_tag=opts["tags"][port], a_rwnd=opts.get("a_rwnd", 65536), n_out_streams=10,
                n_in_streams=10, init_tsn=opts["initial_tsn"][port], params=params)
    if params:
        # RFC 9260 3.2: the chunk length excludes the last parameter's padding (Scapy counts it).
        raw_params = [bytes(p) for p in params]
        last_length = int.from_bytes(raw_params[-1][2:4], "big")
        chunk.len = 20 + sum(map(len, raw_params)) - (len(raw_params[-1]) - last_length)
    return chunk


def _data(timeline, label):
    words, flags, settings = _tokens(label)
    size = int(settings.get("size", timeline.options.get("payload", 1000)))
    tsn = int(words[1])
    unordered = timeline.options.get("unordered", True) and "ordered" not in flags
    # A payload that names its TSN makes hex dumps easy to follow.
    payload = (b"TSN %d " % tsn).ljust(size, b".")[:size]
    return SCTPChunkData(tsn=tsn, stream_id=0, stream_seq=0, proto_id=0, unordered=int(unordered),
                         beginning=1, ending=1, data=payload)


def _sack(label):
    cum, bare, prefixed, _ = _ack_parts(label)
    return SCTPChunkSACK(cumul_tsn_ack=cum, a_rwnd=65536, gap_ack_list=bare,
                         dup_tsn_list=[int(t) for t in prefixed.get("D", "").split(",") if t])


def _nr_sack(label):
    cum, bare, prefixed, overrides = _ack_parts(label)
    chunk = SCTPChunkNRSACK(
        cumul_tsn_ack=cum, a_rwnd=65536,
        r_gap_ack_list=_blocks(prefixed.get("R", "")),
        nr_gap_ack_list=bare + _blocks(prefixed.get("NR", "")),
        dup_tsn_list=[int(t) for t in prefixed.get("D", "").split(",") if t])
    for key, field in (("n_r", "n_r_gap"), ("n_nr", "n_nr_gap"), ("len", "len")):
        if key in overrides:
            setattr(chunk, field, int(overrides[key]))
    return chunk


def _chunk(timeline, step, label):
    word = label.split()[0]
    if word == "INIT":
        return _init(timeline, step, ack=False)
    if word == "INIT-ACK":
        return _init(timeline, step, ack=True)
    if word == "COOKIE-ECHO":
        return SCTPChunkCookieEcho(cookie=COOKIE)
    if word == "COOKIE-ACK":
        return SCTPChunkCookieAck()
    if word == "DATA":
        return _data(timeline, label)
    if word.startswith("S:"):
        return _sack(label)
    if word.startswith("N:"):
        return _nr_sack(label)
    if word in ("FSACK-INIT", "FSACK-ACK"):
        cls = SCTPChunkFsackInit if word == "FSACK-INIT" else SCTPChunkFsackAck
        return cls(timestamp=int(_tokens(label)[2]["ts"]))
    if word == "FSACK-COMPLETE":
        return SCTPChunkFsackComplete(params=[address_parameter(label.split()[1])])
    raise ValueError("unknown SCTP label %r" % label)


def build(timeline, step):
    """The SCTP common header and the chunks of one step."""
    _, sport = split_endpoint(step.src)
    _, dport = split_endpoint(step.dst)
    labels = [part.strip() for part in step.label.split(" + ")]
    # INIT carries tag 0; every other packet the tag its receiver chose.
    tag = 0 if labels[0].split()[0] == "INIT" else timeline.options["tags"][dport]
    packet = SCTP(sport=sport, dport=dport, tag=tag)
    for label in labels:
        packet = packet / _chunk(timeline, step, label)
    return packet
