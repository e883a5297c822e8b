"""Redaction rules a mutation run found untested, each limit just under and over: the
shortest secret matched by content, the length every key pattern needs, span merging,
and the walk over dicts, tuples, pydantic models and dataclasses."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import BaseModel

from agentloom.redact import MIN_SECRET_LENGTH, REDACTED, Redactor

PLAIN = Redactor(patterns=False)
PATTERNS = Redactor()


def test_secrets_from_the_minimum_length_up_are_matched_by_content() -> None:
    short = "a" * (MIN_SECRET_LENGTH - 1)
    exact = "b" * MIN_SECRET_LENGTH
    r = Redactor(secrets=[short, exact], patterns=False)
    assert r.redact_text(f"{short} {exact}") == f"{short} {REDACTED}"


def test_the_longest_secret_is_replaced_whole() -> None:
    r = Redactor(secrets=["secret", "secret-and-more"], patterns=False)
    assert r.redact_text("x secret-and-more y secret") == f"x {REDACTED} y {REDACTED}"


def test_adding_nothing_new_keeps_the_version_and_something_new_changes_it() -> None:
    r = Redactor(secrets=["abcdefgh"], patterns=False)
    version = r.secrets_version
    r.add_secrets(["abcdefgh", "abc", 12345678])  # type: ignore[list-item]
    assert r.secrets_version is version
    r.add_secrets(["zyxwvuts"])
    assert r.secrets_version is not version
    assert PLAIN.secrets_version is None


@pytest.mark.parametrize(("text", "redacted"), [
    ("sk-" + "a" * 16, REDACTED),
    ("sk-" + "a" * 15, "sk-" + "a" * 15),
    ("AIza" + "b" * 30, REDACTED),
    ("AIza" + "b" * 29, "AIza" + "b" * 29),
    ("Bearer abcdefgh", f"Bearer {REDACTED}"),
    ("Bearer abcdefg", "Bearer abcdefg"),
    ("basic QWxhZGRpbjpvcGVu", f"basic {REDACTED}"),
    ("x-api-key: abcdef", f"x-api-key: {REDACTED}"),
    ("x-api-key: abcde", "x-api-key: abcde"),
    ('"api_key": "zzzzzz"', f'"api_key": "{REDACTED}"'),
    ("authorization=Bearer abcdefgh", f"authorization=Bearer {REDACTED}"),
    ("https://h/v1?key=AB12&x=1", f"https://h/v1?key={REDACTED}&x=1"),
    ("https://h/v1?a=1&access_token=t", f"https://h/v1?a=1&access_token={REDACTED}"),
    ("no secrets here", "no secrets here"),
])
def test_each_pattern_at_its_length(text: str, redacted: str) -> None:
    assert PATTERNS.redact_text(text) == redacted
    assert PLAIN.redact_text(text) == text


def test_match_spans_merge_overlaps_and_keep_neighbours_apart() -> None:
    r = Redactor(secrets=["abcdefgh", "efghijkl"], patterns=False)
    both = Redactor(secrets=["abcdefgh1234"])  # a secret inside a Bearer token
    assert both.match_spans("Bearer abcdefgh1234 x") == [(0, 19)]
    longer = Redactor(secrets=["abcdefgh1234 tail"])  # a secret reaching past the token
    assert longer.match_spans("Bearer abcdefgh1234 tail x") == [(0, 24)]
    assert r.match_spans("abcdefgh efghijkl") == [(0, 8), (9, 17)]
    assert r.match_spans("abcdefghefghijkl") == [(0, 8), (8, 16)]  # touching: apart
    key = "sk-" + "c" * 20
    assert PATTERNS.match_spans(f"k {key}") == [(2, 2 + len(key))]
    assert PLAIN.match_spans(f"k {key}") == []


def test_headers_by_name_and_by_content() -> None:
    out = PATTERNS.redact_headers({"Authorization": "x", "X-Trace": "Bearer abcdefgh12",
                                   "Accept": "json"})
    assert out == {"Authorization": REDACTED, "X-Trace": f"Bearer {REDACTED}",
                   "Accept": "json"}


def test_globs_match_names_and_paths_but_never_our_own_token_fields() -> None:
    r = Redactor(key_globs=["*token*", "creds.*", "max_tokens"], patterns=False)
    state = {"api_token": "t1", "creds": {"user": "u"}, "usage": {"input_tokens": 5},
             "max_tokens": 10, "other": {"user": "v"}}
    assert r.redact_state(state) == {"api_token": REDACTED, "creds": {"user": REDACTED},
                                     "usage": {"input_tokens": 5}, "max_tokens": REDACTED,
                                     "other": {"user": "v"}}
    assert r.key_matches("usage.input_tokens.x", "x") is False


def test_secret_values_collect_every_string_under_a_marked_key() -> None:
    r = Redactor.from_state_schema({"creds": {"redact": True}, "open": {"redact": False}},
                                   state={"creds": {"a": "alpha-1", "b": ["beta-22", 3],
                                                    "c": ("gamma-333",)},
                                          "open": "visible-value",
                                          "list": [{"creds": "delta-4444"}]})
    assert r.key_globs == ("creds",)
    assert r.redact_text("alpha-1 beta-22 gamma-333 delta-4444 visible-value") == (
        f"{REDACTED} {REDACTED} {REDACTED} {REDACTED} visible-value")


def test_add_keys_keeps_order_without_duplicates() -> None:
    r = Redactor(key_globs=["a"])
    r.add_keys(["b", "a", "c"])
    assert r.key_globs == ("a", "b", "c")


def test_a_sensitive_name_with_no_value_stays_none() -> None:
    assert PLAIN.redact_state({"password": None, "Cookie": "c", "n": 1, "f": 1.5,
                               "b": True}) == {"password": None, "Cookie": REDACTED, "n": 1,
                                               "f": 1.5, "b": True}


class Model(BaseModel):
    api_key: str
    note: str


@dataclasses.dataclass(frozen=True)
class Item:
    secret: str
    text: str
    count: int = 0
    derived: str = dataclasses.field(default="sk-" + "d" * 20, init=False)


def test_the_walk_over_containers_models_and_dataclasses() -> None:
    r = Redactor(secrets=["hunter22"], patterns=False)
    out = r.redact_state({"l": ["hunter22"], "t": ("hunter22", 1),
                          "m": Model(api_key="k", note="hunter22")})
    assert out == {"l": [REDACTED], "t": (REDACTED, 1),
                   "m": {"api_key": REDACTED, "note": REDACTED}}
    item = Item(secret="s", text="say hunter22")
    redacted = r.redact_state(item)
    assert redacted == Item(secret=REDACTED, text=f"say {REDACTED}")
    untouched = Item(secret="", text="plain", count=2)
    assert r.redact_state(untouched) is untouched
    assert r.redact_state(object) is object
    assert r.redact is not None and r.redact("hunter22") == REDACTED


def test_a_dotted_path_glob_finds_nested_secret_values() -> None:
    r = Redactor.from_state_schema({"outer.inner": {"redact": True}},
                                   state={"outer": {"inner": "value-123", "x": "open-456"}})
    assert r.redact_text("value-123 open-456") == f"{REDACTED} open-456"
    assert r.redact_state({"outer": {"inner": "v"}}) == {"outer": {"inner": REDACTED}}
