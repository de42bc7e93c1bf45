"""Capture -> events: the compiled libpcap / pcapng reader (_reader.c) and the event arrays it fills."""
