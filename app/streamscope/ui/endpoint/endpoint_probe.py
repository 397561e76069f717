""" "Fetch models" and "Test connection" for the endpoint dialog: a GET of the models listing
with the fields as they are, run as asyncio tasks on the running (qasync) loop. The probe owns
the tasks; the dialog cancels them when it closes. Nothing here blocks the UI."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import httpx

from streamscope.core.net import models_api
from streamscope.core.net.endpoints import Endpoint
from streamscope.core.net.env_proxy import NetworkSettingError
from streamscope.core.net.options import TLSOptions

__all__ = ["ClientFactory", "DemoBaseUrl", "EndpointProbe"]

ClientFactory = Callable[[Endpoint], httpx.AsyncClient]
DemoBaseUrl = Callable[[str], str]
"""dialect -> the running demo server's base URL for it (``DemoServer.base_url``)."""


class EndpointProbe:
    """Asks an endpoint for its models (``models``, ``test``); the Built-in demo at
    ``demo_base_url`` (without it, the demo cannot be reached)."""

    def __init__(
        self, demo_base_url: DemoBaseUrl | None, client_factory: ClientFactory | None
    ) -> None:
        self.demo_base_url = demo_base_url
        self._client_factory = client_factory
        self.tls_for: Callable[[Endpoint], TLSOptions] = Endpoint.tls
        """``ep``'s connection options with secrets filled in (the dialog's typed proxy
        password); used when no ``client_factory`` was given."""
        self._tasks: set[asyncio.Task[None]] = set()

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` as a task the probe owns (on the qasync loop)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no qasync loop running (a bare QApplication): nothing to do
            coro.close()
            return
        task = loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def pending(self) -> set[asyncio.Task[None]]:
        """The running tasks (tests await them)."""
        return set(self._tasks)

    def cancel(self) -> None:
        for task in self._tasks:
            task.cancel()

    def reachable(self, ep: Endpoint) -> bool:
        """False for the demo when its server is not known."""
        return not ep.is_demo or self.demo_base_url is not None

    async def models(self, ep: Endpoint, api_key: str | None) -> list[str]:
        """The model names; :class:`~streamscope.core.net.models_api.ModelListError` says why
        not."""
        async with self._client(ep) as client:
            return await models_api.fetch_models(ep, api_key, client, base_url=self._base(ep))

    async def test(self, ep: Endpoint, api_key: str | None) -> tuple[bool, str]:
        """``(True, "Connected · 12 models · 0.21 s")`` or ``(False, what went wrong)``."""
        try:
            client = self._client(ep)
        except models_api.ModelListError as exc:
            return False, str(exc)
        async with client:
            return await models_api.test_connection(ep, api_key, client, base_url=self._base(ep))

    def _client(self, ep: Endpoint) -> httpx.AsyncClient:
        """A client for ``ep``; an unusable proxy setting or client certificate is a
        ModelListError."""
        try:
            if self._client_factory is None:
                return models_api.make_http_client(ep, tls=self.tls_for(ep))
            return self._client_factory(ep)
        except NetworkSettingError as exc:
            raise models_api.ModelListError(str(exc)) from None

    def _base(self, ep: Endpoint) -> str | None:
        if ep.is_demo and self.demo_base_url is not None:
            return self.demo_base_url(ep.dialect if ep.dialect != "auto" else "openai")
        return None
