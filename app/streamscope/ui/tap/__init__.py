"""Tapping another app in the window: the Tap dialog, the Tapped dock's list of exchanges and
their live silence, a tapped exchange shown in the inspector.

Imports ``ui.inspector``, ``ui.chat``, ``ui.endpoint`` and ``ui.base``; never ``ui.tools``
(beside it) or the shell.
"""
