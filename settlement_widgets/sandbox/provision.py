"""The sandbox's deployment phase: what ``LocalSandbox`` puts on a fresh chain before its
services start, as one function over one plan.

:func:`provision` sends, from dev account 0 and in this order (the order fixes every nonce,
so every address): the ``channel`` contracts with test tokens minted to the dev wallets and
the broker (:func:`~.deploy.deploy_channel_contracts`), 100 ETH to the broker, the broker's
custody liquidity (a top-up mint when it exceeds the wallet funding, ``approve``,
``deposit``), then the ``v4`` method (:func:`~settlement_widgets.v4.deploy.deploy_v4`).

Keeping the phase apart from the services lets a chain snapshot (:mod:`.snapshot`) record
its result once and replay it: a :class:`ProvisionPlan` says everything the resulting chain
state depends on, and :class:`Provisioned` (the addresses and facts the sandbox needs
afterwards) round-trips through JSON beside the snapshot.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..errors import SettlementValueError
from .deploy import ChannelDeployment, DeployedContract, deploy_channel_contracts

if TYPE_CHECKING:
    from ..keys import PrivateKey
    from ..v4.deploy.stack import V4Deployment
    from ..wallet import WalletClient
    from .chain import Chain

__all__ = [
    "BROKER_GAS_WEI",
    "ProvisionPlan",
    "Provisioned",
    "fund_broker",
    "mint_test_token",
    "provision",
    "top_up_broker",
]

#: the ETH the deployer sends the broker (its gas for custody operations)
BROKER_GAS_WEI = 100 * 10**18


@dataclass(frozen=True)
class ProvisionPlan:
    """Everything the deployment phase's chain state depends on besides the chain itself
    (backend, chain id and dev accounts) and the compiled artifacts: ``wallets`` funded dev
    wallets (accounts 1..wallets), ``token_funding`` test-token units minted to each of them
    and to the broker, ``broker_liquidity`` units the broker deposits into the custody,
    ``v4`` whether the v4 method is deployed, and the ``broker`` address."""

    wallets: int
    token_funding: int
    broker_liquidity: int
    v4: bool
    broker: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProvisionPlan:
        return cls(
            wallets=int(data["wallets"]),
            token_funding=int(data["token_funding"]),
            broker_liquidity=int(data["broker_liquidity"]),
            v4=bool(data["v4"]),
            broker=str(data["broker"]),
        )


@dataclass(frozen=True)
class Provisioned:
    """What the deployment phase left on the chain that the sandbox needs to go on."""

    channel: ChannelDeployment
    v4: V4Deployment | None

    def to_json(self) -> dict[str, Any]:
        """Every field, so :meth:`from_json` gives back an equal value."""
        channel = {
            **self.channel.to_json(),
            "contracts": [asdict(c) for c in self.channel.contracts],
        }
        v4 = None
        if self.v4 is not None:
            v4 = {**asdict(self.v4), "pool_key": self.v4.pool_key.to_json()}
        return {"channel": channel, "v4": v4}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Provisioned:
        c = data["channel"]
        channel = ChannelDeployment(
            chain_id=int(c["chainId"]),
            custody=c["custody"],
            adjudicator=c["adjudicator"],
            token=c["token"],
            deployer=c["deployer"],
            token_decimals=int(c["tokenDecimals"]),
            token_symbol=c["tokenSymbol"],
            contracts=tuple(DeployedContract(**d) for d in c["contracts"]),
        )
        v4 = None
        if data.get("v4") is not None:
            from ..v4.core.pool import PoolKey
            from ..v4.deploy.stack import V4Deployment

            fields = dict(data["v4"])
            fields["pool_key"] = PoolKey.from_json(fields["pool_key"])
            v4 = V4Deployment(**fields)
        return cls(channel=channel, v4=v4)


async def provision(chain: Chain, plan: ProvisionPlan, broker_key: PrivateKey) -> Provisioned:
    """Run the deployment phase of ``plan`` on ``chain`` (dev account 0 deploys and pays).

    ``broker_key`` must be the key of ``plan.broker``: the broker signs its own custody
    deposit.
    """
    if broker_key.address != plan.broker:
        raise SettlementValueError(f"broker_key is not the key of the plan's broker {plan.broker}")
    deployer = chain.wallet(0)
    wallets = [chain.wallet(i).address for i in range(1, plan.wallets + 1)]
    broker = chain.wallet_for(broker_key)
    channel = await deploy_channel_contracts(
        chain, deployer, fund=[*wallets, broker.address], fund_amount=plan.token_funding
    )
    await fund_broker(deployer, broker, channel, plan)
    v4 = None
    if plan.v4:
        from ..v4.deploy.stack import deploy_v4

        v4 = await deploy_v4(chain.w3, deployer, owner=deployer.address)
    return Provisioned(channel=channel, v4=v4)


async def fund_broker(
    deployer: WalletClient, broker: WalletClient, channel: ChannelDeployment, plan: ProvisionPlan
) -> None:
    """Gas for the broker, and its custody liquidity: tokens beyond the ``token_funding``
    it was minted are minted now, then approved and deposited."""
    from ..channel.v0_5.chain.custody import CustodyClient

    await deployer.transact(to=broker.address, value=BROKER_GAS_WEI)
    if plan.broker_liquidity:
        if plan.broker_liquidity > plan.token_funding:
            await mint_test_token(
                deployer, channel.token, broker.address, plan.broker_liquidity - plan.token_funding
            )
        custody = CustodyClient(broker, channel.custody)
        await custody.approve(channel.token, plan.broker_liquidity)
        await custody.deposit(channel.token, plan.broker_liquidity)


async def top_up_broker(
    chain: Chain, provisioned: Provisioned, plan: ProvisionPlan, broker_key: PrivateKey
) -> None:
    """Give another broker (``broker_key``, a random one) what :func:`provision` gives the
    plan's broker, on a chain that was provisioned for the plan's broker: its tokens (one
    mint of what provision's one or two mints add up to), gas, and custody liquidity
    (``approve`` and ``deposit`` by the broker): four transactions."""
    from ..channel.v0_5.chain.custody import CustodyClient

    deployer = chain.wallet(0)
    broker = chain.wallet_for(broker_key)
    channel = provisioned.channel
    minted = max(plan.token_funding, plan.broker_liquidity)
    if minted:
        await mint_test_token(deployer, channel.token, broker.address, minted)
    await deployer.transact(to=broker.address, value=BROKER_GAS_WEI)
    if plan.broker_liquidity:
        custody = CustodyClient(broker, channel.custody)
        await custody.approve(channel.token, plan.broker_liquidity)
        await custody.deposit(channel.token, plan.broker_liquidity)


async def mint_test_token(deployer: WalletClient, token: str, to: str, amount: int) -> None:
    """Mint ``amount`` units of our ``TestToken`` at ``token`` to ``to`` (its owner signs)."""
    from ..contracts import load_artifact

    abi = load_artifact("TestToken").abi
    contract = deployer.w3.eth.contract(address=token, abi=abi)  # type: ignore[call-overload]
    await deployer.transact(contract.functions.mint(to, amount), abis=[abi])
