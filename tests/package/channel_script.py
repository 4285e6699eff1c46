"""A script a pip user runs beside ``settlement-sandbox``: a v0.5 channel opened, funded, used
for an off-chain transfer and closed. Run by ``tests/package/test_build_and_install.py`` with the Python of a
venv that has only the built package installed (not the checkout); prints one JSON line."""

from __future__ import annotations

import asyncio
import json

from settlement_widgets import ChannelProvider
from settlement_widgets.channel import ChannelConfig
from settlement_widgets.networks import get_network
from settlement_widgets.sandbox.chain import RpcChain


async def main() -> None:
    net = get_network("local")  # the profile the running settlement-sandbox wrote
    assert net.rpc_url is not None
    chain = await RpcChain.connect(net.rpc_url, accounts=3)
    alice, bob = chain.wallet(1), chain.wallet(2)
    config = ChannelConfig.from_network(net)
    unit = 10**net.asset_decimals
    async with ChannelProvider(config, alice) as channels:
        channel = await channels.create_channel(channels.broker_address, config.token, 0)
        await channels.resize(channel.id, 2 * unit)
        sent = await channels.transfer(channel.id, unit, bob.address)
        closing = await channels.close_channel(channel.id)
    await chain.aclose()
    print(json.dumps({"channel": channel.id, "sent": sent.amount, "close": closing.hash}))


if __name__ == "__main__":
    asyncio.run(main())
