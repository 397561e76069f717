"""The window's ground floor: the theme and what the first paint needs, the one paint clock
and its pacing, the shortcuts table, the focus ring, code highlighting's colours, small
widgets and the bundled resources.

Owns nothing of a feature. Imports the core and Qt only: no other part of ``streamscope.ui``
(every other part may import it).
"""
