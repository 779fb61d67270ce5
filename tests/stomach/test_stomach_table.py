"""Tables keep their header, the rows at each numeric column's extremes, alert rows and the ask's rows."""

from __future__ import annotations

from organs.accounting import DEFAULT_ENCODING, count_tokens
from organs.stomach import IngestConfig, ingest_paste
from organs.stomach.core.asked import AskTerms
from organs.stomach.core.classify.ladder import classify
from organs.stomach.core.compare import Comparison
from organs.stomach.core.distill.table import distill_table


def _csv(rows: int, newline: str = "\n") -> str:
    lines = ["day,rain_mm,wind,sky"]
    for n in range(rows):
        rain = 80.5 if n == 137 else (n * 7) % 30 / 2
        wind = 0.1 if n == 411 else 1 + (n * 13) % 50 / 10
        lines.append(f"d{n:04d},{rain},{wind},{'sun' if n % 3 else 'rain'}")
    return newline.join(lines)


def test_the_extreme_rows_the_profile_names_are_kept_and_say_why() -> None:
    digest = distill_table(_csv(600))
    assert "rain_mm (float 0…80.5)" in digest.rendering
    assert "d0137,80.5," in digest.rendering
    assert any(line.startswith("d0411,") and line.endswith("◂ min wind") for line in digest.rendering.split("\n"))
    line = next(line for line in digest.rendering.split("\n") if line.startswith("d0137,"))
    assert line.endswith("◂ max rain_mm")
    assert digest.rows == 600 and digest.columns == 4


def test_crlf_tables_parse_like_lf_tables() -> None:
    assert distill_table(_csv(200, "\r\n")).rendering.replace("\r", "") == distill_table(_csv(200)).rendering


def test_rows_holding_the_ask_are_kept_first() -> None:
    digest = distill_table(_csv(600), ask=AskTerms.of("What happened on d0321?"), target_tokens=150)
    assert "d0321," in digest.rendering
    assert "holds d0321" in digest.rendering


def _processes() -> str:
    """An lsof-like listing: many rows of a shell, a few of each other command."""
    lines = ["COMMAND  PID  FD  NAME"]
    lines += [f"runner   {700 + n}  {n}r  /srv/lib/part{n}.so" for n in range(40)]
    lines += [f"sleep    {900 + n}  0u  /dev/pts/{n}" for n in range(3)]
    lines += [f"cron     {950 + n}  1w  /var/log/cron{n}" for n in range(3)]
    return "\n".join(lines)


def test_each_part_of_the_ask_gets_a_row_before_any_part_gets_two() -> None:
    ask = AskTerms.of("What does the runner process hold, and what about sleep and cron?")
    rendering = distill_table(_processes(), ask=ask, target_tokens=120).rendering
    assert "holds sleep" in rendering and "holds cron" in rendering
    assert rendering.count("holds runner") < 40


def test_alerts_on_most_rows_are_shown_by_a_few_of_them() -> None:
    lines = ["COMMAND  PID  NAME"] + [f"worker   {n}  /proc/{n}/fd (opendir: Permission denied)" for n in range(60)]
    lines += [f"shell    {100 + n}  /home/me/run{n}.sh" for n in range(40)]
    rendering = distill_table("\n".join(lines)).rendering
    assert rendering.count("◂ alert") == 2


def test_a_directive_header_names_the_columns_and_is_not_a_row() -> None:
    rows = [
        "#separator \\x09",
        "#path\tconn",
        "#fields\tts\tuid\tresp_h\tresp_bytes",
        "#types\ttime\tstring\taddr\tcount",
    ]
    rows += [f"17000000{n:02d}.5\tC{n:03d}x\t10.0.0.{n}\t{9_999_999 if n == 42 else n * 10}" for n in range(90)]
    rows.append("#close\t2024-01-01-00-00-00")
    digest = distill_table("\n".join(rows))
    assert "resp_bytes (int 0…9999999)" in digest.rendering
    assert "#2" not in digest.rendering.split("\n")[1]
    assert "C042x\t10.0.0.42\t9999999  ◂ max resp_bytes" in digest.rendering
    assert digest.rows == 90 and digest.columns == 4


def test_alert_rows_are_kept() -> None:
    lines = ["time  level  message"] + [f"10:{n:02d}  INFO   all good {n}" for n in range(60)]
    lines[33] = "10:32  ERROR  disk full on /var"
    digest = distill_table("\n".join(lines))
    assert "10:32  ERROR  disk full on /var  ◂ alert" in digest.rendering


def test_a_target_bounds_the_rows_kept() -> None:
    small = distill_table(_csv(600), target_tokens=120).rendering
    large = distill_table(_csv(600), target_tokens=2000).rendering
    assert len(small) < len(large)
    assert "d0137,80.5," in small


def test_without_type_inference_the_extremes_are_still_kept() -> None:
    digest = distill_table(_csv(600), infer_types=False)
    assert "d0137,80.5," in digest.rendering
    assert "(float" not in digest.rendering


def test_a_markdown_table_keeps_its_header_and_extremes_and_counts_few_reasons() -> None:
    lines = ["| host | cpu | mem | disk |", "|------|----:|----:|-----:|"]
    lines += [f"| node{n:02d} | {n % 7 + 10} | {n % 5 + 20} | {n % 3 + 30} |" for n in range(40)]
    lines.append("| hot01 | 99 | 99 | 99 |")
    lines += [f"| tail{n} | 12 | 22 | 31 |" for n in range(5)]
    digest = distill_table("\n".join(lines))
    assert digest.rendering.split("\n")[2] == "| host | cpu | mem | disk |"
    assert "| hot01 | 99 | 99 | 99 |  ◂ max cpu; max mem; max disk" in digest.rendering
    assert digest.rows == 46
    kept = [line for line in digest.rendering.split("\n") if "◂" in line]
    assert all(line.count(";") <= 3 for line in kept)


def test_a_table_drawn_with_box_characters_under_a_title_is_a_table() -> None:
    table = "\n".join(
        [
            "[+] Group: Slow services",
            "┌─────────┬───────┐",
            "│ service │ ms    │",
            "├─────────┼───────┤",
            *(f"│ svc{index:<4}│ {index * 37:<6}│" for index in range(12)),
            "└─────────┴───────┘",
        ]
    )
    report = ingest_paste(f"Which service is slowest?\n\n{table}").report
    assert [entry.kind for entry in report] == ["prose", "table"]


def test_fields_one_space_apart_are_columns_though_their_gaps_do_not_align() -> None:
    # An access log's lines: the elapsed field padded, the others one space apart, URLs of every length.
    lines = [
        f"1157689{n:03d}.049 {(n * 37) % 900 if n != 61 else 6741:>6} 10.0.0.{n % 7} TCP_MISS/200 {n * 13} GET "
        f"http://{'x' * (n % 11)}.example/{n} user{n % 3} DIRECT/10.1.1.{n % 5} text/html"
        for n in range(120)
    ]
    digest = distill_table("\n".join(lines), target_tokens=400)
    assert digest.columns == 10
    assert "6741 10.0.0.5 TCP_MISS/200 793 GET" in digest.rendering


def _steps(rows: int) -> str:
    """A build's step log: start and end in milliseconds, then the step; step 40 runs longest, 90 next."""
    lines = ["start\tend\tstep"]
    for n in range(rows):
        start = n * 100
        took = 5000 if n == 40 else 4000 if n == 90 else 50 + n % 7
        lines.append(f"{start}\t{start + took}\tobj/step_{n:03d}.o")
    return "\n".join(lines)


def test_a_start_and_an_end_column_keep_the_row_of_the_longest_span() -> None:
    rendering = distill_table(_steps(300), target_tokens=300).rendering
    assert "obj/step_040.o" in rendering
    assert "longest start to end" in rendering
    assert "obj/step_090.o  ◂" not in rendering


def test_an_ask_for_the_longest_keeps_the_longest_spans() -> None:
    longest = Comparison.of("Which step took the longest?")
    rendering = distill_table(_steps(300), target_tokens=300, comparison=longest).rendering
    assert "obj/step_040.o  ◂" in rendering and "obj/step_090.o  ◂" in rendering


def test_columns_whose_second_falls_below_the_first_are_no_span() -> None:
    steps = _steps(300).replace("29000\t29053", "29000\t28000")
    assert "longest" not in distill_table(steps, target_tokens=300).rendering


def test_a_row_of_long_cells_is_clipped_so_other_rows_fit() -> None:
    lines = ["name,version,depends"]
    lines += [f"pkg{n:02d},1.{n},{' '.join(f'lib{k}' for k in range(200))}" for n in range(40)]
    rendering = distill_table("\n".join(lines), target_tokens=1500).rendering
    assert "chars elided]" in rendering
    assert sum(1 for line in rendering.split("\n") if line.startswith("pkg")) >= 6


def _costs(rows: int) -> str:
    """Repairs with a repair cost, another cost and their total; row 700 costs most in total, row 300 most other."""
    lines = ["id,airport,cost other,cost repair,cost total"]
    for n in range(rows):
        other = 90_000 if n == 300 else n % 50
        repair = 80_000 if n == 700 else (n * 7919) % 1000
        lines.append(f"{n},AIRPORT-{n:04d},{other},{repair},{other + repair}")
    return "\n".join(lines)


def test_a_table_over_its_target_is_served_at_its_target() -> None:
    digest = distill_table(_costs(2000), target_tokens=1000)
    assert count_tokens(digest.rendering, DEFAULT_ENCODING) >= 900


def test_the_column_naming_most_of_the_asks_words_is_the_one_compared() -> None:
    highest = Comparison.of("Which repair had the highest total cost?")
    rendering = distill_table(_costs(2000), target_tokens=300, comparison=highest).rendering
    assert "700,AIRPORT-0700,0,80000,80000  ◂ greatest asked" in rendering


def test_rows_past_the_asks_threshold_are_kept() -> None:
    lines = ["step,duration ms"] + [f"step-{n:04d},{900 + n if n % 250 == 7 else n % 300}" for n in range(2000)]
    over = Comparison.of("Which steps took more than 800 ms?")
    rendering = distill_table("\n".join(lines), target_tokens=300, comparison=over).rendering
    assert all(f"step-{n:04d}" in rendering for n in range(7, 2000, 250))
    assert "past the ask's bound" in rendering


def test_a_cost_and_the_total_it_is_part_of_are_no_span() -> None:
    assert "longest" not in distill_table(_costs(2000), target_tokens=300).rendering


def _mappings_then_members(mappings: int) -> str:
    """A dump of placements (id, members, first member) and, under a header of its own, a count per member and a
    footer: one block, two tables."""
    lines = [f"2.{n:x}\t[{n % 24},{(n * 5 + 1) % 24},{(n * 11 + 2) % 24}]\t{n % 24}" for n in range(mappings)]
    lines.append("#member\tcount\tfirst\tweight")
    lines += [f"m.{n}\t{485 if n == 13 else 102 if n == 20 else 180 + n}\t{60 + n}\t1" for n in range(24)]
    lines += [" avg 192 stddev 65.3", " min m.20 102", " max m.13 485"]
    return "\n".join(lines)


def test_a_table_going_on_under_a_header_of_its_own_is_served_as_two_tables() -> None:
    rendering = distill_table(_mappings_then_members(1500), target_tokens=800).rendering
    members = rendering[rendering.index("[27 rows") :]
    # The small table whole, each of its rows, its footer too; the dump before it sampled within the rest.
    assert all(f"m.{n}\t" in members for n in range(24)) and " max m.13 485" in members
    assert rendering.startswith("[1,499 rows") and "… [" in rendering[: rendering.index("[27 rows")]


def test_room_for_every_row_serves_every_row_whatever_the_count() -> None:
    lines = ["host\tload"] + [f"h{n:02d}\t{n * 7 % 23}" for n in range(29)] + ["total\t" + "x" * 900]
    rendering = distill_table("\n".join(lines), target_tokens=700).rendering
    assert all(f"h{n:02d}\t" in rendering for n in range(29))


def test_rows_short_of_a_span_column_are_passed_over() -> None:
    lines = ["step\tstart\tend"]
    for n in range(300):
        took = 5000 if n == 40 else 50 + n % 7
        lines.append(f"obj/step_{n:03d}.o\t{n * 100}\t{n * 100 + took}")
    lines.append("done")
    assert "obj/step_040.o\t4000\t9000  ◂" in distill_table("\n".join(lines), target_tokens=300).rendering


def test_tables_a_blank_line_apart_are_each_profiled_with_their_own_columns() -> None:
    cpu = ["time  CPU  %user  %idle"] + [
        f"06:{n // 60:02d}:{n % 60:02d}  all  {n * 7 % 90}.5  {n % 9}.5" for n in range(200)
    ]
    memory = ["time  kbfree  %memused"] + [f"06:{n // 60:02d}:{n % 60:02d}  {900 - n}  {n % 50}.1" for n in range(200)]
    memory[120] = "06:01:59  16000  97.4"
    text = "\n".join(["Linux 6.1 (vm)  12/07/26", "", *cpu, "", *memory])
    rendering = distill_table(text, target_tokens=600).rendering
    assert rendering.startswith("Linux 6.1 (vm)  12/07/26\n")
    assert "%memused (float 0.1…97.4)" in rendering and "06:01:59  16000  97.4  ◂ max kbfree; max %memused" in rendering


def test_a_table_of_numbers_over_its_budget_is_served_within_it_not_dropped() -> None:
    # A token a character or so: a rendering planned at the usual rate would outgrow the table itself.
    rows = "\n".join(f"{n % 7}.{n % 10},{n % 5}.{n % 3},{n % 4}.{n % 9},{n % 3}" for n in range(150))
    paste = f"Why is the third column flat?\n\n{rows}"
    bundle = ingest_paste(paste, IngestConfig(budget_tokens=1200))
    tables = [frame for frame in bundle.provider.frames if frame.kind == "table"]
    assert len(tables) == 1 and 1000 <= tables[0].token_cost <= 1200


_PSQL = """   relname   | n_live_tup | n_dead_tup
-------------+------------+------------
 accounts    |    1999999 |      12852
 branches    |         20 |        455
 history     |      16216 |          0
(3 rows)"""


def test_psqls_output_is_read_as_pipe_delimited_its_rule_and_row_count_aside() -> None:
    digest = distill_table(_PSQL)
    assert digest.rendering.startswith("[3 rows × 3 columns · pipe-delimited]")
    assert "n_live_tup (int 20…1999999)" in digest.rendering


_TIMINGS = """Task timing breakdown:
Section |  min time  |  avg time  |  max time  | %total
-----------------------------------------------------
Pair    | 0.079082   | 0.085487   | 0.091892   | 26.40
Neigh   | 0.087721   | 0.087871   | 0.088021   | 27.14
Comm    | 0.051156   | 0.059549   | 0.067942   | 18.39
Other   |            | 0.03564    |            | 11.01"""


def test_a_pipe_table_under_its_title_and_over_a_rule_is_read_as_pipe_delimited() -> None:
    assert classify(_TIMINGS, fenced=False).reason == "rung 5: pipe-delimited table (5 columns)"
    assert distill_table(_TIMINGS).rendering.startswith("[4 rows × 5 columns · pipe-delimited]")


def test_a_target_the_column_profiles_would_fill_keeps_each_tables_header_and_a_row_instead() -> None:
    names = ["kbmemfree", "kbavail", "kbmemused", "%memused", "kbbuffers", "kbcached", "kbcommit", "%commit"]
    sections = []
    for table in range(4):
        header = "06:00:00  " + "  ".join(f"{name}{table}" for name in names)
        rows = [f"06:{minute // 60:02d}:{minute % 60:02d}  " + "  ".join(f"{(minute * 7 + column) % 97:9d}"
                for column in range(len(names))) for minute in range(60)]  # fmt: skip
        sections.append("\n".join([header, *rows]))
    assert "columns: " in distill_table("\n\n".join(sections), target_tokens=3000).rendering
    rendering = distill_table("\n\n".join(sections), target_tokens=300).rendering
    assert "columns: " not in rendering
    assert all(f"kbmemfree{table}" in rendering for table in range(4))
    assert rendering.count("◂ max") >= 4


def _installed_sizes() -> str:
    sizes = [(f"pkg-{number:03d}", 100 + number * 37 % 900) for number in range(200)]
    sizes[120] = ("huge-sdk", 510243)
    rows = [f"{size:8d}  {name:<30} 1.0-{number}" for number, (name, size) in enumerate(sizes)]
    return "\n".join(["$ dpkg-query -W -f='${Installed-Size;8}  ${Package;-30} ${Version}\\n'", *rows])


def test_the_command_above_a_table_is_shown_and_no_header_when_its_first_line_is_a_row() -> None:
    rendering = distill_table(_installed_sizes(), target_tokens=200).rendering
    assert rendering.startswith("[200 rows × 3 columns")
    assert "columns: #1 (int 100…510243)" in rendering and "$ dpkg-query -W" in rendering


def test_a_superlative_naming_no_column_reads_the_tables_one_numeric_column() -> None:
    comparison = Comparison.of("Which packages take the most space?")
    rendering = distill_table(_installed_sizes(), target_tokens=200, comparison=comparison).rendering
    assert "huge-sdk" in rendering and "◂ greatest asked" in rendering
