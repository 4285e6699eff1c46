"""The v4 method's pure rules: no chain, no sockets, no event loop.

- :mod:`.flags`: hook permission flags and what an address's low bits grant;
- :mod:`.intents`: the intent, its EIP-712 domain, digest, id and signature;
- :mod:`.pool`: pool keys, pool ids and swap parameters;
- :mod:`.policy`: the per-intent policy and the hook's decision, with its reason codes;
- :mod:`.create2`: CREATE2 addresses and mining a salt whose address carries the flags.
"""
