"""The v4 method's contract side: what every provider call goes through.

- :mod:`.base`: :class:`~.base.V4ProviderBase` (wallet, contract handles, reads, transactions
  with explained reverts, proof recording);
- :mod:`.events`: decoding the hook's, adapter's and PoolManager's logs;
- :mod:`.reverts`: what each custom error means and what to do about it.
"""
