"""Talking to an endpoint outside a turn: list its models, test the connection.

Kept apart from :mod:`streamscope.core.net.endpoints` (the data model) so that opening the
window does not import the network stack.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from streamscope.core.net.connect_errors import describe_connect_error, host_port
from streamscope.core.net.connection import connection_client, proxy_for
from streamscope.core.net.endpoints import MODELS_TIMEOUT, Endpoint
from streamscope.core.net.options import TLSOptions
from streamscope.core.redact import redact_url
from streamscope.core.wire.dialects import resolve

__all__ = [
    "ModelListError",
    "auth_headers",
    "fetch_models",
    "make_http_client",
    "models_url",
    "parse_models",
    "test_connection",
]


class ModelListError(Exception):
    """Listing models failed; the message is for people (status, server message, hint)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def models_url(endpoint: Endpoint, base_url: str | None = None) -> str:
    """Where the endpoint lists its models, as its dialect says (``base_url`` overrides the
    endpoint's, for the demo)."""
    base = base_url if base_url is not None else endpoint.base_url
    return resolve(endpoint.dialect).models_url(base)


def auth_headers(endpoint: Endpoint, api_key: str | None) -> dict[str, str]:
    """The dialect's authentication (and version) headers for a plain GET, plus the extra
    headers."""
    headers = {"Accept": "application/json", **resolve(endpoint.dialect).auth_headers(api_key)}
    headers.update({k: v for k, v in endpoint.extra_headers.items() if v})
    return headers


def parse_models(dialect: str, doc: Any) -> list[str]:
    """Model names from a models listing, as ``dialect`` reads it (``[]`` for other shapes)."""
    return resolve(dialect).parse_models(doc)


def make_http_client(
    endpoint: Endpoint,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    tls: TLSOptions | None = None,
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` with the endpoint's proxy and TLS options (for models /
    test; ``tls``: those options with the proxy password filled in, else
    ``endpoint.tls()``); :class:`~streamscope.core.net.env_proxy.NetworkSettingError` for an
    unusable proxy or client certificate."""
    return connection_client(endpoint.tls() if tls is None else tls, transport=transport)


async def _get_models(
    endpoint: Endpoint, api_key: str | None, client: httpx.AsyncClient, base_url: str | None
) -> tuple[list[str], float]:
    base = base_url if base_url is not None else endpoint.base_url
    if not base.strip():
        raise ModelListError("No base URL set")
    url = models_url(endpoint, base)
    shown = redact_url(url)
    timeout = httpx.Timeout(MODELS_TIMEOUT, connect=endpoint.connect_timeout)
    t0 = time.monotonic()
    try:
        response = await client.get(url, headers=auth_headers(endpoint, api_key), timeout=timeout)
    except httpx.ConnectTimeout as exc:
        raise ModelListError(
            describe_connect_error(
                exc, url, connect_timeout=endpoint.connect_timeout, proxy=proxy_for(client, url)
            )
        ) from None
    except httpx.TimeoutException:
        raise ModelListError(
            f"{host_port(url)} accepted the connection but sent no answer within"
            f" {MODELS_TIMEOUT:g} s"
        ) from None
    except httpx.ConnectError as exc:  # (through a proxy: the proxy's, named as such)
        raise ModelListError(
            describe_connect_error(exc, url, proxy=proxy_for(client, url))
        ) from None
    except httpx.HTTPError as exc:
        raise ModelListError(f"Request to {shown} failed: {type(exc).__name__}: {exc}") from None
    elapsed = time.monotonic() - t0
    if response.status_code >= 400:
        raise ModelListError(_describe_status(response, shown), response.status_code)
    try:
        doc = response.json()
    except ValueError:
        ctype = response.headers.get("content-type", "no Content-Type")
        raise ModelListError(
            f"HTTP {response.status_code} from {shown}, but the body is not JSON ({ctype})",
            response.status_code,
        ) from None
    return parse_models(endpoint.dialect, doc), elapsed


async def fetch_models(
    endpoint: Endpoint,
    api_key: str | None,
    client: httpx.AsyncClient,
    *,
    base_url: str | None = None,
) -> list[str]:
    """The endpoint's model names; :class:`ModelListError` with a readable message on failure.

    ``base_url`` overrides the endpoint's (the Built-in demo's URL is known at run time).
    """
    models, _ = await _get_models(endpoint, api_key, client, base_url)
    return models


async def test_connection(
    endpoint: Endpoint,
    api_key: str | None,
    client: httpx.AsyncClient,
    *,
    base_url: str | None = None,
) -> tuple[bool, str]:
    """GET the models listing: ``(True, "Connected · 12 models · 0.21 s")`` or
    ``(False, <what went wrong and what to check>)``. Never raises for network trouble."""
    try:
        models, elapsed = await _get_models(endpoint, api_key, client, base_url)
    except ModelListError as exc:
        return False, str(exc)
    count = f"{len(models)} model{'s' if len(models) != 1 else ''}"
    note = ""
    if endpoint.model and models and endpoint.model not in models:
        note = f" · “{endpoint.model}” is not in the list"
    return True, f"Connected · {count} · {elapsed:.2f} s{note}"


def _describe_status(response: httpx.Response, shown_url: str) -> str:
    status = response.status_code
    message = _server_message(response)
    suffix = f": {message}" if message else ""
    if status in (401, 403):
        what = "401 Unauthorized" if status == 401 else "403 Forbidden"
        return f"{what} — the API key was missing or rejected{suffix}"
    if status == 404:
        return (
            f"404 Not Found at {shown_url} — check the base URL (it must include the "
            f"version prefix, e.g. /v1) and the dialect{suffix}"
        )
    if status == 429:
        retry = response.headers.get("retry-after")
        hint = f" · retry after {retry} s" if retry else ""
        return f"429 Too Many Requests{hint}{suffix}"
    reason = response.reason_phrase or "error"
    return f"HTTP {status} {reason}{suffix}"


def _server_message(response: httpx.Response) -> str:
    try:
        doc = response.json()
    except ValueError:
        return ""
    if isinstance(doc, dict):
        err = doc.get("error", doc)
        if isinstance(err, dict):
            msg = err.get("message")
            if isinstance(msg, str):
                return msg[:300]
        elif isinstance(err, str):
            return err[:300]
        msg = doc.get("message") or doc.get("detail")
        if isinstance(msg, str):
            return msg[:300]
    return ""
