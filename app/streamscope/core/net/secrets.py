"""API keys: in the OS keyring via ``keyring``, or in memory for this session only.

    store = SecretStore()                    # the default keyring backend
    store.set(endpoint.id, "sk-...")         # service "StreamScope", username = endpoint id
    key = resolve_api_key(endpoint, store)   # env var, keyring, or None per key_source

A key is never written to a file by this module. When no usable keyring backend exists
(``keyring.backends.fail``/``null``, an empty chain, or the backend raises), the store keeps
keys in a dict: :attr:`SecretStore.persistent` is ``False`` and :attr:`SecretStore.message`
says so, for the settings dialog to show.

Secret extra headers (``Authorization``, ``x-api-key`` ...) are stored the same way under
the username ``<endpoint id>/header/<lower-case name>``; :func:`resolve_headers` fills them in.
A proxy password is kept under ``<endpoint id>/proxy`` (:func:`proxy_account`);
:func:`resolve_tls` fills it in.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace

import keyring
import keyring.backend
import keyring.errors
from keyring.backends import chainer, fail, null

from streamscope.core.net.endpoints import Endpoint, is_secret_header
from streamscope.core.net.options import TLSOptions

__all__ = [
    "MEMORY_ONLY_MESSAGE",
    "SERVICE",
    "SecretStore",
    "header_account",
    "proxy_account",
    "resolve_api_key",
    "resolve_headers",
    "resolve_tls",
]

SERVICE = "StreamScope"
MEMORY_ONLY_MESSAGE = "No system keyring found: keys are kept in memory for this session only"


def header_account(endpoint_id: str, header: str) -> str:
    """The keyring username under which a secret extra header's value is kept."""
    return f"{endpoint_id}/header/{header.strip().lower()}"


def proxy_account(endpoint_id: str) -> str:
    """The keyring username under which the endpoint's proxy password is kept."""
    return f"{endpoint_id}/proxy"


def _usable(backend: keyring.backend.KeyringBackend) -> bool:
    if isinstance(backend, fail.Keyring | null.Keyring):
        return False
    if isinstance(backend, chainer.ChainerBackend):
        return any(_usable(b) for b in backend.backends)
    return True


class SecretStore:
    """Get, set and delete secrets by account (an endpoint id, or :func:`header_account`)."""

    def __init__(
        self, backend: keyring.backend.KeyringBackend | None = None, service: str = SERVICE
    ) -> None:
        self.service = service
        if backend is None:
            try:
                backend = keyring.get_keyring()
            except Exception:  # a broken keyring configuration: fall back, never crash
                backend = None
        self._backend = backend if backend is not None and _usable(backend) else None
        self._memory: dict[str, str] = {}
        self._error: str | None = None

    @property
    def persistent(self) -> bool:
        """Whether keys survive a restart (they are in the OS keyring)."""
        return self._backend is not None

    @property
    def message(self) -> str | None:
        """Why keys are memory-only, or ``None`` when they are in the keyring."""
        if self._backend is not None:
            return None
        if self._error:
            return f"{MEMORY_ONLY_MESSAGE} (keyring error: {self._error})"
        return MEMORY_ONLY_MESSAGE

    @property
    def location(self) -> str:
        """Where keys are kept, for a label ("system keyring (SecretService Keyring)")."""
        if self._backend is None:
            return "memory only (this session)"
        return f"system keyring ({self._backend.name})"

    def _fall_back(self, exc: Exception) -> None:
        self._error = str(exc) or type(exc).__name__
        self._backend = None

    def get(self, account: str) -> str | None:
        if account in self._memory:
            return self._memory[account]
        if self._backend is None:
            return None
        try:
            return self._backend.get_password(self.service, account)
        except Exception as exc:
            self._fall_back(exc)
            return None

    def set(self, account: str, secret: str) -> None:
        """Store ``secret`` (an empty one deletes)."""
        if not secret:
            self.delete(account)
            return
        if self._backend is not None:
            try:
                self._backend.set_password(self.service, account, secret)
            except Exception as exc:
                self._fall_back(exc)
            else:
                self._memory.pop(account, None)
                return
        self._memory[account] = secret

    def delete(self, account: str) -> None:
        """Forget the secret (no error when there is none)."""
        self._memory.pop(account, None)
        if self._backend is None:
            return
        try:
            self._backend.delete_password(self.service, account)
        except keyring.errors.PasswordDeleteError:
            pass
        except Exception as exc:
            self._fall_back(exc)

    def delete_endpoint(self, endpoint: Endpoint) -> None:
        """Forget the endpoint's key, its secret header values and its proxy password."""
        self.delete(endpoint.id)
        self.delete(proxy_account(endpoint.id))
        for name in endpoint.extra_headers:
            if is_secret_header(name):
                self.delete(header_account(endpoint.id, name))


def resolve_api_key(
    endpoint: Endpoint, store: SecretStore, environ: Mapping[str, str] | None = None
) -> str | None:
    """The key to send: from the environment variable (``key_source="env"``), the secret
    store (``"keyring"``), or ``None`` (``"none"``, or nothing stored/set)."""
    if endpoint.key_source == "env":
        env = os.environ if environ is None else environ
        name = endpoint.api_key_env.strip()
        value = env.get(name, "").strip() if name else ""
        return value or None
    if endpoint.key_source == "keyring":
        return store.get(endpoint.id) or None
    return None


def resolve_headers(endpoint: Endpoint, store: SecretStore) -> dict[str, str]:
    """The endpoint's extra headers with secret values filled in from the store (a secret
    header with no stored value is left out)."""
    headers: dict[str, str] = {}
    for name, value in endpoint.extra_headers.items():
        if is_secret_header(name):
            value = store.get(header_account(endpoint.id, name)) or value
        if value:
            headers[name] = value
    return headers


def resolve_tls(endpoint: Endpoint, store: SecretStore) -> TLSOptions:
    """The endpoint's connection options with its proxy password filled in from the store
    (only for an explicit proxy with a username)."""
    tls = endpoint.tls()
    if not (tls.proxy.explicit and tls.proxy.username):
        return tls
    password = store.get(proxy_account(endpoint.id)) or ""
    return replace(tls, proxy=replace(tls.proxy, password=password))
