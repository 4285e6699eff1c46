"""The ``channel`` method on ERC-7824 / Nitrolite v0.5 (ClearNode).

Layers: ``core`` (pure rules: types, packing, ids, signatures, RPC frames, the client's
records, reply checks and step plans), ``chain`` (the ``Custody`` contract and its events),
``client`` (:class:`~.client.provider.ChannelProvider`, its store, the relay connection and
recovery) and ``node`` (our ClearNode-compatible relay, and the custody deployment it serves).
"""
