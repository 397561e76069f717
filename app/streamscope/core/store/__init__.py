"""What is saved: the SQLite database (conversations, messages, turns), the in-memory chat
history, the session that saves a streaming answer on a clock, each answer's verdict line
(checked again from its capture when the rules change: :mod:`~streamscope.core.store.verdicts`)
and export.

May import every other stage of the core (a session keeps its turns' captures).
"""
