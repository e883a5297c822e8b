"""The price table: data shipped with the package, read on first use, layered by overrides.

Prices are USD per million tokens, kept as `Decimal` so sums of thousands of calls stay
exact. A model is looked up in its provider's section: exact name first, then the longest
key it starts with followed by `-`, `:` or `@` (so `gpt-4o-2024-08-06` finds `gpt-4o`, but
`gpt-4o` never finds `gpt-4`), then the section's `*` entry (Ollama and the embedded
model are explicitly free). No match is None: an unknown price is never $0.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from agentloom._files import read_regular
from agentloom._record import FrozenRecord, frozen_record, set_field
from agentloom._yaml import YamlTooBig, load_bounded
from agentloom.errors import ConfigError

MAX_PRICE_FILE_BYTES = 16 * 1024 * 1024
"""A price file past this is refused (the shipped table is under 100 kB)."""

_SEPARATORS = ("-", ":", "@")
_FIELDS = ("input", "cached_input", "cache_write", "output")


@frozen_record
class Price(FrozenRecord):
    """USD per 1M tokens. A missing `cached_input`/`cache_write` is billed as `input`."""

    input: Decimal
    output: Decimal
    cached_input: Decimal | None = None
    cache_write: Decimal | None = None

    def __init__(self, *, input: Decimal, output: Decimal, cached_input: Decimal | None = None,
                 cache_write: Decimal | None = None) -> None:
        set_field(self, "input", input)
        set_field(self, "output", output)
        set_field(self, "cached_input", cached_input)
        set_field(self, "cache_write", cache_write)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, where: str = "price") -> Price:
        unknown = set(data) - set(_FIELDS)
        if unknown:
            raise ConfigError(
                f"{where}: unknown price field(s) {sorted(unknown)}; "
                f"expected {', '.join(_FIELDS)} (USD per 1M tokens)"
            )
        values: dict[str, Decimal | None] = {}
        for name in _FIELDS:
            raw = data.get(name)
            if raw is None:
                values[name] = None
                continue
            values[name] = _decimal(raw, f"{where}.{name}")
        inp, out = values["input"], values["output"]
        if inp is None or out is None:
            raise ConfigError(f"{where}: a price needs both input and output (USD per 1M tokens)")
        return cls(
            input=inp,
            output=out,
            cached_input=values["cached_input"],
            cache_write=values["cache_write"],
        )


def _decimal(raw: Any, where: str) -> Decimal:
    if isinstance(raw, bool):
        raise ConfigError(f"{where}: expected a number, got {raw!r}")
    try:
        value = Decimal(str(raw))
    except InvalidOperation:
        raise ConfigError(f"{where}: expected a number, got {raw!r}") from None
    if not value.is_finite() or value < 0:
        raise ConfigError(f"{where}: a price must be a number >= 0, got {raw!r}")
    return value


class PriceTable:
    """Sections of prices by provider. `*` as a provider section applies to any provider.

    PriceTable.default()                                  # the packaged table
    PriceTable.default().with_overrides({"openai": {"my-ft": {"input": 3, "output": 12}}})
    PriceTable.from_file("prices.yaml")                   # a user's whole table
    """

    __slots__ = ("_parent", "_sections")

    def __init__(
        self, sections: Mapping[str, Mapping[str, Price]], parent: PriceTable | None = None
    ) -> None:
        self._sections = {p: dict(models) for p, models in sections.items()}
        self._parent = parent

    @classmethod
    def default(cls) -> PriceTable:
        global _DEFAULT
        if _DEFAULT is None:
            # Beside this module when installed as files (importlib.resources costs a
            # one-step run ~1% of its start-up for the same read); a zipped install
            # goes through importlib.resources.
            beside = Path(__file__).with_name("prices.json")
            if beside.is_file():
                text = beside.read_text("utf-8")
            else:
                from importlib.resources import files

                text = files("agentloom.pricing").joinpath("prices.json").read_text("utf-8")
            _DEFAULT = cls.from_mapping(json.loads(text), where="agentloom/pricing/prices.json")
        return _DEFAULT

    @classmethod
    def from_mapping(
        cls, data: Mapping[str, Any], *, where: str = "prices", parent: PriceTable | None = None
    ) -> PriceTable:
        """Nested `{provider: {model: price}}`, or flat `{"provider/model": price}`, or a
        flat `{model: price}` (any provider). Keys starting with `_` are comments."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: expected a mapping of provider -> model -> price")
        sections: dict[str, dict[str, Price]] = {}
        for key, value in data.items():
            key = str(key)
            if key.startswith("_"):
                continue
            if not isinstance(value, Mapping):
                raise ConfigError(f"{where}.{key}: expected a mapping, got {value!r}")
            if _looks_like_price(value):
                provider, _, model = key.rpartition("/") if "/" in key else ("*", "", key)
                sections.setdefault(provider, {})[model] = Price.from_mapping(
                    value, where=f"{where}.{key}"
                )
                continue
            for model, price in value.items():
                if not isinstance(price, Mapping):
                    raise ConfigError(f"{where}.{key}.{model}: expected a price mapping")
                sections.setdefault(key, {})[str(model)] = Price.from_mapping(
                    price, where=f"{where}.{key}.{model}"
                )
        return cls(sections, parent)

    @classmethod
    def from_file(cls, path: str | Path, *, parent: PriceTable | None = None) -> PriceTable:
        """A JSON or YAML price file (blocking read: call it at load time, not per call)."""
        p = Path(path)
        try:
            text = read_regular(p, MAX_PRICE_FILE_BYTES).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = getattr(exc, "strerror", None) or exc
            raise ConfigError(f"cannot read price file {p}: {why}") from None
        try:
            # YAML is measured before it is built: an alias bomb of a few KB would make
            # millions of prices (`agentloom._yaml`).
            yaml_file = p.suffix.lower() in (".yaml", ".yml")
            data = load_bounded(text) if yaml_file else json.loads(text)
        except YamlTooBig as exc:
            where = f"{p}:{exc.line}" if exc.line is not None else str(p)
            raise ConfigError(f"price file {where}: {exc}") from None
        except Exception as exc:
            raise ConfigError(f"price file {p} does not parse: {exc}") from None
        return cls.from_mapping(data or {}, where=str(p), parent=parent)

    def with_overrides(self, overrides: Mapping[str, Any] | PriceTable) -> PriceTable:
        """A table whose entries win over this one's."""
        if isinstance(overrides, PriceTable):
            return PriceTable(overrides._sections, parent=self)
        return PriceTable.from_mapping(overrides, where="price overrides", parent=self)

    def lookup(self, provider: str | None, model: str) -> Price | None:
        """The price of `model` at `provider`, or None if nobody priced it."""
        name = model.removeprefix("models/")
        for section in ((provider,) if provider else ()) + ("*",):
            models = self._sections.get(section)
            if models:
                found = _match(models, name)
                if found is not None:
                    return found
        return self._parent.lookup(provider, model) if self._parent is not None else None


def _looks_like_price(value: Mapping[str, Any]) -> bool:
    return bool(value) and all(k in _FIELDS for k in value)


def _match(models: Mapping[str, Price], name: str) -> Price | None:
    exact = models.get(name)
    if exact is not None:
        return exact
    best: str | None = None
    for key in models:
        if (
            key != "*"
            and len(name) > len(key)
            and name.startswith(key)
            and name[len(key)] in _SEPARATORS
            and (best is None or len(key) > len(best))
        ):
            best = key
    if best is not None:
        return models[best]
    return models.get("*")


_DEFAULT: PriceTable | None = None
