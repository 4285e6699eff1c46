"""Nitrolite v1 on chain: the ``ChannelHub`` contract's client and its error names.

Modules: ``hub`` (:class:`~.hub.ChannelHubClient`, :class:`~.hub.HubChainView`) and
``hub_errors`` (the selectors of every custom error of the hub, engines and validators).
"""
