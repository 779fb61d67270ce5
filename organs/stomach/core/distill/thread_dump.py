"""A Java thread dump (``jstack``, ``kill -3``) read as threads, what is stuck served first.

A dump is its preamble (the stamp, ``Full thread dump …``, the SMR list), its threads (each opened by a
``"name" … prio=… tid=…`` line: the header, ``java.lang.Thread.State``, the frames ``at …`` with the lock lines
under them, the ownable synchronizers), its trailer (``JNI global refs``) and, when the JVM found one, its deadlock
report (``Found one Java-level deadlock:`` to ``Found N deadlock.``).

Read as a chain of sections, a dump of forty threads thinned every thread alike, and its lean plans kept lock lines
while they elided the thread names. Here, rendered to a target: a summary (threads by state, a deadlock found), a
line for each monitor one thread holds while others wait for it (who holds it, how many wait), the dump's first
lines, the deadlock report whole, then the threads in the order of what they say (those the report names, those
holding a monitor another thread waits for, blocked ones, those waiting on a lock another thread holds, those running
the application's own code, the rest, each group in paste order): each its header and state lines and its innermost
frames with their lock lines, as many as the plan allows, a salient thread at least
``StomachTuning.dump_salient_frames``. A thread whose state and frames repeat an earlier one's is named under it, not
shown again: twelve request threads blocked on one lock are one stack and twelve names. Threads that do not fit are
named on one line.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace

from organs.stomach.core.distill.text import clip_line, elision, plural, thousands
from organs.stomach.core.shapes.trace_shapes import library_frame
from organs.stomach.core.tuning import StomachTuning

__all__ = ["is_thread_dump", "render_thread_dump"]

_THREAD_HEAD = re.compile(r'^"(?P<name>[^"\n]+)"(?: #\d+)?[^\n]*\b(?:prio|tid|nid)=')
_REPORT_START = re.compile(r"^Found (?:one|\d+) Java-level deadlock")
_REPORT_END = re.compile(r"^Found \d+ deadlocks?\.")
_TRAILER = re.compile(r"^JNI global (?:refs|references)")
_STATE = re.compile(r"java\.lang\.Thread\.State: (\w+)")
_FRAME = re.compile(r"^\s+at ")
_WAITING_ON = re.compile(r"- (?:waiting to lock|parking to wait for|waiting on) +<(0x[0-9a-f]+)>")
_HOLDING = re.compile(r"- locked <(0x[0-9a-f]+)>")
_NAMED_IN_REPORT = re.compile(r'^"([^"\n]+)":\s*$')
_REPORT_STACKS = re.compile(r"^Java stack information for the threads listed above")


@dataclass(frozen=True, slots=True)
class _Thread:
    name: str
    lines: tuple[str, ...]
    state: str
    # Each frame with the lock lines under it, the innermost first (as the JVM prints them).
    frames: tuple[tuple[str, ...], ...]
    # The header's other lines (state, ownable synchronizers), kept with the header.
    rest: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Dump:
    preamble: tuple[str, ...]
    threads: tuple[_Thread, ...]
    report: tuple[str, ...]
    trailer: tuple[str, ...]


def is_thread_dump(lines: list[str], tuning: StomachTuning) -> bool:
    """Whether the text holds at least ``dump_least_threads`` thread headers of a Java thread dump."""
    return sum(1 for line in lines if _THREAD_HEAD.match(line)) >= tuning.dump_least_threads


def _thread(lines: list[str]) -> _Thread:
    head = _THREAD_HEAD.match(lines[0])
    name = head.group("name") if head else lines[0]
    state = next((found.group(1) for line in lines if (found := _STATE.search(line))), "")
    frames: list[list[str]] = []
    before: list[str] = []
    after: list[str] = []
    for line in lines[1:]:
        if not line.strip():
            continue
        if _FRAME.match(line) and not after:
            frames.append([line])
        elif line.lstrip().startswith("- ") and frames and not after:
            frames[-1].append(line)
        elif frames:
            after.append(line)
        else:
            before.append(line)
    # The state line first: with ``keep`` 0 a thread shows its header and state.
    rest = sorted(before, key=lambda line: _STATE.search(line) is None) + after
    return _Thread(name, tuple(lines), state, tuple(tuple(frame) for frame in frames), tuple(rest))


def _read(lines: list[str]) -> _Dump:
    preamble: list[str] = []
    threads: list[list[str]] = []
    report: list[str] = []
    trailer: list[str] = []
    where = "preamble"
    for line in lines:
        if _REPORT_START.match(line):
            where = "report"
        elif where == "report":
            if _REPORT_END.match(line):
                report.append(line)
                where = "trailer"
                continue
        elif _THREAD_HEAD.match(line):
            threads.append([])
            where = "threads"
        elif _TRAILER.match(line):
            where = "trailer"
        if where == "threads":
            threads[-1].append(line)
        elif where == "report":
            report.append(line)
        elif where == "trailer":
            trailer.append(line)
        else:
            preamble.append(line)
    return _Dump(
        tuple(line for line in preamble if line.strip()),
        tuple(_thread(thread) for thread in threads),
        tuple(line for line in report if line.strip()),
        tuple(line for line in trailer if line.strip()),
    )


def _addresses(pattern: re.Pattern[str], thread: _Thread) -> set[str]:
    return {found.group(1) for line in thread.lines if (found := pattern.search(line))}


# A contended monitor: its address, the thread holding it, the threads waiting for it.
_Contended = tuple[str, int, list[int]]


def _contended(dump: _Dump) -> list[_Contended]:
    """Each monitor a thread holds while other threads wait for it; a thread's own wait on a monitor it holds (an
    ``Object.wait()``) is no contention."""
    waits = [_addresses(_WAITING_ON, thread) for thread in dump.threads]
    found = []
    for holder, thread in enumerate(dump.threads):
        for address in sorted(_addresses(_HOLDING, thread)):
            waiters = [index for index, waiting in enumerate(waits) if address in waiting and index != holder]
            if waiters:
                found.append((address, holder, waiters))
    return found


def _salience(dump: _Dump, contended: list[_Contended]) -> list[int]:
    """Each thread's group, lower first: named by the deadlock report, holding a monitor others wait for, blocked,
    waiting on a lock another thread holds, running the application's own code, the rest."""
    named = {found.group(1) for line in dump.report if (found := _NAMED_IN_REPORT.match(line.strip()))}
    holders = {holder for _, holder, _ in contended}
    waiters = {index for _, _, waiting in contended for index in waiting}
    groups = []
    for index, thread in enumerate(dump.threads):
        own_code = any(not library_frame(frame[0]) for frame in thread.frames)
        tests = (thread.name in named, index in holders, thread.state == "BLOCKED", index in waiters, own_code)
        groups.append(next((group for group, holds in enumerate(tests) if holds), len(tests)))
    return groups


def _lock_lines(dump: _Dump, contended: list[_Contended], tuning: StomachTuning) -> list[str]:
    """A line for each contended monitor: its address, what it is, its holder and how many threads wait for it."""
    lines = []
    for address, holder, waiters in contended:
        what = next(
            (line.split(f"<{address}>", 1)[1].strip() for line in dump.threads[holder].lines if f"<{address}>" in line),
            "",
        )
        names = ", ".join(f'"{dump.threads[index].name}"' for index in waiters[: tuning.dump_waiter_names])
        more = len(waiters) - tuning.dump_waiter_names
        named = names + (f" and {thousands(more)} more" if more > 0 else "")
        lines.append(
            f'[monitor <{address}> {what} held by "{dump.threads[holder].name}",'
            f" waited for by {plural(len(waiters), 'thread')}: {named}]".replace("  ", " ")
        )
    return lines


def _repeats(dump: _Dump, order: list[int]) -> dict[int, list[int]]:
    """For each thread in ``order`` whose state and frames no thread before it showed, the later threads that repeat
    them (a pool's idle workers, requests blocked at one line)."""
    first: dict[tuple[str, tuple[tuple[str, ...], ...]], int] = {}
    repeats: dict[int, list[int]] = {}
    for index in order:
        thread = dump.threads[index]
        key = (thread.rest[0] if thread.rest else thread.state, thread.frames)
        if not thread.frames or key not in first:
            first.setdefault(key, index)
            repeats[index] = []
        else:
            repeats[first[key]].append(index)
    return repeats


def _render_thread(thread: _Thread, keep: int, line_chars: int) -> list[str]:
    """The thread's header, its state and other own lines (when ``keep`` ≥ 0) and its first ``keep`` frames."""
    body = [clip_line(thread.lines[0], line_chars)]
    if keep < 0:
        return body
    body.extend(clip_line(line, line_chars) for line in thread.rest[:1])
    for frame in thread.frames[:keep]:
        body.extend(clip_line(line, line_chars) for line in frame)
    if len(thread.frames) > keep:
        body.append("\t" + elision(len(thread.frames) - keep, "frame"))
    return body


@dataclass(frozen=True, slots=True)
class _Plan:
    """What a rendering shows besides the threads' frames: the threads in order, each with the later threads that
    repeat it, and the contended monitors' lines."""

    order: list[int]
    repeats: dict[int, list[int]]
    locks: list[str]


def _size(lines: list[str]) -> int:
    return sum(len(line) + 1 for line in lines)


def _shown(thread: _Thread, alike: list[str], keep: int, line_chars: int) -> list[str]:
    """The thread's lines with ``keep`` frames and, when it is shown, the names of the threads that repeat it."""
    lines = _render_thread(thread, keep, line_chars)
    if alike and keep >= -1:
        names = ", ".join(f'"{name}"' for name in alike)
        lines.append(
            clip_line(
                f"\t… [the same state and frames: {plural(len(alike), 'more thread')}: {names}] …", 4 * line_chars
            )
        )
    return lines


def _named_with(name: str, alike: list[str]) -> str:
    """A thread not shown, named with the threads that repeat it: a pool of thirty idle workers is one entry."""
    if len(alike) < 2:
        return ", ".join([name, *alike])
    return f"{name} … {alike[-1]} ({len(alike) + 1} alike)"


def _render(dump: _Dump, plan: _Plan, keeps: list[int], room: int | None, tuning: StomachTuning) -> str:
    """The dump with thread ``i``'s first ``keeps[i]`` frames (-2: only named), the threads in the plan's order, a
    thread that repeats another named under it; with ``room`` (characters), the threads past it named on one line."""
    line_chars = tuning.trace_line_chars
    states = Counter(thread.state or "no state" for thread in dump.threads)
    found = "a deadlock found" if dump.report else "no deadlock reported"
    counted = ", ".join(f"{state} {count}" for state, count in states.most_common())
    body = [
        f"[thread dump · {plural(len(dump.threads), 'thread')} ({counted}) · {found} · threads that say most first]"
    ]
    body.extend(clip_line(line, 4 * line_chars) for line in plan.locks)
    body.extend(clip_line(line, line_chars) for line in dump.preamble[: tuning.dump_preamble_lines])
    body.extend(clip_line(line, line_chars) for line in dump.report)
    used = _size(body)
    left: list[str] = []
    hidden = 0
    for index in plan.order:
        if index not in plan.repeats:
            continue
        alike = [dump.threads[other].name for other in plan.repeats[index]]
        lines = _shown(dump.threads[index], alike, keeps[index], line_chars)
        # Past the room a thread gives up its outer frames before it gives up its place: the holder of a lock
        # with its first frames says more than its name among the threads not shown.
        fewer = min(keeps[index], len(dump.threads[index].frames))
        while room is not None and used + _size(lines) > room and fewer > -1:
            fewer -= 1
            lines = _shown(dump.threads[index], alike, fewer, line_chars)
        if keeps[index] < -1 or (room is not None and used + _size(lines) > room):
            left.append(_named_with(dump.threads[index].name, alike))
            hidden += 1 + len(alike)
            continue
        body.extend(lines)
        used += _size(lines)
    if left:
        limit = 4 * line_chars if room is None else max(line_chars, min(4 * line_chars, room - used))
        body.append(clip_line(f"… [{plural(hidden, 'more thread')} not shown: {', '.join(left)}] …", limit))
    body.extend(clip_line(line, line_chars) for line in dump.trailer[:1])
    return "\n".join(body)


def _keeps(groups: list[int], named_stacks: set[int], plan: tuple[int, int], tuning: StomachTuning) -> list[int]:
    """How many frames each thread shows under ``plan`` (for the threads that run something, for the idle rest):
    a salient thread at least ``dump_salient_frames``; a thread whose stack the deadlock report shows, its header."""
    working, idle = plan
    keeps = []
    for index, group in enumerate(groups):
        if index in named_stacks:
            keeps.append(-1)
        elif group <= tuning.dump_salient_group:
            keeps.append(max(working, tuning.dump_salient_frames))
        else:
            keeps.append(working if group < tuning.dump_idle_group else idle)
    return keeps


def render_thread_dump(lines: list[str], target_tokens: int | None, tuning: StomachTuning) -> str:
    """The dump rendered to ``target_tokens`` (estimated by characters), or under the untargeted plan."""
    dump = _read(lines)
    contended = _contended(dump)
    groups = _salience(dump, contended)
    order = sorted(range(len(dump.threads)), key=lambda index: (groups[index], index))
    room = None if target_tokens is None else int(target_tokens * tuning.chars_per_token)
    stacks_at = next((at for at, line in enumerate(dump.report) if _REPORT_STACKS.match(line)), None)
    if stacks_at is not None and room is not None and sum(map(len, dump.report)) > room * tuning.dump_report_share:
        # A report too long for its share keeps who waits for whom and its verdict; the stacks come from the threads.
        dump = replace(dump, report=(*dump.report[:stacks_at], *dump.report[-1:]))
        stacks_at = None
    # The report's "Java stack information" shows the deadlocked threads' stacks already.
    shown = {found.group(1) for line in dump.report if (found := _NAMED_IN_REPORT.match(line.strip()))}
    named_stacks = (
        set() if stacks_at is None else {index for index, thread in enumerate(dump.threads) if thread.name in shown}
    )
    plan = _Plan(order, _repeats(dump, order), _lock_lines(dump, contended, tuning))
    if room is None:
        return _render(dump, plan, _keeps(groups, named_stacks, tuning.dump_untargeted_plan, tuning), None, tuning)
    for frames in tuning.dump_frame_plans:
        rendered = _render(dump, plan, _keeps(groups, named_stacks, frames, tuning), None, tuning)
        if len(rendered) <= room:
            return rendered
    leanest = _keeps(groups, named_stacks, tuning.dump_frame_plans[-1], tuning)
    return _render(dump, plan, leanest, room, tuning)
