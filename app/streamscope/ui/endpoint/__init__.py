"""Endpoints in the window: the endpoint bar (endpoint, model, scenario), the endpoint dialogs
and their tabs (request, network, key, the context sent), probing a server, and the built-in
demo endpoint's service.

Imports ``ui.base`` (and the core); nothing of the chat, the inspector, the tap, the tools or
the shell.
"""
