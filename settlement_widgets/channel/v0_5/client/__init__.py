"""The Nitrolite v0.5 client: :class:`~.provider.ChannelProvider` and what it stands on.

The provider is composed of mixins (``_base``, ``connection``, ``operations``, ``steps``,
``transactions``, ``transfers``, ``notifications``, ``chain_events``, ``reading``); its
durable state is the SQLite ``store`` (``store_schema``, ``store_rows``, ``store_ops``,
``store_history``, ``write_group``); the relay is reached through ``relay_connection``,
``relay_auth`` and ``relay_client``; ``config`` says where custody, adjudicator and relay are.
"""
