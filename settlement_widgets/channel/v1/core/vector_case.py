"""What the compute command knows about one vector besides its inputs.

Why this module exists: a vector's output *shape* is not a function of its inputs alone.
Two ``channel_id`` vectors with the same kind of inputs differ only in that one is a
known-answer check (its outputs also carry ``expected_kat`` and ``kat_match``), and an
``app_session`` vector asks for one packed hash or for a whole signed request depending on
which SDK functions it exercises. Both facts are in the vector file: ``sdk_functions`` on
each vector, and ``meta.known_answer_checks`` (the ids of the known-answer vectors). This
module carries them to the group functions, so a shape is chosen from what the vector says,
never by recognising particular input values.

Known answers themselves are *not* here or anywhere in the package: a known-answer field is
computed from the inputs like every other output, by a second route where one exists (e.g.
the packed state assembled by hand from its signing data), and the comparison with the
upstream constant lives in the tests (``tests/unit/test_nitrolite_v1_vectors.py`` against
the published vector file).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["VectorCase", "case_of", "known_answer_fields"]


@dataclass(frozen=True)
class VectorCase:
    """One vector's identity: its id, the SDK functions it exercises, and whether the file
    lists it as a known-answer check."""

    vector_id: str = ""
    sdk_functions: tuple[str, ...] = ()
    known_answer: bool = False

    def only(self, function: str) -> bool:
        """True when the vector exercises exactly ``function`` (a bare pack/hash case)."""
        return self.sdk_functions == (function,)

    def uses(self, function: str) -> bool:
        """True when ``function`` is among the SDK functions the vector exercises."""
        return function in self.sdk_functions


def case_of(vector: Mapping[str, Any], meta: Mapping[str, Any]) -> VectorCase:
    """The :class:`VectorCase` of ``vector`` in a file whose ``meta`` is ``meta``."""
    vector_id = str(vector.get("id", ""))
    functions = vector.get("sdk_functions") or ()
    checks = meta.get("known_answer_checks") or ()
    known = any(isinstance(c, Mapping) and c.get("id") == vector_id for c in checks)
    return VectorCase(
        vector_id=vector_id,
        sdk_functions=tuple(str(f) for f in functions),
        known_answer=bool(vector_id) and known,
    )


def known_answer_fields(
    case: VectorCase, result: str, recomputed: str, *, name: str = "expected_kat"
) -> dict[str, Any]:
    """``{name: recomputed, "kat_match": recomputed == result}`` for a known-answer vector,
    ``{}`` otherwise.

    ``recomputed`` is the same answer reached from the inputs by an independent route; the
    published file's constant is compared with our outputs by the tests, not here.
    """
    if not case.known_answer:
        return {}
    return {name: recomputed, "kat_match": recomputed == result}
