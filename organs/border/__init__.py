"""The border organ (Ada's Trust_Guard) and its prompt compiler: the pure core.

``screen`` decides whether a yield envelope may cross; ``compile`` turns prompt
modules into one inspected prompt; ``border_decide`` is the organ function that
does both and returns the envelope for the brain. Trust labels describe origin
for downstream policy; nothing here sanitizes text or prevents prompt injection.
"""

from organs.border.compiler import (
    AUTHORITY_ORDER,
    SEPARATOR,
    TRUNCATION_MARKER,
    Authority,
    BudgetBehavior,
    ConflictClaim,
    ConflictMode,
    PromptBudget,
    PromptModule,
    PromptSegment,
    compile,
    validate_id,
)
from organs.border.decide import DEFAULT_BUDGET_BYTES, DEFAULT_BUDGET_TOKENS, BorderConfig, border_decide
from organs.border.guard import (
    DEFAULT_PATTERNS,
    Admission,
    BorderPolicy,
    GuardState,
    RateLimit,
    Rejection,
    RunPattern,
    ScreeningPattern,
    WordPattern,
    screen,
    yield_cost,
)
from organs.border.prompt import (
    BuiltinPromptConfig,
    SkillInfo,
    ToolHint,
    builtin_modules,
    frame_segment_id,
    paste_modules,
    render_frame,
)
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
    "AUTHORITY_ORDER",
    "DEFAULT_BUDGET_BYTES",
    "DEFAULT_BUDGET_TOKENS",
    "DEFAULT_PATTERNS",
    "SEPARATOR",
    "TRUNCATION_MARKER",
    "Admission",
    "Authority",
    "BorderConfig",
    "BorderConfigError",
    "BorderError",
    "BorderPolicy",
    "BudgetBehavior",
    "BuiltinPromptConfig",
    "CompileError",
    "ConflictClaim",
    "ConflictError",
    "ConflictMode",
    "GuardState",
    "InvalidPromptInputError",
    "ModuleIdReuseError",
    "PromptBudget",
    "PromptModule",
    "PromptSegment",
    "RateLimit",
    "Rejection",
    "RequiredOverflowError",
    "RunPattern",
    "ScreeningPattern",
    "SegmentIdReuseError",
    "SkillInfo",
    "ToolHint",
    "WordPattern",
    "border_decide",
    "builtin_modules",
    "compile",
    "frame_segment_id",
    "paste_modules",
    "render_frame",
    "screen",
    "validate_id",
    "yield_cost",
]
