"""Deprecated ``python -m settlement_widgets.sandbox.relay``:
runs ``python -m settlement_widgets.channel.v0_5.node``.

Kept for one release; it warns and runs the new module as ``__main__``.
"""

import runpy
import warnings

if __name__ == "__main__":
    warnings.warn(
        "python -m settlement_widgets.sandbox.relay moved to "
        "python -m settlement_widgets.channel.v0_5.node",
        DeprecationWarning,
        stacklevel=1,
    )
    runpy.run_module("settlement_widgets.channel.v0_5.node", run_name="__main__", alter_sys=True)
