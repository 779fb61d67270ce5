"""Stack-trace distillation: exception and message, the cause chain, the frames that matter.

A trace is read into sections: the first exception, then every cause (``Caused
by:``, ``Suppressed:``, an inner ``--->``, "During handling…", a goroutine, a
kernel report's "Allocated by task" and "Freed by task"). A section is its
header lines (type and message) and its frames; a frame is its line plus the
lines indented under it (a Python frame's source and carets, a Go function's
``file.go:12`` line, a Rust frame's ``at`` line).

The compact rendering keeps every section's first header line, so the whole
cause chain survives; of each section's frames it keeps the ends (the innermost
frame is first in most runtimes and last in Python), counts a frame repeated
back to back (``… 12 identical frames``), keeps the innermost and outermost
application frames when they would be elided, and says what it elided. With a
target it keeps as many frames as fit: first it drops a kernel's ``? func``
frames (the unwinder's guesses), then frames from the middle of each section.
dmesg uptime stamps are kept on header lines and dropped from frames.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from organs.stomach.core.asked import AskTerms, rarity
from organs.stomach.core.distill.text import clip_line, elision, head_tail, plural
from organs.stomach.core.distill.thread_dump import is_thread_dump, render_thread_dump
from organs.stomach.core.shapes.signals import is_alert
from organs.stomach.core.shapes.trace_shapes import (
    is_go_function,
    is_idle_frame,
    is_trace_frame,
    kernel_prefix_end,
    library_frame,
    trace_header,
)
from organs.stomach.core.tuning import StomachTuning

__all__ = ["TraceDigest", "distill_trace"]

# A plan's "every frame, every header line".
_ALL = 1_000_000
# A section that says its thread crashed, panicked or faulted (Apple's ``Thread 0 Crashed::``, Go's running goroutine).
_SALIENT = re.compile(r"\b(?:crash(?:ed|ing)?|panic(?:ked|king)?|fault(?:ed|ing)?|abort(?:ed)?)\b|\[running\]", re.I)
# What differs between two runs of one frame: its addresses and numbers (argument words, offsets, line numbers
# aside, a frame is its function).
_ADDRESSES = re.compile(r"0x[0-9a-f]+|\d+")
# The stack and frame pointers a Go runtime dump writes after each frame's file line: they differ in every dump and
# say nothing of the code.
_GO_REGISTERS = re.compile(r" fp=0x[0-9a-f]+ sp=0x[0-9a-f]+ pc=0x[0-9a-f]+(?=\s*$)")
# A thread whose header says it waits for work: Go's "goroutine 0 [idle]:", "goroutine 9 [GC worker (idle)]:".
_IDLE_STATE = re.compile(r"\[[^\]\n]{0,60}\bidle\b[^\]\n]{0,60}\]")
# The headers that chain a section to the one before it: a cause, a suppressed exception, an inner exception.
_CHAINED = frozenset({"cause", "suppressed", "inner"})
# What gdb writes under a frame it has nothing more to say of, at the frame's own indentation.
_FRAME_NOTES = frozenset({"No locals.", "No symbol table info available.", "No arguments."})
# Words that say a header line states the failure, in whatever case a runtime writes them ("uncaught exception"),
# and the kernel's capitals ("kernel BUG at").
_TROUBLE = re.compile(r"\b(?:exception|error|fatal|reason|assert(?:ion)?|terminat(?:ed|ing)|(?-i:BUG))\b", re.I)


@dataclass(frozen=True, slots=True)
class _Plan:
    keep: int
    header_lines: int
    drop_unreliable: bool


def _plans(tuning: StomachTuning) -> tuple[_Plan, ...]:
    """Richest first; the first that fits the target is served. Middle frames go before the lines between them
    (messages, lock chains, "Kernel panic - not syncing"), which say more per token."""
    return (
        _Plan(_ALL, _ALL, drop_unreliable=False),
        _Plan(_ALL, _ALL, drop_unreliable=True),
        *(_Plan(keep, _ALL, drop_unreliable=True) for keep in tuning.trace_frame_plans),
        *(_Plan(keep, lines, drop_unreliable=True) for keep, lines in tuning.trace_lean_plans),
    )


@dataclass(frozen=True, slots=True)
class TraceDigest:
    rendering: str
    exception: str


@dataclass(slots=True)
class _Frame:
    lines: list[str]
    indent: int

    @property
    def key(self) -> str:
        """The frame as compared for repeats: without dmesg stamps, which differ on every line."""
        return "\n".join(_unstamped(line).strip() for line in self.lines)

    @property
    def unreliable(self) -> bool:
        """A kernel unwinder's guess: ``? func+0x1a/0x30``."""
        return _unstamped(self.lines[0]).lstrip().startswith("? ")

    @property
    def application(self) -> bool:
        # A Go frame names its package on its function line and its file on the next (``runtime/select.go``).
        return not any(library_frame(line) for line in self.lines[:2]) and not self.unreliable


@dataclass(slots=True)
class _Section:
    header: list[str] = field(default_factory=list)
    frames: list[_Frame] = field(default_factory=list)
    # Read once, whatever plan renders it (``_read``): whether it says its thread crashed, which header lines state
    # the failure, the earlier section whose frames it repeats (-1 for none), and whether its innermost frame is last.
    salient: bool = False
    trouble: tuple[bool, ...] = ()
    same_as: int = -1
    # Its calls: each frame's line without its arguments and addresses; and the earlier section stopped in the same
    # calls (five requests waiting on one upstream), or -1.
    calls: tuple[str, ...] = ()
    alike_as: int = -1
    innermost_last: bool = False
    # Its innermost frame waits for work (``is_idle_frame``): an event loop or a pool thread with nothing to do.
    idle: bool = False


def _read(sections: list[_Section]) -> None:
    """What every rendering of the sections asks of them, found once. A section repeats an earlier one when its
    frames are the same as written (spacing aside): a crash report's idle threads say their frames once, while an
    address may be what tells two sections apart (the lock instances a kernel's lock list names)."""
    first: dict[tuple[str, ...], int] = {}
    calls: dict[tuple[str, ...], int] = {}
    for index, section in enumerate(sections):
        section.salient = any(_SALIENT.search(line) for line in section.header)
        section.trouble = tuple(is_alert(line) or _TROUBLE.search(line) is not None for line in section.header)
        # Python prints the innermost frame last ("most recent call last"); the other runtimes first.
        section.innermost_last = any("most recent call last" in line for line in section.header)
        if section.frames:
            section.idle = is_idle_frame(section.frames[-1 if section.innermost_last else 0].lines[0]) or (
                bool(section.header) and _IDLE_STATE.search(section.header[0]) is not None
            )
        section.calls = tuple(_ADDRESSES.sub("", frame.lines[0]).strip() for frame in section.frames)
        if not section.frames or not section.header:
            continue
        key = tuple(" ".join(frame.key.split()) for frame in section.frames)
        if key in first:
            section.same_as = first[key]
        else:
            first[key] = index
        alike = calls.setdefault(section.calls, index)
        section.alike_as = alike if alike != index else -1


def _unstamped(line: str) -> str:
    return line[kernel_prefix_end(line) :]


def _indent(line: str) -> int:
    text = _unstamped(line)
    stripped = text.lstrip(" \t")
    return len(text[: len(text) - len(stripped)].expandtabs(8))


def _sections(lines: list[str]) -> list[_Section]:
    sections = [_Section()]
    for index, line in enumerate(lines):
        if not _unstamped(line).strip():
            # A blank line separates causes or goroutines; the next header opens the section.
            continue
        current = sections[-1]
        last = current.frames[-1] if current.frames else None
        deeper = last is not None and _indent(line) > last.indent
        if last is not None and ((deeper and trace_header(line) is None) or line.strip() in _FRAME_NOTES):
            # Under a frame: its source and carets, a Go function's file line, a Rust frame's "at" line.
            last.lines.append(line)
        elif is_trace_frame(line) or (
            index + 1 < len(lines) and is_go_function(line) and is_trace_frame(lines[index + 1])
        ):
            current.frames.append(_Frame([line], _indent(line)))
        elif current.frames:
            sections.append(_Section(header=[line]))
        else:
            current.header.append(line)
    return [section for section in sections if section.header or section.frames]


def _runs(frames: list[_Frame]) -> list[tuple[_Frame, int]]:
    runs: list[tuple[_Frame, int]] = []
    for frame in frames:
        if runs and runs[-1][0].key == frame.key:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((frame, 1))
    return runs


def _render_run(frame: _Frame, count: int, line_chars: int) -> list[str]:
    rendered = [clip_line(_GO_REGISTERS.sub("", _unstamped(line)), line_chars) for line in frame.lines]
    if count > 1:
        rendered.append(f"    … {count - 1:,} identical frames")
    return rendered


def _render_frames(
    frames: list[_Frame], plan: _Plan, line_chars: int, *, innermost_last: bool, outer_share: int
) -> list[str]:
    unreliable = sum(1 for frame in frames if frame.unreliable) if plan.drop_unreliable else 0
    shown_frames = [frame for frame in frames if not (plan.drop_unreliable and frame.unreliable)]
    runs = _runs(shown_frames)
    keep = plan.keep
    rendered: list[str] = []
    if keep < 0 and runs:
        # Only the chain of headers is left: every frame is counted out.
        rendered.append("    " + elision(len(shown_frames), "frame"))
    elif keep == 0 and runs:
        # Only the chain of headers and each section's innermost frame are left.
        innermost, count = runs[-1] if innermost_last else runs[0]
        others = len(shown_frames) - count
        if innermost_last and others:
            rendered.append("    " + elision(others, "frame"))
        rendered.extend(_render_run(innermost, count, line_chars))
        if not innermost_last and others:
            rendered.append("    " + elision(others, "frame"))
    elif len(runs) <= 2 * keep + 1:
        for frame, count in runs:
            rendered.extend(_render_run(frame, count, line_chars))
    else:
        # The frames near the innermost one say what failed; those near the outermost are mostly how the program
        # got there (a main, an event loop, a thread's start): the innermost end keeps most of the frames kept.
        outer = max(1, keep // outer_share)
        first, last = (outer, 2 * keep - outer) if innermost_last else (2 * keep - outer, outer)
        middle = runs[first:-last]
        # The application's own frames nearest each end, when only the middle holds them.
        apps = [index for index, (frame, _) in enumerate(middle) if frame.application]
        ends_have_app = any(frame.application for frame, _ in (*runs[:first], *runs[-last:]))
        kept = set() if ends_have_app or not apps else {apps[0], apps[-1]}
        for frame, count in runs[:first]:
            rendered.extend(_render_run(frame, count, line_chars))
        elided = 0
        for index, (frame, count) in enumerate(middle):
            if index in kept:
                if elided:
                    rendered.append("    " + elision(elided, "frame"))
                    elided = 0
                rendered.extend(_render_run(frame, count, line_chars))
            else:
                elided += count
        if elided:
            rendered.append("    " + elision(elided, "frame"))
        for frame, count in runs[-last:]:
            rendered.extend(_render_run(frame, count, line_chars))
    if unreliable:
        rendered.append(f"    … [{plural(unreliable, 'unreliable ? frame')} elided] …")
    return rendered


def _exception_line(sections: list[_Section], fallback: str) -> str:
    for section in sections:
        for line in section.header:
            kind = trace_header(line)
            if kind is not None and kind != "python":
                return _unstamped(line).strip()
    return fallback


def _header_lines(section: _Section, plan: _Plan, tuning: StomachTuning) -> list[str]:
    """The header within the plan: its first lines name the exception, its last ones title the frames below
    ("Freed by task 7:"); between them, the lines that read as trouble (a crash report's exception reason)."""
    header = section.header
    line_chars = tuning.trace_line_chars
    if len(header) <= plan.header_lines:
        return [clip_line(line, line_chars) for line in header]
    head = max(plan.header_lines - tuning.trace_header_tail, 1)
    tail = plan.header_lines - head
    troubled = [index for index in range(head, len(header) - tail) if section.trouble[index]]
    body = [clip_line(line, line_chars) for line in header[:head]]
    shown = head
    for index in troubled[: tuning.trace_header_alerts]:
        if index > shown:
            body.append(elision(index - shown, "line"))
        body.append(clip_line(header[index], line_chars))
        shown = index + 1
    if len(header) - tail > shown:
        body.append(elision(len(header) - tail - shown, "line"))
    body.extend(clip_line(line, line_chars) for line in header[len(header) - tail :])
    return body


def _salient_plan(plan: _Plan, tuning: StomachTuning) -> _Plan:
    """A crashed thread's plan: several times the frames of the others, and where they keep only their innermost
    frame, ``trace_salient_least`` frames at each end. The leanest plan (the chain of headers alone) stays as lean
    for it, so that a tight target is still met."""
    if plan.keep >= _ALL or plan.keep < 0:
        return plan
    return replace(plan, keep=plan.keep * tuning.trace_salient_factor or tuning.trace_salient_least)


def _render(sections: list[_Section], plan: _Plan, summary: str, tuning: StomachTuning) -> str:
    body = [summary]
    line_chars = tuning.trace_line_chars
    # Where some thread works, the idle ones are thinned first: their frames say where each waits, not what failed.
    idle_plan = (
        replace(plan, keep=min(plan.keep, tuning.trace_idle_frames))
        if plan.keep < _ALL and any(section.frames and not section.idle for section in sections)
        else plan
    )
    for section in sections:
        section_plan = _salient_plan(plan, tuning) if section.salient else idle_plan if section.idle else plan
        body.extend(_header_lines(section, section_plan, tuning))
        if section.same_as >= 0:
            title = clip_line(sections[section.same_as].header[0].strip(), tuning.trace_summary_chars)
            body.append(f"    … [{plural(len(section.frames), 'frame')} as under {title}] …")
            continue
        body.extend(
            _render_frames(
                section.frames,
                section_plan,
                line_chars,
                innermost_last=section.innermost_last,
                outer_share=tuning.trace_outer_share,
            )
        )
    return "\n".join(body)


def distill_trace(
    text: str,
    target_tokens: int | None = None,
    tuning: StomachTuning | None = None,
    ask: AskTerms | None = None,
    echo: AskTerms | None = None,
) -> TraceDigest:
    """The compact rendering of a trace; with ``target_tokens``, as many frames as fit it (estimated). A dump of many
    sections that would keep only a few frames of each keeps its most telling sections whole instead (``ask``
    weighs which, and less ``echo``: what the paste's other blocks say went wrong)."""
    tuning = tuning or StomachTuning()
    lines = text.split("\n")
    if is_thread_dump(lines, tuning):
        return TraceDigest(render_thread_dump(lines, target_tokens, tuning), _exception_line([], lines[0].strip()))
    sections = _sections(lines)
    _read(sections)
    total_frames = sum(len(section.frames) for section in sections)
    exception = _exception_line(sections, lines[0].strip())
    causes = max(len(sections) - 1, 0)
    quoted = clip_line(exception, tuning.trace_line_chars)[: tuning.trace_summary_chars]
    summary = f"[stack trace · {quoted} · {plural(total_frames, 'frame')} · {plural(causes, 'chained section')}]"
    if target_tokens is None:
        keep, header_lines = tuning.trace_untargeted_plan
        return TraceDigest(
            _render(sections, _Plan(keep, header_lines, drop_unreliable=True), summary, tuning), exception
        )
    budget_chars = target_tokens * tuning.chars_per_token
    # Plans go from the richest to the leanest, so renderings shorten along them: the richest that fits is
    # found by halving, a few renderings instead of one per plan.
    plans = _plans(tuning)
    renderings: dict[int, str] = {}

    def rendered(index: int) -> str:
        if index not in renderings:
            renderings[index] = _render(sections, plans[index], summary, tuning)
        return renderings[index]

    low, high = 0, len(plans) - 1
    fits = len(rendered(high)) <= budget_chars
    while fits and low < high:
        middle = (low + high) // 2
        if len(rendered(middle)) <= budget_chars:
            high = middle
        else:
            low = middle + 1
    if _a_dump(sections, tuning) and (not fits or plans[low].keep < tuning.trace_ranked_below):
        ranked = _ranked_rendering(sections, summary, budget_chars, (ask, echo), tuning)
        if ranked is not None:
            return TraceDigest(ranked, exception)
    if not fits:
        # Too many sections for even their first lines: the ends of the chain, the middle counted.
        return TraceDigest(head_tail(rendered(high), target_tokens, tuning), exception)
    return TraceDigest(rendered(low), exception)


def _a_dump(sections: list[_Section], tuning: StomachTuning) -> bool:
    """Whether the sections are a dump's threads (goroutines, a debugger's threads), not a chain of causes, whose
    every link and whose root count whatever their frames, and many of them."""
    causes = sum(1 for section in sections if section.header and trace_header(section.header[0]) in _CHAINED)
    return len(sections) >= tuning.trace_ranked_sections and causes * 2 < len(sections)


def _section_worth(
    sections: list[_Section], looked_for: tuple[AskTerms | None, AskTerms | None], tuning: StomachTuning
) -> list[float]:
    """How much each section tells, the paste being its own corpus: the rarity among the sections of the terms it
    holds of the ask and, weighing less, of the paste's other blocks' alerts (``looked_for``), and of its frames (a
    stack no other section has, against a pool's hundred alike), a crash above all, a thread waiting for work
    least."""
    ask, echo = looked_for
    keys = [
        dict(zip(section.calls, (frame.application for frame in section.frames), strict=True)) for section in sections
    ]
    # Sections stopped in the same calls (``alike_as``) are one stack: its frames are as rare as its calls are among
    # the stacks, and a stack at least ``trace_shared_frames`` of the application's frames deep weighs more the more
    # sections share it, counted once (requests piled up in one call chain, not a pool's workers parked in their
    # loop).
    held = Counter(
        key
        for section, section_keys in zip(sections, keys, strict=True)
        if section.alike_as < 0
        for key in section_keys
    )
    sharing = Counter(section.alike_as for section in sections if section.alike_as >= 0)
    texts = ["\n".join(_section_lines(section)) for section in sections]
    named = [set(ask.named(text)) if ask else set() for text in texts]
    echoed = [set(echo.named(text)) - terms if echo else set() for text, terms in zip(texts, named, strict=True)]
    asked = Counter(term for terms in (*named, *echoed) for term in terms)
    total = len(sections)
    worth = []
    for index, (section, section_keys, terms, echoes) in enumerate(zip(sections, keys, named, echoed, strict=True)):
        # A runtime's or a library's frames say less of what this thread does than the application's own.
        distinct = math.fsum(
            rarity(held[key], total) * (1.0 if application else tuning.trace_library_share)
            for key, application in section_keys.items()
        ) / max(len(section_keys), 1)
        score = (
            distinct
            + tuning.trace_ask_weight * math.fsum(rarity(asked[term], total) for term in terms)
            + tuning.trace_echo_weight * math.fsum(rarity(asked[term], total) for term in echoes)
        )
        if section.same_as >= 0:
            score *= tuning.trace_repeat_share
        elif section.alike_as >= 0:
            score *= tuning.trace_alike_share
        elif sum(section_keys.values()) >= tuning.trace_shared_frames:
            score *= 1 + tuning.trace_shared_weight * math.log2(1 + sharing[index])
        if section.idle:
            score *= tuning.trace_idle_share
        worth.append(score + (tuning.trace_salient_weight if section.salient else 0.0))
    return worth


def _section_lines(section: _Section) -> list[str]:
    return [*section.header, *(line for frame in section.frames for line in frame.lines)]


def _ranked_rendering(
    sections: list[_Section],
    summary: str,
    budget_chars: float,
    looked_for: tuple[AskTerms | None, AskTerms | None],
    tuning: StomachTuning,
) -> str | None:
    """The most telling sections (``_section_worth``) with their frames, as many as fit, in their order, the others
    counted by what their headers say; None when not even one fits."""
    worth = _section_worth(sections, looked_for, tuning)
    order = sorted(range(len(sections)), key=lambda index: (-worth[index], index))

    sought = _frame_rarity(sections, looked_for, tuning.trace_sought_common_share)

    # The richest frames for the most telling section, then for the others, that show a few sections; where none
    # do, the leanest that show one.
    found = None
    plans = tuning.trace_ranked_frames
    for top, keep in ((top, keep) for top in plans for keep in plans if keep <= top):
        count, text = _most_sections(sections, order, (top, keep), summary, budget_chars, tuning, sought)
        if count >= tuning.trace_ranked_least:
            return text
        if count:
            found = text
    return found


def _frame_rarity(
    sections: list[_Section], looked_for: tuple[AskTerms | None, AskTerms | None], common_share: float
) -> Callable[[str], float]:
    """How rare among the dump's frames the ask's and the alerts' terms a frame names are (BM25's idf summed); a
    term on more than ``common_share`` of the frames (the project's own package name) weighs nothing."""
    frames = [frame.lines[0] for section in sections for frame in section.frames]
    # Each frame's terms found once: the renderings tried ask for the same frames again and again.
    found = {
        frame: {term for terms in looked_for if terms for term in terms.named(frame)} for frame in dict.fromkeys(frames)
    }
    held = Counter(term for frame in frames for term in found[frame])
    weight = {term: rarity(count, len(frames)) for term, count in held.items() if count <= common_share * len(frames)}
    worths = {frame: math.fsum(weight.get(term, 0.0) for term in terms) for frame, terms in found.items()}
    return lambda frame: worths.get(frame, 0.0)


def _telling_frames(section: _Section, count: int, line_chars: int, sought: Callable[[str], float]) -> list[str]:
    """A section's frames as a dump's reader wants them: the innermost, the application's own (up to ``count``: those
    naming what is ``sought``, then those nearest each end; the runtime's and libraries' frames between are
    counted), and the outermost, which says what started the thread. A goroutine parked in the scheduler shows the
    code that parked it, not the scheduler."""
    runs = _runs(section.frames)
    if section.innermost_last:
        runs = runs[::-1]
    if len(runs) <= count + 2:
        chosen = set(range(len(runs)))
    else:
        applications = [index for index in range(1, len(runs) - 1) if runs[index][0].application]
        worth = {index: sought(runs[index][0].lines[0]) for index in applications}
        named = sorted((index for index in applications if worth[index] > 0), key=lambda index: -worth[index])[:count]
        applications = [index for index in applications if index not in named]
        # Those nearest the innermost say what it waits in; those nearest the outermost, what it was doing.
        left = count - len(named)
        inner = (left + 1) // 2
        middle = applications[:inner] + (applications[inner:][-(left - inner) :] if left > inner else [])
        chosen = {0, *named, *(middle or ([] if named else range(1, count + 1))), len(runs) - 1}
    order = sorted(chosen, reverse=section.innermost_last)
    rendered: list[str] = []
    previous = len(runs) if section.innermost_last else -1
    for index in order:
        skipped = runs[min(index, previous) + 1 : max(index, previous)]
        if skipped:
            rendered.append("    " + elision(sum(repeats for _, repeats in skipped), "frame"))
        rendered.extend(_render_run(*runs[index], line_chars))
        previous = index
    return rendered


def _alike_unshown(sections: list[_Section], shown: set[int]) -> dict[int, list[int]]:
    """For each shown section, the sections not shown that stop in its calls (``alike_as``) and have a header to name
    them by."""
    alike: dict[int, list[int]] = {}
    for index, section in enumerate(sections):
        if section.alike_as in shown and index not in shown and section.header:
            alike.setdefault(section.alike_as, []).append(index)
    return alike


def _most_sections(
    sections: list[_Section],
    order: list[int],
    keeps: tuple[int, int],
    summary: str,
    budget_chars: float,
    tuning: StomachTuning,
    sought: Callable[[str], float],
) -> tuple[int, str]:
    """How many of the sections, taken in ``order``, fit with their frames (``keeps``: at each end for the first of
    the order, then for the others; frames naming what is ``sought`` first), and their rendering."""
    first = order[0]
    plan = _Plan(keeps[1], _ALL, drop_unreliable=True)

    def rendering(count: int) -> str:
        shown = set(order[:count])
        alike = _alike_unshown(sections, shown)
        body = [summary]
        for index, section in enumerate(sections):
            if index in shown:
                body.extend(_header_lines(section, plan, tuning))
                keep = keeps[0] if index == first else keeps[1]
                body.extend(_telling_frames(section, 2 * keep, tuning.trace_line_chars, sought))
                if alike.get(index):
                    named = ", ".join(sections[other].header[0].strip().removesuffix(":") for other in alike[index])
                    line = f"    … [in the same calls, arguments aside: {named}] …"
                    body.append(clip_line(line, 4 * tuning.trace_line_chars))
        named_alike = {other for others in alike.values() for other in others}
        others = Counter(
            _ADDRESSES.sub("N", section.header[0].strip()) if section.header else "(frames only)"
            for index, section in enumerate(sections)
            if index not in shown and index not in named_alike
        )
        if others:
            said = "; ".join(
                f"{count} × {clip_line(header, tuning.trace_summary_chars)}"
                for header, count in others.most_common(tuning.trace_others_named)
            )
            more = len(others) - tuning.trace_others_named
            body.append(
                f"… [{plural(sum(others.values()), 'more section')} not shown: {said}"
                + (f"; +{more} other headers" if more > 0 else "")
                + "] …"
            )
        return "\n".join(body)

    low, high = 0, len(sections)
    while low < high:
        middle = (low + high + 1) // 2
        if len(rendering(middle)) <= budget_chars:
            low = middle
        else:
            high = middle - 1
    return low, rendering(low)
