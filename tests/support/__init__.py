"""Helpers shared by the plugin tests: the tshark runner (tshark.py), small Scapy captures (pcaps.py)
and the sample captures with the checks against their expected files (samples.py)."""
