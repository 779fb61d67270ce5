"""A configuration file that is mostly comments is served as its settings first, its comments as the room allows."""

from __future__ import annotations

from organs.stomach.core.asked import AskTerms
from organs.stomach.core.budget import rarest_salient
from organs.stomach.core.distill.config import settings_first
from organs.stomach.core.tuning import StomachTuning

TUNING = StomachTuning()
WHY = "of note"


def _shipped_pool_config() -> str:
    """An INI file as a package ships it: each directive under a paragraph documenting it, most of them off."""
    blocks = ["; Start a new pool named 'shop'.\n[shop]"]
    for n in range(40):
        documentation = "\n".join(f"; directive {n} paragraph line {line}: what it does and when" for line in range(6))
        directive = f"pm.setting_{n} = {n}" if n % 4 == 0 else f";pm.setting_{n} = {n}"
        blocks.append(f"{documentation}\n{directive}")
    return "\n\n".join(blocks)


def _never(_: str) -> int:
    return 0


def test_the_settings_in_effect_survive_in_order_where_head_and_tail_would_keep_the_documentation() -> None:
    rendered = settings_first(_shipped_pool_config(), 300, _never, TUNING, why=WHY)
    assert rendered is not None
    assert rendered.startswith("[a config, its settings first: 271 comment lines of 322 left out but those of note]")
    settings = [f"pm.setting_{n} = {n}" for n in range(0, 40, 4)]
    assert all(f"\n{setting}" in rendered for setting in settings)
    positions = [rendered.index(f"\n{setting}") for setting in settings]
    assert positions == sorted(positions)
    assert "[shop]" in rendered


def test_with_room_left_the_comment_right_above_each_setting_comes_back_first() -> None:
    rendered = settings_first(_shipped_pool_config(), 600, _never, TUNING, why=WHY)
    assert rendered is not None
    assert "; directive 36 paragraph line 5: what it does and when\npm.setting_36 = 36" in rendered
    assert "; directive 36 paragraph line 0" not in rendered


def test_a_comment_holding_the_asks_rare_term_comes_back_before_the_others() -> None:
    text = _shipped_pool_config().replace(
        "; directive 17 paragraph line 2: what it does and when", "; directive 17 caps the spawn rate of workers"
    )
    keep = rarest_salient(text, AskTerms.of("Which directive limits the spawn rate?"), TUNING.kept_common_share)
    rendered = settings_first(text, 300, keep, TUNING, why=WHY)
    assert rendered is not None
    assert "; directive 17 caps the spawn rate of workers" in rendered


def test_code_with_a_few_comments_is_no_config_and_preprocessor_lines_are_no_comments() -> None:
    script = "#!/usr/bin/env bash\n# deploy the shop\nset -e\n" + "\n".join(f"echo step {n}" for n in range(20))
    assert settings_first(script, 20, _never, TUNING, why=WHY) is None
    source = "\n".join(f"#include <shop_{n}.h>" for n in range(20)) + "\nint main(void) { return 0; }"
    assert settings_first(source, 20, _never, TUNING, why=WHY) is None


def test_settings_too_many_for_the_room_are_cut_as_code_is_under_the_same_note() -> None:
    rendered = settings_first(_shipped_pool_config(), 90, _never, TUNING, why=WHY)
    assert rendered is not None
    assert rendered.startswith("[a config, its settings first:")
    assert "lines elided] …" in rendered
    assert "pm.setting_0 = 0" in rendered
