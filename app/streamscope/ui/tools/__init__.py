"""The Stream menu's power tools: edit and resend, raw requests, curl import and export,
compare two turns, find in frames.

Imports ``ui.inspector``, ``ui.chat``, ``ui.endpoint`` and ``ui.base``; never ``ui.tap``
(beside it) or the shell.
"""
