"""The stream inspector: Frames, Tool calls, Timeline and Request tabs.

The main window creates one :class:`InspectorPanel` and forwards the TurnRunner's signals
to ``begin_turn``, ``set_response``, ``add_progress`` and ``finish_turn``.
"""

from streamscope.ui.inspector.frames_filter import FramesFilterModel
from streamscope.ui.inspector.frames_model import FramesModel
from streamscope.ui.inspector.inspector import InspectorPanel

__all__ = ["FramesFilterModel", "FramesModel", "InspectorPanel"]
