"""The Nitrolite v1 client: :class:`~.provider.ChannelProviderV1` and what it stands on.

Modules: ``rpc_client`` (one WebSocket to a v1 node), ``store`` (what the client must not
lose, in SQLite), ``nonces`` (channel nonces that never collide), ``app_sessions`` and
``provider`` (the channel operations over node, hub and store).
"""
