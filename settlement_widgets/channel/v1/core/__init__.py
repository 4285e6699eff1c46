"""Nitrolite v1 (Nitronode) protocol core: pure, I/O-free."""

__all__: list[str] = []
