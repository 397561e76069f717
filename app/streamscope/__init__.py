"""StreamScope: a desktop chat client for LLM endpoints that shows the stream itself."""

__version__ = "0.1.0"

APP_ID = "io.github.streamscope.StreamScope"
"""The reverse-DNS application id: the desktop file's name, the Wayland app id, the icon's name
and the AppStream component id (and macOS's CFBundleIdentifier)."""
