"""nrsack.generator: Scapy layers for NR-SACK and FSACK, the papers' timelines, and the simulator."""
