"""IPv6 forms that embed an IPv4 address are judged as the IPv4 address they embed."""

from __future__ import annotations

import pytest

from agentloom.http.netguard import AddressPolicy, effective_address

LOOPBACK_IN_DISGUISE = [
    "::127.0.0.1",  # IPv4-compatible
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::ffff:0:7f00:1",  # SIIT IPv4-translated
    "64:ff9b::7f00:1",  # NAT64 well-known prefix
    "64:ff9b:1::7f00:1",  # NAT64 local-use prefix
    "2002:7f00:1::1",  # 6to4 relay of 127.0.0.1
    "::ffff:10.0.0.1",
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254, the cloud metadata address
    "2002:c0a8:101::1",  # 6to4 of 192.168.1.1
]


@pytest.mark.parametrize("address", LOOPBACK_IN_DISGUISE)
def test_ipv4_embedding_forms_are_refused(address: str) -> None:
    assert not AddressPolicy().permits("example.com", address)


@pytest.mark.parametrize(
    ("address", "embedded"),
    [("64:ff9b::808:808", "8.8.8.8"), ("2002:808:808::1", "8.8.8.8"), ("::1.1.1.1", "1.1.1.1")],
)
def test_public_ipv4_behind_an_ipv6_form_is_still_public(address: str, embedded: str) -> None:
    assert str(effective_address(address)) == embedded
    assert AddressPolicy().permits("example.com", address)


@pytest.mark.parametrize("address", ["::1", "::"])
def test_ipv6_loopback_and_unspecified_stay_ipv6(address: str) -> None:
    assert effective_address(address).version == 6
    assert not AddressPolicy().permits("example.com", address)


def test_plain_public_ipv6_is_permitted() -> None:
    assert AddressPolicy().permits("example.com", "2606:4700:4700::1111")


def test_an_allowed_ipv4_network_covers_its_ipv6_forms() -> None:
    policy = AddressPolicy(allowed=("127.0.0.0/8",))
    assert policy.permits("x", "::ffff:0:7f00:1")
    assert policy.permits("x", "2002:7f00:1::1")
