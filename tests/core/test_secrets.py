"""Secrets: keyring when there is one, memory (and say so) when not; never in a file."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import keyring
import keyring.backend
import keyring.errors
import pytest
from keyring.backends import fail, null

from streamscope.core import paths
from streamscope.core.net.endpoint_store import EndpointSettings, EndpointStore
from streamscope.core.net.endpoints import new_endpoint
from streamscope.core.net.secrets import (
    MEMORY_ONLY_MESSAGE,
    SERVICE,
    SecretStore,
    header_account,
    resolve_api_key,
    resolve_headers,
)
from support.memory_keyring import MemoryKeyring, installed

PLANTED = "sk-PLANTED-123"


class BrokenKeyring(MemoryKeyring):
    def set_password(self, service: str, username: str, password: str) -> None:
        raise keyring.errors.KeyringLocked("the keyring is locked")


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    backend = MemoryKeyring()
    with installed(backend):
        yield backend


def files_containing(root: Path, needle: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_keys_go_to_the_keyring(memory_keyring: MemoryKeyring) -> None:
    store = SecretStore()
    assert store.persistent and store.message is None
    assert "keyring" in store.location
    store.set("ep1", PLANTED)
    assert memory_keyring.items == {(SERVICE, "ep1"): PLANTED}
    assert SecretStore().get("ep1") == PLANTED  # a new store sees it: it persisted
    store.set("ep1", "")  # empty deletes
    assert memory_keyring.items == {}
    store.delete("never-set")  # no error


@pytest.mark.parametrize("backend", [fail.Keyring(), null.Keyring()])
def test_no_keyring_falls_back_to_memory_and_says_so(
    backend: keyring.backend.KeyringBackend,
) -> None:
    with installed(backend):
        store = SecretStore()
    assert not store.persistent
    assert store.message == MEMORY_ONLY_MESSAGE
    assert store.message.startswith("No system keyring found: keys are kept in memory")
    store.set("ep1", PLANTED)
    assert store.get("ep1") == PLANTED
    assert SecretStore(backend).get("ep1") is None  # gone with the session
    assert files_containing(paths.home(), PLANTED) == []


def test_backend_error_switches_to_memory_with_the_reason() -> None:
    store = SecretStore(BrokenKeyring())
    assert store.persistent
    store.set("ep1", PLANTED)
    assert not store.persistent
    assert store.message is not None and "locked" in store.message
    assert store.get("ep1") == PLANTED


def test_resolve_api_key_per_source(memory_keyring: MemoryKeyring) -> None:
    store = SecretStore()
    ep = new_endpoint("openai")
    assert ep.key_source == "env" and ep.api_key_env == "OPENAI_API_KEY"
    assert resolve_api_key(ep, store, {"OPENAI_API_KEY": " sk-env \n"}) == "sk-env"
    assert resolve_api_key(ep, store, {}) is None
    store.set(ep.id, "sk-ring")
    assert resolve_api_key(replace(ep, key_source="keyring"), store) == "sk-ring"
    assert resolve_api_key(replace(ep, key_source="none"), store) is None
    assert resolve_api_key(replace(ep, api_key_env=""), store, {"": "x"}) is None


def test_resolve_api_key_reads_the_real_environment(
    monkeypatch: pytest.MonkeyPatch, memory_keyring: MemoryKeyring
) -> None:
    monkeypatch.setenv("MY_TEST_KEY", "sk-from-env")
    ep = replace(new_endpoint("custom"), key_source="env", api_key_env="MY_TEST_KEY")
    assert resolve_api_key(ep, SecretStore()) == "sk-from-env"


def test_secret_headers_resolve_from_the_store(memory_keyring: MemoryKeyring) -> None:
    store = SecretStore()
    ep = replace(new_endpoint("custom"), extra_headers={"api-key": "", "X-Org": "o1"})
    assert resolve_headers(ep, store) == {"X-Org": "o1"}
    store.set(header_account(ep.id, "API-Key"), PLANTED)
    assert resolve_headers(ep, store) == {"api-key": PLANTED, "X-Org": "o1"}
    store.delete_endpoint(ep)
    assert memory_keyring.items == {}


def test_planted_key_is_in_no_file_after_saving(memory_keyring: MemoryKeyring) -> None:
    store = SecretStore()
    ep = replace(
        new_endpoint("aggregator"),
        extra_headers={"Authorization": f"Bearer {PLANTED}", "X-Plain": "1"},
    )
    store.set(ep.id, PLANTED)
    store.set(header_account(ep.id, "Authorization"), f"Bearer {PLANTED}")
    EndpointStore().save(EndpointSettings.default().with_endpoint(ep).select(ep.id))
    home = paths.home()
    written = [p for p in home.rglob("*") if p.is_file()]
    assert written, "the endpoints file was written"
    assert files_containing(home, PLANTED) == []
    assert files_containing(home, "PLANTED") == []
    assert memory_keyring.items[(SERVICE, ep.id)] == PLANTED
