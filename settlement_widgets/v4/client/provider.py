"""V4Provider: register policies, check them, and settle signed intents through the adapter.

The provider is the effectful edge of the ``v4`` method: it reads the chain (ownership, the
adapter's EIP-712 domain, policies), sends transactions through the
:class:`~settlement_widgets.wallet.WalletClient`, and turns reverts into errors that name the
contract's custom error and say what to do. Everything it computes (digests, reason names, the
swap parameters, hook flags) comes from the pure modules next to it.

It never branches on the network's name: on Sepolia the same ``inspect()`` reads the chain and
finds the hook owned by the CREATE2 factory, so it says plainly that no policy can be set.

The provider is split by concern, one module each, combined here into :class:`V4Provider`:

* :mod:`..chain.base` - wallet, contracts, reads, transactions, proof recording (:class:`Tx`)
* :mod:`..chain.reverts` - what each custom error means and what to do
* :mod:`.inspection` - :meth:`V4Provider.inspect` and the owner classification
* :mod:`.policy_registration` - registering, updating and checking policies
* :mod:`.settlement` - solvers, approvals, signing and settling intents
"""

from __future__ import annotations

from ..chain.base import Tx
from .inspection import (
    DETERMINISTIC_PROXY_RUNTIME,
    InspectionMixin,
    OwnerKind,
    V4Inspection,
    classify_owner_code,
)
from .policy_registration import PolicyRegistrationMixin
from .settlement import SettlementMixin

__all__ = [
    "DETERMINISTIC_PROXY_RUNTIME",
    "OwnerKind",
    "Tx",
    "V4Inspection",
    "V4Provider",
    "classify_owner_code",
]


class V4Provider(InspectionMixin, PolicyRegistrationMixin, SettlementMixin):
    """The ``v4`` method on one network, acting as ``wallet``.

    ``network`` defaults to :func:`settlement_widgets.networks.get_network`; ``chain_id``,
    when given, must match it (it is what the original's ``initV4Provider`` took). Every
    real step is appended to the proof log (``settlement_widgets.proofs``).
    """
