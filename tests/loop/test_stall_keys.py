"""The stall detector's key for a tool call: the canonical JSON of its arguments is what
`json.dumps(..., sort_keys=True, separators=(",", ":"))` writes, and two calls share a
key exactly when their name and argument values are the same."""

from __future__ import annotations

import json
import math
import random
from typing import Any

from agentloom.loop._budget import StallDetector, _canonical, _digest


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return rng.randrange(-10**20, 10**20)
    if kind == 1:
        return rng.choice([0.0, -0.0, 1e-7, 2.5, 1e300, math.inf, -math.inf, math.nan,
                           rng.uniform(-1e6, 1e6)])
    if kind == 2:
        return "".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0x80, 0x800),
                                       rng.randrange(0x800, 0xD800), 0x1F600, 0x22, 0x5C,
                                       rng.randrange(0, 32)]))
                       for _ in range(rng.randrange(6)))
    if kind == 3:
        return rng.choice([True, False, None])
    if kind == 4:
        return ""
    if kind == 5:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {str(_value(rng, 4)) + str(i): _value(rng, depth + 1)
            for i in range(rng.randrange(4))}


def test_the_canonical_text_is_json_dumps_sorted_and_compact() -> None:
    rng = random.Random(1302)
    for _ in range(3000):
        value = _value(rng)
        assert _canonical(value) == json.dumps(value, sort_keys=True, separators=(",", ":"))


def test_calls_share_a_key_exactly_when_name_and_values_match() -> None:
    assert _digest("echo", '{"a": 1, "b": [2, 3]}') == _digest("echo", '{"b":[2,3],"a":1}')
    assert _digest("echo", '{"a": 1}') != _digest("echo", '{"a": 2}')
    assert _digest("echo", '{"a": 1}') != _digest("other", '{"a": 1}')
    # The name can't run into the arguments: ("ab", "c...") is not ("a", "bc...").
    assert _digest("ab", '"c"') != _digest("a", '"bc"')
    # Arguments that aren't JSON are compared as text, outer blanks aside.
    assert _digest("echo", " {oops ") == _digest("echo", "{oops")
    assert _digest("echo", "{oops") != _digest("echo", "{oops}")


def test_the_detector_counts_repeats_and_fires_once_at_its_threshold() -> None:
    fired: list[tuple[str, int]] = []
    detector = StallDetector(3, lambda name, count: fired.append((name, count)))
    for arguments in ('{"q": "x"}', '{"q": "y"}', '{ "q" : "x" }', '{"q":"x"}', '{"q":"x"}'):
        detector.record("search", arguments)
    assert detector.max_repeated == 4 and detector.stalled
    assert fired == [("search", 3)]
