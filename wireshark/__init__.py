"""`nrsack wireshark install|uninstall|status`: puts the nrsack plugin (C when the headers of the
installed Wireshark are present, Lua otherwise) and the "nrsack" configuration profile where the
installed tshark/Wireshark looks for them."""
