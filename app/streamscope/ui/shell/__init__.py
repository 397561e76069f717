"""The application and its main window: start-up, the window that wires the features
together (and only that), its menus, its remembered layout, one instance per profile, files
opened, dropped, imported and exported, the log folder, garbage collection on the Qt thread.

The top floor: may import every other part of ``streamscope.ui``; nothing imports it.
"""
