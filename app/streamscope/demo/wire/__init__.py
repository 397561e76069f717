"""Dialect writers: each turns the neutral script into one provider's exact wire frames."""
