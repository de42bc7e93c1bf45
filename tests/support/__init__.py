"""Helpers shared by the plugin tests: the tshark runner (tshark.py) and small Scapy captures (pcaps.py)."""
