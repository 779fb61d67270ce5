"""Every tuning number of the stomach, in one frozen object: ``StomachTuning``, with the log distiller's as
its ``log`` field (``LogConfig``).

``IngestConfig.tuning`` carries it into the pipeline, which hands it to every distiller, as a template miner
is handed its config; nothing reads a global. The numbers are general (they say how pastes, logs and
tokenizers in general behave), never fitted to one file; each field says what it bounds and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from envelopes.types import FrameKind

__all__ = ["AskTuning", "ClassifyTuning", "LogConfig", "StomachTuning"]


@dataclass(frozen=True, slots=True)
class LogConfig:
    # Masking: only this many characters of a line are masked (the rest is counted as ``<…>``). A number of at most
    # this many digits before a failure word counts failures (its value tells alerts apart); a longer one is part of
    # a name or an id.
    mask_prefix: int = 1000
    count_digits: int = 4

    # Merging templates that differ in one word: the word must take at least this many values (an open set
    # such as user names; two or three plain values are usually different events) ...
    merge_min_variants: int = 4
    # ... and the line must keep about this many other constant words to name one event.
    merge_context_words: int = 4
    # Templates longer than this many words are never merged (the pairing is linear but not free).
    merge_max_tokens: int = 64

    # Header columns (leading fields that every template line leaves out).
    header_max_columns: int = 8
    header_min_records: int = 20
    # A leading field is header only if a message follows it in this share of records ...
    header_coverage: float = 0.9
    # ... and it holds one value in this share of them, or its values are interchangeable:
    header_constant_share: float = 0.9
    # at least this many recurring rests of line, and this share of them recurring with several values.
    header_min_recurring: int = 5
    header_shared_share: float = 0.3
    # How many of a header field's values the legend names.
    header_values_shown: int = 3

    # Display.
    example_chars: int = 400
    template_chars: int = 240
    # A constant field with a digit longer than this is an id: it stays masked in template lines.
    constant_chars: int = 12
    # A masked value of at most this many word pieces keeps its punctuation (``<*>.<*>``, ``<*>:<*>``).
    shape_max_pieces: int = 3
    # The first this many alert templates show their real line right after their own, before other templates.
    alert_examples_early: int = 3
    # The header names this many kinds of alert (``12 HTTP 404, 3 error``), the rest counted as others.
    alert_kinds_shown: int = 4
    # Distinct alert lines kept per template, quoted this many at a time (see ``pieces.pieces_of``).
    alert_lines_per_template: int = 64
    alert_lines_per_piece: int = 4
    # Continuation lines shown under an example record, the telling ones among its first this many.
    continuation_lines_shown: int = 3
    continuation_lines_read: int = 256
    # Between clocked lines, a line with a full date and time of its own within this many characters of its start
    # heads a record of its own (``mining._own_record``).
    own_clock_chars: int = 100
    # A run with no clock is read as diagnostic records (``mining._diagnostic_records``) when it holds at least this
    # many and they, with the lines indented under them, are at least this many tenths of its lines.
    diagnosed_least: int = 3
    diagnosed_tenths: int = 8
    # A template holding the ask's terms shows up to this many of its records that hold them, as received.
    asked_lines_shown: int = 6
    # A template merged from at most this many variants shows each variant's first record under its example.
    variants_shown: int = 4
    # A term of the ask held by more than this share of a log's records makes none of them asked.
    asked_common_share: float = 0.75
    # A template that makes up at least one in this many records is what the log mostly says.
    leading_one_in: int = 20
    # Grouping under a shared leading tag: a tag is at most this many words, a group at least this many templates.
    group_prefix_words: int = 6
    group_min_templates: int = 2

    # Fitting to a target.
    # A log of at most this many characters per target token may render whole within the target: try that first.
    whole_rendering_trial: int = 4
    # Characters sampled per kind of piece for the token estimate (as many as a target of at least this many tokens
    # could need).
    estimate_sample_chars: int = 4_096
    estimate_least_tokens: int = 64
    # Measure-and-rescale rounds of the fit, and how close to the target (a fortieth plus a few tokens) is close
    # enough to stop.
    fit_rounds: int = 5
    fit_close_share: int = 40
    fit_close_tokens: int = 8
    # A rescaled allowance is taken a little under proportion (this share, less these tokens), so the next
    # rendering does not overshoot by the estimates' own noise.
    fit_rescale_share: float = 0.99
    fit_rescale_tokens: int = 4
    # Tokens the frame around the pieces (header, legend, omission notes) may add beyond its measured bare cost.
    fit_frame_slack: int = 16

    # Fits means full: a log of at most this many characters per target token is counted, and served whole
    # when its count fits the target.
    whole_text_trial: int = 8
    # An excerpt keeps the log's first lines and its last ones (a build's outcome, a test run's summary) before
    # ordinary lines; a record whose template occurs at most this often is rare, kept before the common ones.
    excerpt_head_lines: int = 3
    tail_lines: int = 5
    excerpt_rare_records: int = 2
    # An ask's term on more than this share of an excerpted log's lines raises none of them.
    excerpt_common_share: float = 0.2
    # A term said again in a line raises it, saturating as BM25's term frequency does with this k1.
    excerpt_term_saturation: float = 1.2
    # An excerpt's line whose ask's terms weigh less than this share of the best such line's is kept after the log's
    # last and first lines.
    excerpt_weak_share: float = 0.5
    # An excerpt keeps this many lines on each side of a line holding the ask's terms before its ordinary lines.
    excerpt_near_lines: int = 2
    # Of an alert template's records, an excerpt keeps this many first ones and its last one as alerts; and with a
    # record's alert line, this many of the record's lines under it.
    excerpt_alert_repeats: int = 3
    excerpt_alert_after: int = 2
    # An excerpt's line is cut, around the ask's terms, to about a twentieth of the target: this many characters a
    # target token, at least ``excerpt_line_least_chars`` and at most ``excerpt_line_chars`` (five long lines at the
    # log's end would take the room of the lines the ask needs).
    excerpt_line_chars_per_token: float = 0.15
    excerpt_line_least_chars: int = 240
    excerpt_line_chars: int = 1000
    # An excerpt keeps the records on each side of the log's longest silences (at most this many): gaps of at
    # least this many seconds and this many times the log's mean gap (a hang, a restart).
    excerpt_silences: int = 2
    excerpt_silence_seconds: int = 60
    excerpt_silence_times: float = 10.0
    # A record with no clock is dated by a line holding a date and a time at most this many lines above it.
    when_lines_back: int = 1
    # An alert of a kind the log says at most this many times keeps the lines beside it (``excerpt_near_lines``).
    excerpt_rare_alerts: int = 3
    # A crash the log holds (``distill.log.crash``) is read up to this many lines (a Python traceback up to the
    # second number, its last lines kept), and is one if it has this many; it is served in chunks of this many lines.
    crash_lines: int = 40
    crash_read_lines: int = 400
    crash_least_lines: int = 3
    crash_chunk_lines: int = 8
    # A Python exception's message may go on over indented lines of its own; this many are kept with it (a
    # driver's two-line hint, not an actor's whole description).
    crash_message_lines: int = 2
    # A template of one record is shown as its line when that is at most this many characters longer than the
    # masked key (its masks would hide a version or a count, saving nothing).
    single_record_unmasked_chars: int = 24
    # A log of at most this many times its target's tokens gets its templates and then, in the room they leave,
    # its own lines (an excerpt): its summary alone would leave most of the target to nothing.
    fill_within: float = 4.0
    # Less room than this is not worth an excerpt's heading.
    fill_min_tokens: int = 48
    # A short log whose templates' header and legend alone would take more than this share of its target is served
    # as an excerpt of its lines: its templates could show their legend and no line at all.
    excerpt_frame_share: float = 0.5
    # A log with at least this many templates per record is served as an excerpt of its lines at any target its
    # count is known for: templates that few records share save little and mask what tells each line apart. Its
    # count is taken for it when it holds at most ``excerpt_distinct_trial`` characters a target token; further
    # over, an excerpt keeps too few of its lines and the templates' counts say more (a run's tally among hundreds
    # of distinct lines).
    excerpt_distinct_share: float = 0.3
    excerpt_distinct_trial: int = 16
    # Any log is counted up to ``excerpt_distinct_trial`` characters a target token, and one whose target is at
    # least this share of its count is served as an excerpt of its lines: with half its lines kept by the ask and
    # the alerts, it shows the lines themselves, where templates with the leftover filled would mask what differs.
    excerpt_within_share: float = 0.5
    # So is a log of at most this many lines, however alike: its templates would show a few lines each.
    excerpt_few_lines: int = 24
    # A log with a blank line after nearly every line (this share of its gaps odd, read in its first characters,
    # at least this many gaps) is read without them (``distill.log._single_spaced``).
    double_spaced_share: float = 0.9
    double_spaced_sample: int = 64 * 1024
    double_spaced_least_lines: int = 8
    # At most this many templates holding the ask's terms are raised right after the alert templates.
    ask_templates: int = 6

    # Structured lines (see ``structured``): a source prefix, JSON or logfmt is read when at least this share of
    # the lines (of the first ``structured_sample`` for JSON and logfmt) has it; a mined line shows at most
    # ``structured_fields`` other fields, each value cut to ``structured_value_chars``; logfmt needs this many pairs.
    structured_share: float = 0.6
    structured_sample: int = 200
    structured_fields: int = 8
    structured_value_chars: int = 60
    logfmt_min_pairs: int = 3


@dataclass(frozen=True, slots=True)
class RelevanceTuning:
    """The relevance model's numbers (``organs.stomach.core.relevance``, ``organs.stomach.core.compare``): how a
    line is scored against the ask, and how the budget's leftover is filled with the best lines."""

    # What the ask compares is read in its first this many characters, as its terms are (``AskTuning.goal_chars``):
    # a paste that is one many-megabyte ask paragraph took nine seconds to be read for a comparison.
    goal_chars: int = 8 * 1024
    # Clocked records alike but for their numbers are offered to the fill this many times at most, the best scoring.
    alike_offered: int = 2
    # BM25's saturation and length normalisation (the usual values).
    k1: float = 1.2
    b: float = 0.75
    # Fused weights: a line that answers a comparison first, then the ask's rare terms, then an alert. A line's
    # rarity is scaled to the best line's, or to this share of a line holding every term of the ask, if more.
    compared_weight: float = 2.0
    alert_weight: float = 0.35
    # Up to this share of a frame's lines, an alert weighs fully; beyond, by how rare alerts still are.
    rare_alerts: float = 0.05
    ceiling_share: float = 0.5
    # Neighbours within this many lines of a scored line (a report's: this many, within its paragraph) share this
    # part of its score; the rest of the lines score a trace of this, favouring the head.
    context_lines: int = 2
    paragraph_lines: int = 8
    context_share: float = 0.25
    rest_score: float = 1e-3
    # A report's repeated headings fade by this factor each, down to this floor.
    repeat_fade: float = 0.5
    repeat_floor: float = 0.2
    # A log's line whose shape (its first characters masked) at most this share of its lines have is raised by
    # this much: a rare shape is what the log does differently.
    odd_share: float = 0.1
    odd_weight: float = 0.1
    odd_shape_chars: int = 200
    # A line longer than this is served clipped: a base64 blob says nothing more at ten times the length.
    line_chars: int = 1000
    # Below this many tokens of leftover, filling is not worth a heading.
    min_room: int = 24
    # A paste larger than this is not scored line by line (the shallow tiers take such pastes anyway).
    max_chars: int = 4 * 1024 * 1024
    fit_rounds: int = 4
    # The user's own prose is kept whole up to this share of the budget; a frame gives it room down to this size.
    user_words_share: float = 0.25
    # A code frame up to this share of the budget is kept whole the same way (a snippet cut short says nothing).
    snippet_share: float = 0.08
    smallest_donor: int = 64
    # Tokens kept between a filled rendering and its frame's whole text: counted apart, lines cost a little
    # differently.
    slack_tokens: int = 16
    # A line this strong (a compared value, the ask's rarest terms) may take room from its frame's rendering, up
    # to this share of it; a fill heading costs about this many tokens.
    strong: float = 0.75
    reserve: float = 0.4
    # A rendering under this many tokens keeps little structure whatever it does: its strong lines may take this
    # share of it.
    tight_tokens: int = 1000
    tight_reserve: float = 0.6
    heading_tokens: int = 24
    # Whatever their strength, a frame's lines scoring at least this take up to this share of its rendering.
    ranked_least: float = 0.3
    ranked_share: float = 0.25
    # Comparisons: the lines picked for a superlative, for a threshold; a table's header is looked for among its
    # first this many lines.
    top_picks: int = 8
    # A superlative naming no key is answered by the extremes of the keys that take at least this many values.
    unnamed_values: int = 3
    # A value the ask states roughly is answered by lines within this share of it.
    near_share: float = 0.25
    threshold_picks: int = 64
    header_lines: int = 40
    # A column is named by the ask when a word of the ask and the column's name, each at least this long, share a
    # start (a shorter one would name columns by chance).
    column_name_chars: int = 3
    # A picked line with no clock of its own comes with the nearest line at most this many lines above it that
    # begins with one (a report printed every interval under its timestamp: a value with no time answers no "when").
    stamp_lines_back: int = 12
    # A superlative read down a column also keeps the edges of the run of rows around the best one whose values stay
    # within this share of it.
    run_share: float = 0.5
    # A superlative naming no column of a table speaks of its one column with numbers on this share of its rows.
    numeric_rows_share: float = 0.9


@dataclass(frozen=True, slots=True)
class AskTuning:
    """How the ask is read (``organs.stomach.core.asked``) and found past the block cap
    (``organs.stomach.core.blocks.split``)."""

    # A content word of the ask has at least this many letters; at most this many terms are kept.
    min_word_chars: int = 3
    max_terms: int = 48
    # The identifiers and codes of the user's own prose around the evidence join the ask's terms, at most this many.
    context_terms: int = 16
    # A content word is looked for by its stem, no shorter than this (``pauses`` finds ``pause`` and ``paused``).
    min_stem: int = 4
    # An ask is a few sentences: a goal longer than this is read only this far, and no term is longer than the cap
    # (nor shorter than this many characters: a single letter would be found everywhere).
    goal_chars: int = 8 * 1024
    max_term_chars: int = 120
    min_term_chars: int = 2
    # Past the block cap, the ask is looked for among the remainder's paragraphs of at most this many characters
    # (an ask is short): the last of those in its last ``tail_chars``, and those holding a question mark among its
    # first ``question_runs`` times the cap of paragraphs, so the work stays bounded however many a paste has.
    paragraph_chars: int = 2000
    tail_chars: int = 1 << 20
    question_runs: int = 16
    # The strongest asks found there, at most this many, become blocks of their own.
    most_set_apart: int = 4


@dataclass(frozen=True, slots=True)
class ClassifyTuning:
    """How a block is read (``organs.stomach.core.classify``, ``organs.stomach.core.blocks``): how much of it the
    ladder reads and the shares of its lines a rung asks for, whether it is the user's own words, and how much of
    its ends is read to join it to its neighbours. Shares are whole tenths or one line in so many, so a comparison
    stays exact in integers."""

    # The ladder reads a block's first and last this many lines (its shape lives at its ends); a block longer than
    # this many characters is read only as far as its head needs, its last lines read from its end.
    sample_head_lines: int = 300
    sample_tail_lines: int = 100
    huge_block_chars: int = 1_000_000
    # What opens a block (a report's heading, the user's sentence before a tool run) is among its first this many
    # lines, read from its first this many characters (and the line closing a tool run from its last this many):
    # a large block is not copied for its ends.
    opening_lines: int = 4
    opening_chars: int = 2048
    # An untagged fenced box of at least this many lines that no rung reads (prose-like lines) holds a program's
    # output, a log; a shorter one, a command or snippet, is code.
    boxed_output_lines: int = 8
    # What a block ends in (a trace's last frames, a report's tally) is read from its last this many lines.
    closing_lines: int = 30
    # A block of a prompt and at most this many lines under it (its output's banner) opens the output after it.
    command_banner_lines: int = 2
    # A block's head read for the prefix of the stream before it (``blocks.structures.join_streams``).
    stream_scan_chars: int = 64 * 1024
    # This many blocks in a row, none the user's words, are one document its blank lines cut
    # (``blocks.structures.join_shattered_runs``).
    shattered_run_blocks: int = 6
    # So many blocks in a row, none the user's words and one kind of evidence at most among them, are one document.
    shattered_short_run: int = 3
    # A line of dashes at least this long frames a program's message (``blocks.structures``): the blocks between
    # two such lines are that message's.
    frame_rule_chars: int = 20
    # A line at least this long that a blank line cuts mid-sentence is a program's wrapped message.
    wrapped_line_chars: int = 50
    # A block whose first this many lines hold no trace line is at most a log with a trace further down.
    trace_probe_lines: int = 20
    # A shape names a block when at least this many tenths of its lines carry it (a trace's lines, clocks, records,
    # JSON lines, messages after a source column, weak log signals, listing keys, code-shaped lines).
    signal_tenths: int = 5
    # Compiler diagnostics and a test runner's lines sit among the output they explain: one line in this many is
    # enough.
    diagnostic_one_in: int = 4
    # A block whose lines are frames one in this many times is a log of the tracebacks a program printed.
    frame_one_in: int = 3
    # A block of at least this many frames, opening with one (or with a debugger's thread heading) and carried by
    # trace lines, is a backtrace though no exception heads it (gdb's ``bt``, frames pasted alone).
    bare_trace_frames: int = 3
    # A line of at least this many words, at most one in this many of them not a plain word, ending as a sentence
    # does, is someone writing even where it quotes an operator (``Men + Women != Total?``, ``false -> true``).
    sentence_least_words: int = 8
    sentence_odd_word_one_in: int = 3
    # A block of at least this many lines, at most one in this many of them mostly plain words (of at least this
    # many words), is a program's output when no rung above read it.
    machine_least_lines: int = 8
    # Source that nests: at least one line in this many opens a block, and the lines that close blocks are
    # within this factor of those that open them.
    nested_one_in: int = 10
    # A rule among a block's first this many lines (a box's top, the rule under a header) is an aligned table's
    # drawing, not a row (``table_rungs.aligned_table_rung``).
    header_rule_lines: int = 3
    nested_balance: float = 2.0
    machine_wordy_one_in: int = 4
    wordy_least_words: int = 4
    # A prose block said this many times over, word for word, is a program's prompt or banner, never the ask.
    repeated_prose_times: int = 3
    # A source column's sources repeat: at most one per this many prefixed lines (or this many sources in all).
    source_one_in: int = 3
    sources_always_allowed: int = 2
    # A comma table's cells read like values: at most this many words each (unless the table is this wide, when a
    # CSV of many columns may hold free-text ones), and this many on average.
    cell_words: int = 4
    many_columns: int = 5
    mean_cell_words: float = 2.0
    # A delimited table: at least this many tenths of its lines split into the same number of cells.
    column_tenths: int = 9
    # Source-prefixed lines, aligned table rows, numbered records and samples on a clock: at least this many tenths
    # of the lines; samples, at least this many rows.
    row_tenths: int = 8
    # A profiler's report: rows of at least this many, most opening with this many numbers, then a name.
    numeric_least_rows: int = 8
    numeric_leading_fields: int = 3
    sample_rows: int = 3
    # An aligned listing: at least this many aligned keys, and this many tenths of lines keyed or indented under one.
    listing_aligned_keys: int = 3
    listing_tenths: int = 9
    # Numbered machine records are told from a list by at least this many lines, and open with a number of at least
    # this many digits (joined by colons and dots or not).
    numbered_least_lines: int = 3
    numbered_record_digits: int = 5
    # A line holding this many key=value pairs is a record (logfmt), not a setting; such records are told from a
    # config's few long lines by at least this many lines.
    record_pairs: int = 3
    record_least_lines: int = 3
    # A lone token longer than this is not a path; a fence's language tag is read up to this many characters.
    path_chars: int = 1024
    language_chars: int = 40
    # A reason quotes the path it found, and the line that closes a tool run, up to this many characters.
    quote_chars: int = 80
    closing_quote_chars: int = 60
    # The user's words glued above or below evidence (a sentence introducing it, a question under it) run to at
    # most this many lines; more reads as a paragraph of its own.
    glued_lines: int = 3
    # A block is someone writing when more than this many tenths of the non-blank lines of its first this many
    # characters are not machine-made; such a block of at most this many lines introduces a tool run after it.
    own_words_tenths: int = 5
    own_words_chars: int = 2000
    introduction_lines: int = 3
    # A weak log signal (``rungs.weak_log_rung``) is looked for near a line's start: a level within this many
    # characters (fewer for a lone line, where a level word further in is as likely prose), a daemon tag and a clock
    # within these.
    weak_level_chars: int = 120
    weak_level_chars_alone: int = 40
    weak_tag_chars: int = 120
    weak_clock_chars: int = 80


@dataclass(frozen=True, slots=True)
class StomachTuning:
    """The stomach's tuning numbers: how it plans sizes, values and shares its budget, fits and renders."""

    # Characters per token. Sizes are planned with a conservative figure (English prose runs near 4, logs and code
    # near 2.6), and measured exactly afterwards; the prose figure is the most a token is expected to hold, so a
    # sample of that many characters per target token is as long as a rendering could need.
    chars_per_token: float = 2.5
    prose_chars_per_token: int = 4

    # A compact rendering that saves less than this share of the full text's tokens is not worth what it leaves
    # out: the full text is served instead (and a log that close to its target is served as an excerpt).
    meaningful_saving: float = 0.25

    # A time window is read from the leading stamps of this many lines at each end of a text read only in part
    # (a trace, a log on the shallow tier): both ends, so the window bounds the whole text.
    window_edge_lines: int = 1000

    # Value: stack traces > logs > tables and code > notes, raised for alert lines, for the ask's terms (each
    # counted up to a few times) and for the paste's last evidence segment.
    kind_values: tuple[tuple[FrameKind, int], ...] = (
        ("stack_trace", 5),
        ("log", 3),
        ("table", 2),
        ("code", 2),
        ("note", 1),
    )
    # This share of the budget is shared out equally before value counts (a segment smaller than its part takes its
    # size): a config pasted beside a long log keeps room to be read, however many alerts and ask terms the log holds.
    floor_share: float = 0.7
    alert_value: int = 3
    ask_value: int = 2
    ask_terms_counted: int = 3
    last_segment_value: int = 2
    # The closing lines of the paste's last evidence segment claim a share before ordinary lines.
    summary_lines: int = 12
    # What a claimed rendering adds around its lines: a header and elision notes.
    claim_overhead: int = 24
    # How much of a long segment's head and tail is read for its value: its value is known before it is rendered.
    value_head_chars: int = 24 * 1024
    value_tail_chars: int = 8 * 1024
    # A rendering is not shrunk below this many tokens to absorb an overrun: so small, it says next to nothing.
    smallest_shrunk: int = 48

    # Fitting a rendering to its share: planned by an estimate, it may overshoot or undershoot; it is asked again
    # at most this many times, scaled by its miss and a margin under proportion. A head-and-tail rendering served
    # under this share of its share is rendered again, larger.
    rerender_attempts: int = 3
    rerender_margin: float = 0.95
    undershoot: float = 0.8
    # What a deferred frame's compact rendering aims at when someone asks for it later.
    lazy_target_tokens: int = 1024

    # Head and tail: a line kept for what it holds is shown up to this many characters (enough for a long error
    # message), and costs this many more (its newline and, likely, an elision line before it).
    kept_line_chars: int = 600
    kept_gap_chars: int = 30
    # Kept lines take up to this share of the room, the head and tail the rest, this many head lines for each tail
    # line (a segment's start usually says what it is). The room is never planned under this many characters, and a
    # cut between characters (one enormous line) leaves this many for its note.
    kept_lines_share: float = 0.5
    head_lines_per_tail_line: int = 2
    # Code or a note ranked by the relevance model (``distill.passages``) keeps its opening in up to this share of
    # the room: what the text is, a file's first declarations.
    passage_head_share: float = 0.2
    # An ask's term on more than this share of the lines raises none of them (``budget.rarest_salient``).
    kept_common_share: float = 0.2
    least_room_chars: int = 16
    character_note_chars: int = 40
    # Code whose written lines are at least this share comments, and at least this many, is a shipped config: its
    # settings are served first (``distill.config``).
    config_comment_share: float = 0.5
    config_least_comments: int = 8

    # Tables: the head and tail rows kept, then up to this many rows holding the ask's terms and this many alert
    # rows; types are inferred from this many rows, and without inference (the shallow tier) a column whose first
    # rows all read as numbers is numeric.
    table_head_rows: int = 5
    table_tail_rows: int = 3
    table_ask_rows: int = 12
    # Rows offered to fill the room the rows that matter leave: this many more holding the ask's terms, and about
    # twice as many spread over the table.
    table_fill_rows: int = 400
    table_alert_rows: int = 8
    # A term of the ask counts this much less in each row after one that held it; alerts on more than this share of
    # the rows are common, and this many of them are kept.
    table_term_fade: float = 0.5
    table_common_alerts: float = 0.3
    table_common_alert_rows: int = 2
    # A kept row is shown up to this many characters (a row of long cells would leave room for few others).
    table_row_chars: int = 400
    # Two neighbouring numeric columns that read as a start and an end keep their longest span's row, and this many
    # rows when the ask asks for the longest or the shortest (``distill.table._spans``).
    table_span_rows: int = 5
    # A start column and an end column are one when the starts rise down the table in this many tenths of its steps.
    table_span_rising_tenths: int = 8
    table_typed_rows: int = 20_000
    table_sampled_rows: int = 200
    # Directive lines (Zeek's ``#fields``) are looked for among a table's first this many lines; a kept row says
    # at most this many reasons why.
    table_directive_lines: int = 16
    table_reasons_shown: int = 3
    # A delimiter on at least this many tenths of a table's lines splits its rows; aligned columns are read from
    # its first this many lines. A column's name is shown up to this many characters; a row kept for the ask names
    # this many of its terms.
    table_delimiter_tenths: int = 9
    table_aligned_lines: int = 400
    table_name_chars: int = 60
    table_terms_named: int = 3
    # A header row starts another table of the block when this many rows under it share its count of cells; each
    # table's size line and each column's type cost about this many characters, and one needing at most this share
    # of the room left is served whole.
    table_section_rows: int = 3
    table_section_opening_chars: int = 20
    table_section_whole_share: float = 0.6

    # Traces: a line is shown up to this many characters; a section's header cut short keeps this many last lines
    # (they title the frames below: "Freed by task 7:").
    trace_line_chars: int = 300
    trace_header_tail: int = 2
    # Of the frames a trace's section keeps at its two ends, the outermost end keeps one in this many (at least
    # one), the innermost end the rest: what failed is near the innermost frame, not near main.
    trace_outer_share: int = 3
    # A Java thread dump (``distill.thread_dump``): at least this many thread headers make one; its first this many
    # lines are kept. Its threads are grouped by what they say (named by a deadlock report 0, holding a monitor
    # others wait for 1, blocked 2, waiting on a lock another holds 3, running the application's code 4, idle 5):
    # groups up to the salient one keep at least this many frames. The plans, richest first, give (frames of a
    # working thread, frames of an idle one); 0 keeps a thread's header and state, -1 its header, -2 its name among
    # the threads not shown. A contended monitor's line names this many of the threads waiting for it.
    dump_least_threads: int = 3
    dump_preamble_lines: int = 2
    dump_salient_group: int = 3
    dump_idle_group: int = 5
    dump_waiter_names: int = 3
    dump_salient_frames: int = 8
    dump_untargeted_plan: tuple[int, int] = (6, 1)
    dump_frame_plans: tuple[tuple[int, int], ...] = (
        (1_000_000, 1_000_000),
        (24, 5),
        (12, 3),
        (8, 1),
        (5, 0),
        (3, -1),
        (2, -2),
        (1, -2),
        (0, -2),
        (-1, -2),
        (-2, -2),
    )
    # A deadlock report longer than this share of the room keeps who waits for whom, not the stacks it repeats.
    dump_report_share: float = 0.5
    # A trace's frame is titled with its exception up to this many characters.
    title_detail_chars: int = 80
    # Cut to a target, a trace is rendered by the richest plan that fits: every frame and header line (with, then
    # without, the frames a debugger marks unreliable), then this many frames at each end of a section, then these
    # (frames at each end, header lines) (0 frames: each section's innermost one only; -1: the cause chain alone).
    # Without a target, the untargeted plan. Its summary quotes the exception up to this many characters.
    trace_frame_plans: tuple[int, ...] = (24, 12, 8, 5)
    trace_lean_plans: tuple[tuple[int, int], ...] = (
        (5, 24),
        (3, 24),
        (3, 12),
        (2, 8),
        (1, 6),
        (1, 4),
        (1, 3),
        (0, 3),
        (0, 2),
        (0, 1),
        (-1, 1),
    )
    trace_untargeted_plan: tuple[int, int] = (3, 6)
    # A section saying its thread crashed keeps this many times the frames of the others (this many at each end
    # where they keep their innermost one only); an elided header keeps up to this many of its lines that read as
    # trouble.
    trace_salient_factor: int = 3
    trace_salient_least: int = 2
    # Where some thread of a trace works, one waiting for work keeps at most this many frames at each end.
    trace_idle_frames: int = 1
    trace_header_alerts: int = 4
    trace_summary_chars: int = 160
    # A dump of at least this many sections whose uniform plan keeps fewer than this many frames at each end keeps
    # its most telling sections instead: the richest of these frame counts at each end (for the most telling one,
    # then for the others) that show this many sections, else the leanest that show one; the others are counted by
    # header (this many headers named). A section's worth: the rarity of its frames among the sections (a library's
    # frame counting this share), plus this weight times the rarity of the ask's terms it holds and this one times
    # that of the paste's other blocks' alert terms; a repeat's and an idle thread's worth count these shares; a
    # crash adds this much. The alert terms are read from this many characters at each end of each other block, from at
    # most this many distinct alert lines, at most this many terms.
    trace_ranked_sections: int = 12
    trace_ranked_below: int = 3
    trace_ranked_frames: tuple[int, ...] = (8, 5, 3, 1)
    trace_ranked_least: int = 2
    trace_others_named: int = 6
    trace_library_share: float = 0.25
    trace_ask_weight: float = 1.0
    trace_echo_weight: float = 0.5
    trace_repeat_share: float = 0.1
    # A section stopped in an earlier one's calls, its arguments aside, counts this share; the first of such a stack
    # at least this many application frames deep counts 1 + this weight × log2 of how many share it.
    trace_alike_share: float = 0.3
    trace_shared_frames: int = 4
    trace_shared_weight: float = 0.5
    trace_idle_share: float = 0.3
    trace_salient_weight: float = 10.0
    # A kept section's frames naming the ask's or the alerts' terms come first, the rarer among the frames the
    # sooner; a term on more than this share of the frames raises none.
    trace_sought_common_share: float = 0.2
    echo_scan_chars: int = 256 * 1024
    echo_alert_lines: int = 64
    echo_terms: int = 64

    log: LogConfig = field(default_factory=LogConfig)
    relevance: RelevanceTuning = field(default_factory=RelevanceTuning)
    ask: AskTuning = field(default_factory=AskTuning)
    classify: ClassifyTuning = field(default_factory=ClassifyTuning)

    def value_of(self, kind: FrameKind) -> int:
        """A segment's value for its kind alone, before its lines raise it."""
        return dict(self.kind_values)[kind]
