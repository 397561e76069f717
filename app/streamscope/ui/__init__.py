"""The window: Qt adapters over the core, by feature, imports pointing one way (top down):

- ``shell`` — the application and the main window (wiring only), its menus, layout, files;
- ``tools``, ``tap`` and ``bench`` — the Stream menu's power tools; tapping another app; the
  Bench window;
- ``inspector`` — the dock's tabs (Frames, Tool calls, Timeline, Request, Verdict), find;
- ``chat`` — the controller, the chat view and its cards, the composer, conversations;
- ``endpoint`` — the endpoint bar, dialogs, key, probe, the demo service;
- ``base`` — theme, paint clock, shortcuts table, small widgets, resources.

A part imports only those below it (``tools``, ``tap`` and ``bench`` never each other),
type-only imports included; a feature gets the narrow things it uses, never the main window.
``tests/test_layers.py`` holds it.
"""
