"""The border organ (Ada's Trust_Guard) and its prompt compiler: the pure core.

``screen`` decides whether a yield envelope may cross; ``compile`` turns prompt
modules into one inspected prompt; ``border_decide`` is the organ function that
does both and returns the envelope for the brain. Trust labels describe origin
for downstream policy; nothing here sanitizes text or prevents prompt injection.
"""

from organs.border.compiler import compile
from organs.border.decide import DEFAULT_BUDGET_BYTES, DEFAULT_BUDGET_TOKENS, BorderConfig, border_decide
from organs.border.guard import *  # noqa: F403
from organs.border.guard import __all__ as _guard_all
from organs.border.prompt import (
    BuiltinPromptConfig,
    SkillInfo,
    ToolHint,
    builtin_modules,
    frame_segment_id,
    paste_modules,
    render_frame,
)
from organs.border.segments import *  # noqa: F403
from organs.border.segments import __all__ as _segments_all
from organs.errors import (
    BorderConfigError,
    BorderError,
    CompileError,
    ConflictError,
    InvalidPromptInputError,
    ModuleIdReuseError,
    RequiredOverflowError,
    SegmentIdReuseError,
)

__all__ = [
    *_guard_all,
    *_segments_all,
    "DEFAULT_BUDGET_BYTES",
    "DEFAULT_BUDGET_TOKENS",
    "BorderConfig",
    "BorderConfigError",
    "BorderError",
    "BuiltinPromptConfig",
    "CompileError",
    "ConflictError",
    "InvalidPromptInputError",
    "ModuleIdReuseError",
    "RequiredOverflowError",
    "SegmentIdReuseError",
    "SkillInfo",
    "ToolHint",
    "border_decide",
    "builtin_modules",
    "compile",
    "frame_segment_id",
    "paste_modules",
    "render_frame",
]
