"""The package's public face: every advertised name resolves, and importing the library
(the CLI aside) reads no environment variable."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import agentloom


@pytest.mark.parametrize("name", agentloom.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(agentloom, name) is not None


def test_every_provider_error_kind_is_importable_from_the_package() -> None:
    # docs/agents.md promises each kind a failed call raises can be caught by name.
    from agentloom import errors

    kinds = {name for name, value in vars(errors).items()
             if isinstance(value, type) and issubclass(value, errors.ProviderCallError)}
    assert "UnexpectedRedirect" in kinds
    assert kinds <= set(agentloom.__all__), kinds - set(agentloom.__all__)


@pytest.mark.parametrize("package", ["agentloom.http", "agentloom.testing"])
def test_every_lazy_name_of_a_subpackage_resolves(package: str) -> None:
    module = importlib.import_module(package)
    for name in getattr(module, "_LAZY", {}):
        assert getattr(module, name) is not None, f"{package}.{name}"


READS_NO_ENV = r"""
import os, sys

class Watched(dict):
    seen = []
    def _note(self, key):
        caller = sys._getframe(2).f_code.co_filename
        if "/agentloom/" in caller and "/agentloom/cli/" not in caller:
            Watched.seen.append((key, caller))
    def __getitem__(self, key):
        self._note(key); return super().__getitem__(key)
    def get(self, key, default=None):
        self._note(key); return super().get(key, default)
    def __contains__(self, key):
        self._note(key); return super().__contains__(key)

os.environ = Watched(os.environ)
import agentloom
for name in agentloom.__all__:
    getattr(agentloom, name)
import agentloom.workflow, agentloom.routing.runtime, agentloom.providers, agentloom.tools
print(Watched.seen)
"""


def test_importing_the_library_reads_no_environment_variable() -> None:
    out = subprocess.run([sys.executable, "-c", READS_NO_ENV], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
