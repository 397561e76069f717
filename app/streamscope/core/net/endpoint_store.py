"""Endpoints saved as JSON without any secret: ``endpoints.json`` in the profile.

store = EndpointStore()                 # config_dir()/endpoints.json, resolved per call
settings = store.load()                 # first run: [Built-in demo], selected
ep = settings.selected
store.save(settings.with_endpoint(replace(ep, model="demo-tools")))
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from streamscope.core import paths
from streamscope.core.net.endpoints import (
    DEMO_ID,
    FILE_NAME,
    FORMAT_VERSION,
    KEY_SOURCES,
    LINE_CAP_RANGE,
    PRESETS,
    Endpoint,
    is_secret_header,
)
from streamscope.core.net.options import PROXY_MODES
from streamscope.core.redact import SECRET_QUERY_KEYS
from streamscope.core.wire.context import ContextPolicy
from streamscope.core.wire.dialects import dialect_names

__all__ = [
    "EndpointConfigError",
    "EndpointSettings",
    "EndpointStore",
    "endpoint_from_dict",
    "endpoint_to_dict",
    "strip_url_secrets",
]


# --- JSON converters ---------------------------------------------------------------------------


class EndpointConfigError(ValueError):
    """``endpoints.json`` (or one endpoint in it) is not what we wrote."""


def strip_url_secrets(url: str) -> str:
    """``url`` without secret query parameters (``key=``, ``api_key=`` ...): a key belongs
    in the keyring, never in endpoints.json."""
    parts = urlsplit(url)
    if not parts.query:
        return url
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    kept = [(k, v) for k, v in pairs if k.lower() not in SECRET_QUERY_KEYS]
    if len(kept) == len(pairs):
        return url
    return urlunsplit(parts._replace(query=urlencode(kept)))


def endpoint_to_dict(ep: Endpoint) -> dict[str, Any]:
    """A JSON-ready dict; secret header values are blanked and secret query parameters
    dropped from the base URL (defence in depth)."""
    return {
        "id": ep.id,
        "name": ep.name,
        "preset": ep.preset,
        "base_url": strip_url_secrets(ep.base_url),
        "dialect": ep.dialect,
        "model": ep.model,
        "key_source": ep.key_source,
        "api_key_env": ep.api_key_env,
        "extra_headers": {
            k: ("" if is_secret_header(k) else v) for k, v in ep.extra_headers.items()
        },
        "connect_timeout": ep.connect_timeout,
        "first_byte_timeout": ep.first_byte_timeout,
        "idle_timeout": ep.idle_timeout,
        "max_line_bytes": ep.max_line_bytes,
        "tls_verify": ep.tls_verify,
        "ca_bundle": ep.ca_bundle,
        "client_cert": ep.client_cert,
        "client_key": ep.client_key,
        "proxy_mode": ep.proxy_mode,
        "proxy_host": ep.proxy_host,
        "proxy_port": ep.proxy_port,
        "proxy_username": ep.proxy_username,
        "no_proxy": list(ep.no_proxy),
        "system_prompt": ep.system_prompt,
        "temperature": ep.temperature,
        "max_tokens": ep.max_tokens,
        "include_usage": ep.include_usage,
        "extra_body": dict(ep.extra_body),
        "context_policy": {"kind": ep.context_policy.kind, "limit": ep.context_policy.limit},
    }


def _get(d: Mapping[str, Any], key: str, kind: type | tuple[type, ...], default: Any) -> Any:
    value = d.get(key, default)
    if value is None and default is None:
        return None
    if isinstance(value, bool) and kind is not bool and bool not in _as_tuple(kind):
        raise EndpointConfigError(f"{key}: expected {_kind_name(kind)}, got a boolean")
    if not isinstance(value, kind):
        raise EndpointConfigError(f"{key}: expected {_kind_name(kind)}, got {value!r}")
    return value


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in _as_tuple(kind))


def endpoint_from_dict(d: Mapping[str, Any]) -> Endpoint:
    """The inverse of :func:`endpoint_to_dict`; unknown keys are ignored, missing ones default.

    Raises :class:`EndpointConfigError` naming the bad field.
    """
    defaults = Endpoint(id="", name="")
    ep_id = _get(d, "id", str, "")
    if not ep_id:
        raise EndpointConfigError("id: missing")
    key_source = _get(d, "key_source", str, defaults.key_source)
    if key_source not in KEY_SOURCES:
        raise EndpointConfigError(f"key_source: expected one of {KEY_SOURCES}, got {key_source!r}")
    dialect = _get(d, "dialect", str, defaults.dialect)
    if dialect not in dialect_names(with_auto=True):
        raise EndpointConfigError(f"dialect: unknown {dialect!r}")
    headers = _get(d, "extra_headers", dict, {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise EndpointConfigError("extra_headers: names and values must be strings")
    max_tokens = _get(d, "max_tokens", int, None)
    max_line = _get(d, "max_line_bytes", int, defaults.max_line_bytes)
    low, high = LINE_CAP_RANGE
    if not low <= max_line <= high:
        raise EndpointConfigError(f"max_line_bytes: expected {low} to {high}, got {max_line}")
    temperature = _get(d, "temperature", (int, float), None)
    proxy_mode = _get(d, "proxy_mode", str, defaults.proxy_mode)
    if proxy_mode not in PROXY_MODES:
        raise EndpointConfigError(f"proxy_mode: expected one of {PROXY_MODES}, got {proxy_mode!r}")
    proxy_port = _get(d, "proxy_port", int, 0)
    if not 0 <= proxy_port <= 65535:
        raise EndpointConfigError(f"proxy_port: expected 0 to 65535, got {proxy_port}")
    no_proxy = _get(d, "no_proxy", list, [])
    if not all(isinstance(h, str) for h in no_proxy):
        raise EndpointConfigError("no_proxy: expected a list of host names")
    policy = _context_policy(_get(d, "context_policy", dict, {}))
    return Endpoint(
        id=ep_id,
        name=_get(d, "name", str, ep_id),
        preset=_get(d, "preset", str, defaults.preset),
        base_url=_get(d, "base_url", str, ""),
        dialect=dialect,
        model=_get(d, "model", str, ""),
        key_source=key_source,
        api_key_env=_get(d, "api_key_env", str, ""),
        extra_headers=dict(headers),
        connect_timeout=float(_get(d, "connect_timeout", (int, float), defaults.connect_timeout)),
        first_byte_timeout=float(
            _get(d, "first_byte_timeout", (int, float), defaults.first_byte_timeout)
        ),
        idle_timeout=float(_get(d, "idle_timeout", (int, float), defaults.idle_timeout)),
        max_line_bytes=max_line,
        tls_verify=_get(d, "tls_verify", bool, True),
        ca_bundle=_get(d, "ca_bundle", str, None) or None,
        client_cert=_get(d, "client_cert", str, None) or None,
        client_key=_get(d, "client_key", str, None) or None,
        proxy_mode=proxy_mode,
        proxy_host=_get(d, "proxy_host", str, ""),
        proxy_port=proxy_port,
        proxy_username=_get(d, "proxy_username", str, ""),
        no_proxy=tuple(h.strip() for h in no_proxy if h.strip()),
        system_prompt=_get(d, "system_prompt", str, ""),
        temperature=None if temperature is None else float(temperature),
        max_tokens=max_tokens,
        include_usage=_get(d, "include_usage", bool, True),
        extra_body=dict(_get(d, "extra_body", dict, {})),
        context_policy=policy,
    )


def _context_policy(d: Mapping[str, Any]) -> ContextPolicy:
    """The saved context policy (missing: the whole conversation)."""
    kind = _get(d, "kind", str, "all")
    limit = _get(d, "limit", int, 0)
    try:
        return ContextPolicy(kind, limit)
    except ValueError as exc:
        raise EndpointConfigError(f"context_policy: {exc}") from None


# --- the store ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class EndpointSettings:
    """The endpoint list and which one is active (``selected_id`` is always one of them)."""

    endpoints: tuple[Endpoint, ...]
    selected_id: str

    def __post_init__(self) -> None:
        if not self.endpoints:
            raise ValueError("at least one endpoint is required")
        ids = [e.id for e in self.endpoints]
        if len(set(ids)) != len(ids):
            raise ValueError("endpoint ids must be unique")
        if self.selected_id not in ids:
            object.__setattr__(self, "selected_id", ids[0])

    @classmethod
    def default(cls) -> EndpointSettings:
        """First run: the Built-in demo, selected."""
        demo = PRESETS["demo"].endpoint(id=DEMO_ID)
        return cls((demo,), demo.id)

    @property
    def selected(self) -> Endpoint:
        return self.get(self.selected_id)

    def get(self, endpoint_id: str) -> Endpoint:
        for ep in self.endpoints:
            if ep.id == endpoint_id:
                return ep
        raise KeyError(endpoint_id)

    def with_endpoint(self, ep: Endpoint) -> EndpointSettings:
        """``ep`` replacing the endpoint with its id, or appended when new."""
        if any(e.id == ep.id for e in self.endpoints):
            eps = tuple(ep if e.id == ep.id else e for e in self.endpoints)
        else:
            eps = (*self.endpoints, ep)
        return replace(self, endpoints=eps)

    def without(self, endpoint_id: str) -> EndpointSettings:
        """Without that endpoint (the last one cannot be removed)."""
        eps = tuple(e for e in self.endpoints if e.id != endpoint_id)
        return EndpointSettings(eps or self.endpoints, self.selected_id)

    def select(self, endpoint_id: str) -> EndpointSettings:
        self.get(endpoint_id)
        return replace(self, selected_id=endpoint_id)


class EndpointStore:
    """``endpoints.json`` in :func:`~streamscope.core.paths.config_dir` (or ``path``).

    Writes are atomic (a temporary file, then ``os.replace``). A file that cannot be read is
    moved aside to ``endpoints.json.bad`` (so the next save does not destroy it) and
    :attr:`load_error` says why; the defaults are returned.
    """

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self.load_error: str | None = None

    @property
    def path(self) -> Path:
        return self._path if self._path is not None else paths.config_dir() / FILE_NAME

    def load(self) -> EndpointSettings:
        path = self.path
        self.load_error = None
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return EndpointSettings.default()
        try:
            return _settings_from_json(raw)
        except (ValueError, EndpointConfigError) as exc:
            self.load_error = f"{path.name} could not be read ({exc}); it was moved aside"
            os.replace(path, path.with_name(path.name + ".bad"))
            return EndpointSettings.default()

    def save(self, settings: EndpointSettings) -> None:
        path = self.path
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = {
            "version": FORMAT_VERSION,
            "selected": settings.selected_id,
            "endpoints": [endpoint_to_dict(e) for e in settings.endpoints],
        }
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, path)


def _settings_from_json(raw: bytes) -> EndpointSettings:
    doc = json.loads(raw)
    if not isinstance(doc, dict) or not isinstance(doc.get("endpoints"), list):
        raise EndpointConfigError("expected an object with an 'endpoints' list")
    endpoints = []
    for i, item in enumerate(doc["endpoints"], 1):
        if not isinstance(item, dict):
            raise EndpointConfigError(f"endpoint {i}: expected an object")
        try:
            endpoints.append(endpoint_from_dict(item))
        except EndpointConfigError as exc:
            raise EndpointConfigError(f"endpoint {i}: {exc}") from None
    if not endpoints:
        return EndpointSettings.default()
    selected = doc.get("selected")
    try:
        return EndpointSettings(tuple(endpoints), selected if isinstance(selected, str) else "")
    except ValueError as exc:
        raise EndpointConfigError(str(exc)) from None


# --- listing models and testing a connection ------------------------------------------------
