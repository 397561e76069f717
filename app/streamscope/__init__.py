"""StreamScope: a desktop chat client for LLM endpoints that shows the stream itself."""

__version__ = "0.1.0"
