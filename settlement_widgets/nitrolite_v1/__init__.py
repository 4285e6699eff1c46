"""Nitrolite v1 (Nitronode) protocol core: pure, I/O-free."""
