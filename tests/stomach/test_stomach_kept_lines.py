"""Cut notes and code: the lines worth keeping survive between head and tail, and every gap is counted."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from organs.stomach import IngestConfig, ingest_paste
from organs.stomach.core.asked import AskTerms
from organs.stomach.core.budget import rarest_salient
from organs.stomach.core.distill.text import kept_and_ends
from organs.stomach.core.tuning import StomachTuning

TUNING = StomachTuning()

_ELISION = re.compile(r"… \[([\d,]+) lines? elided\] …")


def test_picked_lines_survive_once_per_shape_and_the_note_says_why() -> None:
    lines = [f"copying layer {n:04d}" for n in range(500)]
    for n in (100, 200, 300):
        lines[n] = f"retry {n}: mirror timed out"
    lines[250] = "fatal: no space left on device"
    rendering = kept_and_ends(
        "\n".join(lines), 200, lambda line: "mirror" in line or "fatal" in line, TUNING, why="of note"
    )
    assert rendering.startswith("[kept: the first and last lines, and lines of note]")
    assert "fatal: no space left on device" in rendering
    assert rendering.count("mirror timed out") == 1


def test_higher_ranked_lines_are_picked_first_when_the_room_is_short() -> None:
    lines = [f"unpacking cart-{n:04d} ..." for n in range(400)]
    for n in range(20, 60):
        # Each of a shape of its own (letters, not digits, tell them apart), so each could be picked.
        lines[n] = f"selecting cart-tools for shop-{chr(97 + n % 26)}{chr(97 + n // 26)}"
    lines[300] = "cart-tools: unable to stat /usr/sbin/cartd"

    def rank(line: str) -> int:
        return 2 if "unable" in line else 1 if "cart-tools" in line else 0

    rendering = kept_and_ends("\n".join(lines), 160, rank, TUNING, why="of note")
    assert "cart-tools: unable to stat /usr/sbin/cartd" in rendering
    # In paste order, though picked first.
    assert rendering.index("selecting cart-tools for shop-ua") < rendering.index("unable to stat")


def test_a_line_with_the_asks_rare_term_is_kept_before_lines_with_its_common_one() -> None:
    # A config whose every third line names the service; one line names the port the user asks about.
    lines = []
    for n in range(300):
        word = chr(97 + n % 26) + chr(97 + n // 26 % 26)
        lines.append(f"cart: option_{word} = {n * 7}" if n % 3 == 0 else f"  option_{word} = {n * 7}")
    lines[180] = "  listen_port = 8443"
    text = "\n".join(lines)
    keep = rarest_salient(text, AskTerms.of("Why does the cart service not listen on 8443?"), TUNING.kept_common_share)
    # 'cart' is on a third of the lines: it raises none of them.
    assert keep(lines[3]) == 0 < keep(lines[180])
    assert "listen_port = 8443" in kept_and_ends(text, 200, keep, TUNING, why="of note")


def _config_of_sections(count: int) -> list[str]:
    """A YAML-like config of ``count`` sections, each a key over four settings, every line of its own shape."""
    lines = []
    for n in range(count):
        word = chr(97 + n % 26) + chr(97 + n // 26 % 26)
        lines += [f"  stage_{word}:", f"    after: [stage_{word}x]", f"    image: base-{word}", "    steps:"]
        lines.append(f"      - run: make target-{word}")
    return ["stages:", *lines]


def test_a_picked_line_comes_with_the_heading_it_is_indented_under() -> None:
    lines = _config_of_sections(60)
    lines[1 + 5 * 30 + 4] = "      - run: make publish-wheels"
    rendering = kept_and_ends("\n".join(lines), 200, lambda line: "publish" in line, TUNING, why="of note")
    assert "    steps:\n      - run: make publish-wheels" in _without_elisions(rendering)


def test_a_picked_heading_comes_with_the_first_line_under_it() -> None:
    lines = _config_of_sections(60)
    lines[1 + 5 * 30] = "  publish:"
    rendering = kept_and_ends("\n".join(lines), 200, lambda line: "publish" in line, TUNING, why="of note")
    assert "  publish:\n    after: [stage_ebx]" in rendering


def _without_elisions(rendering: str) -> str:
    return "\n".join(line for line in rendering.split("\n") if not _ELISION.fullmatch(line))


def test_nothing_picked_is_head_and_tail() -> None:
    text = "\n".join(f"line {n}" for n in range(400))
    rendering = kept_and_ends(text, 60, lambda line: False, TUNING, why="x")
    assert rendering.startswith("line 0\n") and rendering.endswith("line 399")


@given(
    st.lists(st.sampled_from(["ok", "ok 1", "ERROR boom", "", "x" * 90, "WARN low disk 7"]), max_size=400),
    st.integers(min_value=1, max_value=300),
)
def test_every_line_is_shown_or_counted(lines: list[str], target: int) -> None:
    text = "\n".join(lines)
    rendering = kept_and_ends(text, target, lambda line: line.startswith(("ERROR", "WARN")), TUNING, why="with alerts")
    if rendering == text:
        return
    shown = rendering.split("\n")
    if shown[0].startswith("[kept:"):
        shown = shown[1:]
        elided = sum(int(match.group(1).replace(",", "")) for line in shown if (match := _ELISION.fullmatch(line)))
        kept = [line for line in shown if not _ELISION.fullmatch(line)]
        assert elided + len(kept) == len(lines)


def test_a_few_enormous_lines_are_clipped_to_share_the_room_not_served_whole_or_dropped() -> None:
    properties = ",".join(f'"spark.hadoop.key{index}":"value{index}"' for index in range(2000))
    evidence = '{"Event":"LogStart","Version":"3.0.0"}\n{"Event":"EnvironmentUpdate","Properties":{' + properties
    paste = f"The job's event log, cut short:\n\n{evidence}\n\nWhich properties set the executor memory?"
    bundle = ingest_paste(paste, IngestConfig(budget_tokens=2000))
    assert [frame.representation for frame in bundle.provider.frames] == ["full", "compact"]
    assert 1000 < sum(frame.token_cost for frame in bundle.provider.frames) <= 2000
