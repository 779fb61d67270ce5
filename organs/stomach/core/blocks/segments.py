"""A paste's segments and its goal: normal form, blocks, classification, the user's words.

``plan_paste`` cuts the paste's normal form (``organs.stomach.core.blocks.normal``) into
blocks, places each back in the received text (every span locates received
characters), classifies each, splits the user's words glued above or below
evidence into segments of their own, and picks the goal (rules:
``organs.stomach.core.blocks.intent``; with a stated ``intent`` the goal is exactly that).

``segment_texts`` is the one place a received segment becomes its full text
(its digest is the frame id; fetching it in full returns it) and the text the
model is served of it (its normal form).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from envelopes.types import Redaction, SegmentOutcome
from organs.stomach.core.blocks.intent import ask_strength, glued_lines, glued_tail_lines, own_words
from organs.stomach.core.blocks.normal import normal_form, normalize
from organs.stomach.core.blocks.sessions import join_commands, join_sessions
from organs.stomach.core.blocks.split import Block, split_blocks
from organs.stomach.core.blocks.structures import (
    join_reports,
    join_shattered_runs,
    join_sql_sessions,
    join_streams,
    join_tool_runs,
)
from organs.stomach.core.classify.ladder import Classification, classify
from organs.stomach.core.shapes.line_shapes import closes_run
from organs.stomach.core.tuning import ClassifyTuning, StomachTuning

__all__ = ["Plan", "Segment", "cut_blocks", "plan_blocks", "segment_texts"]


@dataclass(slots=True)
class Segment:
    block: Block
    # The full text (the received segment: its digest is the frame id, fetching full returns it) and
    # what the model is served of it (its normal form); see ``segment_texts``.
    text: str
    served: str
    classification: Classification
    outcome: SegmentOutcome = "frame"
    frame_id: str | None = None
    note: str = ""
    redacted: tuple[Redaction, ...] = ()


@dataclass(slots=True)
class Plan:
    segments: list[Segment]
    goal_pieces: list[str] = field(default_factory=list)
    anchors: list[str] = field(default_factory=list)


def segment_texts(received: str, *, normal: bool = False, served: str | None = None) -> tuple[str, str]:
    """A segment's full text and the text served from it: the one place a received segment becomes both.
    ``normal`` says ``received`` is a span of a paste known to be in normal form: it is not read again; ``served``
    is its normal form when the caller has it already (``cut_blocks`` read it from the paste's). A text without
    controls is its own normal form, the same object (a frame says whether its served text is a normal form)."""
    if served is not None:
        # Drawing always removes a control character, so an equal form is a text that held none.
        return received, received if served == received else served
    return received, received if normal else normal_form(received)


def _line_cuts(text: str, lead: int, tail: int) -> tuple[int, int]:
    """Where the first ``lead`` lines end and the last ``tail`` lines start."""
    after_lead = 0
    for _ in range(lead):
        after_lead = text.index("\n", after_lead) + 1
    newline = len(text)
    for _ in range(tail):
        newline = text.rindex("\n", 0, newline)
    return after_lead, newline + 1 if tail else len(text)


def _classified(
    text: str, block: Block, block_text: str | None, served_text: str | None, tuning: ClassifyTuning
) -> list[Segment]:
    """The block's segment, or more when the user's words are glued above or below the evidence.

    Evidence is what the ladder found a shape for (with or without the glued lines), or prose whose lines
    are mostly machine-made. The block's body is classified once: when its text is the ``rest`` already read
    without the glued lines, that reading is its classification.
    """
    full, served = segment_texts(
        text[block.start : block.end] if block_text is None else block_text, normal=block.normal, served=served_text
    )
    found = classify(served, fenced=block.fenced, language=block.language, tuning=tuning)
    if found.kind == "prose" and block.parts > 1:
        # None of its parts was the user's words: it is a program's output, whatever its sentences.
        found = Classification("log", f"{block.parts} blocks in a row, none the user's words: one program's output")
    if block.fenced or found.kind == "path_ref":
        return [Segment(block, full, served, found)]
    lead, tail = glued_lines(served, tuning), glued_tail_lines(served, tuning)
    rest, rest_found = "", None
    if found.kind == "prose" and (lead or tail):
        rest = served[slice(*_line_cuts(served, lead, tail))]
        if own_words(rest, tuning):
            rest_found = classify(rest, fenced=False, tuning=tuning)
            if rest_found.kind == "prose":
                lead = tail = 0
    if not lead and not tail:
        return [Segment(block, full, served, found)]
    # The normal form keeps every line, so the received text splits at the same lines.
    after_lead, tail_start = _line_cuts(full, lead, tail)
    glued = Classification("prose", "the user's words glued to the evidence")
    body = Block(block.start + after_lead, block.start + len(full[:tail_start].rstrip()), fenced=False)
    pieces: list[tuple[Block, Classification | None]] = [(body, None)]
    if lead:
        pieces.insert(0, (Block(block.start, block.start + len(full[:after_lead].rstrip()), fenced=False), glued))
    if tail:
        pieces.append((Block(block.start + tail_start, block.end, fenced=False), glued))
    segments = []
    for piece, kind in pieces:
        piece_full, piece_served = segment_texts(text[piece.start : piece.end], normal=block.normal)
        if kind is None:
            # The body is the rest read above when it serves the same text: that reading stands.
            known = rest_found if piece_served == rest else None
            kind = known or classify(piece_served, fenced=False, tuning=tuning)
        segments.append(Segment(piece, piece_full, piece_served, kind))
    for segment in segments:
        segment.block = replace(segment.block, remainder=block.remainder, normal=block.normal)
    return segments


# Kinds whose blank-line pieces read as one when joined: a config file's sections, a log's runs of records.
_JOINED_KINDS = frozenset({"code", "log"})


def _joined_alike(text: str, segments: list[Segment], tuning: ClassifyTuning) -> list[Segment]:
    """The segments, with each run of neighbours of one kind (``_JOINED_KINDS``, neither fenced nor a remainder)
    joined when the run's joined text still reads as that kind, read once: a config file cut at its blank lines is
    one file, not a segment per section, each compacted alone. A tool run that closed (its tally, its verdict)
    ends a run, and a segment that repeats the one before starts another (a duplicate, served once)."""
    joined: list[Segment] = []
    run: list[Segment] = []

    def close() -> None:
        if len(run) > 1:
            block = replace(run[0].block, end=run[-1].block.end, remainder=run[-1].block.remainder)
            full, served = segment_texts(text[block.start : block.end], normal=block.normal)
            found = classify(served, fenced=False, tuning=tuning)
            if found.kind == run[0].classification.kind:
                joined.append(Segment(block, full, served, found))
                run.clear()
                return
        joined.extend(run)
        run.clear()

    for segment in segments:
        previous = run[-1] if run else None
        goes_on = (
            previous is not None
            and segment.classification.kind == previous.classification.kind
            and not segment.block.fenced
            and not previous.block.remainder
            and not closes_run(previous.served.rstrip().rsplit("\n", 1)[-1])
            and previous.served != segment.served
        )
        if not goes_on:
            close()
        if segment.classification.kind in _JOINED_KINDS and not segment.block.fenced:
            run.append(segment)
        else:
            joined.append(segment)
    close()
    return joined


def plan_blocks(
    text: str,
    blocks: list[Block],
    intent: str | None,
    max_blocks: int,
    block_texts: Mapping[tuple[int, int], str] | None = None,
    tuning: ClassifyTuning | None = None,
    served_texts: Mapping[tuple[int, int], str] | None = None,
) -> Plan:
    """The paste's segments, in order, with its goal and anchors: the blocks (``cut_blocks``: spans in ``text``,
    the received paste) classified, and the goal picked (rules: ``intent``). ``block_texts`` holds blocks' texts
    the caller sliced already, by span, so a large block is not held twice, and ``served_texts`` the normal forms
    ``cut_blocks`` read from the paste's; ``tuning`` holds the classifier's numbers."""
    known = block_texts or {}
    served = served_texts or {}
    tuning = tuning or ClassifyTuning()
    segments = _joined_alike(
        text,
        [
            segment
            for block in blocks
            for span in [(block.start, block.end)]
            for segment in _classified(text, block, known.get(span), served.get(span), tuning)
        ],
        tuning,
    )
    for segment in segments:
        if segment.block.remainder:
            segment.note = f"; past max_blocks {max_blocks} blocks: it holds the rest of the paste whole, as evidence"
    plan = Plan(segments)
    for segment in segments:
        if segment.classification.kind == "path_ref":
            segment.outcome = "anchor"
            token = segment.served.strip()
            if token not in plan.anchors:
                plan.anchors.append(token)
    # What lies past the block limit is evidence: an ask there was set apart from it (``split_blocks``).
    prose = [segment for segment in segments if segment.classification.kind == "prose" and not segment.block.remainder]
    if intent is not None:
        plan.goal_pieces = [intent]
        stated = next(
            (segment for segment in segments if segment.served.strip() == intent.strip() and intent.strip()), None
        )
        if stated is not None:
            stated.outcome = "goal"
            stated.note += "; the stated intent"
        return plan
    said = Counter(segment.served.strip() for segment in prose)
    strengths = [
        0 if said[segment.served.strip()] >= tuning.repeated_prose_times else ask_strength(segment.served, tuning)
        for segment in prose
    ]
    strongest = max(strengths, default=0)
    asks = [segment for segment, strength in zip(prose, strengths, strict=True) if strength == strongest]
    if strongest:
        for segment in asks:
            segment.note += "; puts a question to the reader" if strongest == 2 else "; reads as the ask"
    else:
        asks = [segment for segment in prose if own_words(segment.served, tuning)][-1:]
        for segment in asks:
            segment.note += "; no prose reads as an ask, so the last prose block in the user's own words is the goal"
    for segment in asks:
        segment.outcome = "goal"
        # The user's question pasted twice (above and below the evidence) is asked once.
        if segment.served not in plan.goal_pieces:
            plan.goal_pieces.append(segment.served)
    return plan


def cut_blocks(
    text: str, max_blocks: int, tuning: StomachTuning | None = None
) -> tuple[list[Block], dict[tuple[int, int], str]]:
    """The paste's blocks, cut from its normal form, with spans in ``text`` (the received paste); ``tuning`` bounds
    the search for an ask past ``max_blocks`` (``ask``) and says how blocks are read to join them (``classify``).

    With them, by received span, the normal form of each block of a paste that has one of its own (controls), read
    from the paste's (``NormalText.received_form``): the paste is drawn once, not again block by block."""
    tuning = tuning or StomachTuning()
    normal = normalize(text)
    split = split_blocks(normal.text, max_blocks, tuning.ask, tuning.classify)
    blocks: list[Block] = []
    served: dict[tuple[int, int], str] = {}
    reading = tuning.classify
    received = (lambda start, end: text[slice(*normal.received_span(start, end))]) if normal.changed else None
    joined = join_reports(normal.text, split, reading)
    joined = join_tool_runs(normal.text, join_sql_sessions(normal.text, joined, reading), reading)
    joined = join_commands(normal.text, join_streams(normal.text, joined, reading, received), reading, received)
    joined = join_sessions(normal.text, joined, reading, received)
    for block in join_shattered_runs(
        normal.text, joined, reading, received, lambda piece: classify(piece, fenced=False, tuning=reading).kind
    ):
        start, end = normal.received_span(block.start, block.end)
        blocks.append(replace(block, start=start, end=end, normal=not normal.changed))
        if normal.changed:
            served[start, end] = normal.received_form(block.start, block.end)
    return blocks, served
