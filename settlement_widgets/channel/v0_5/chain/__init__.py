"""Nitrolite v0.5 on chain: the ``Custody`` contract's client and its typed events.

Modules: ``custody`` (:class:`~.custody.CustodyClient`, every entry point and view) and
``custody_events`` (one frozen dataclass per event, decoded from receipts and logs).
"""
