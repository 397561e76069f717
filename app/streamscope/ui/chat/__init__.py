"""The chat: its controller and the turn runner under it, the virtual chat view and its cards
(answers with their Markdown and code, messages, notices), the composer, the conversation list
and which conversation is open, the status bar, the tools panel, the live turn's clock.

A turn is shown in the inspector through a :class:`~streamscope.ui.chat.turn_viewer.TurnViewer`
the window gives it; the chat never imports the inspector. Imports ``ui.endpoint`` and
``ui.base`` (and the core).
"""
