"""The sandbox's spelled-out dev keys are exactly anvil's mnemonic accounts."""

from __future__ import annotations

import pytest

from settlement_widgets.errors import SettlementValueError
from settlement_widgets.sandbox.chain import DEV_MNEMONIC, derive_dev_key, dev_keys


def test_dev_keys_are_the_bip32_keys_of_the_anvil_mnemonic() -> None:
    assert DEV_MNEMONIC.split() == ["test"] * 11 + ["junk"]
    keys = dev_keys(10)
    assert len(keys) == 10 and len({k.address for k in keys}) == 10
    for index in (0, 9):  # derivation is slow in pure Python; the ends are enough
        assert derive_dev_key(index).address == keys[index].address
    assert keys[0].address == "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"


def test_more_keys_are_derived_and_bad_counts_refused() -> None:
    assert dev_keys(11)[10].address == derive_dev_key(10).address
    assert [k.address for k in dev_keys(3)] == [k.address for k in dev_keys(10)[:3]]
    for bad in (0, 101, True, "3"):
        with pytest.raises(SettlementValueError):
            dev_keys(bad)  # type: ignore[arg-type]
