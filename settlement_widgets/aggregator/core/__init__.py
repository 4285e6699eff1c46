"""The aggregator method's pure core: no sockets, no chain, no event loop.

- :mod:`.models` and :mod:`.parse`: LI.FI's answers as frozen values, parsed strictly;
- :mod:`.params`: a transfer request, checked, with chain and token names resolved;
- :mod:`.valuation` and :mod:`.ranking`: the USD arithmetic and the best-rate rule;
- :mod:`.plan`: the transactions a route asks the wallet to sign;
- :mod:`.frame`: routes as a pandas DataFrame and its styler;
- :mod:`.source`: whether answers are live LI.FI rates or a route server on this machine.

The effectful edges are :mod:`..client` (HTTP) and :mod:`..node` (our LI.FI-schema server).
"""
