"""How a host shows what the tract did to a paste: pills, the prompt map, the savings.

One pill per segment (its kind, what it became, tokens before → after, the
rung that classified it), then the compiled prompt with each segment's byte
range, then what was saved. Rich renders colour on a terminal and plain text
elsewhere; ``--json`` output is built from the contract types instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO

import msgspec
from rich.console import Console
from rich.table import Table
from rich.text import Text

from envelopes.types import Admitted, CompiledPrompt, Envelope, Rejected, SegmentReport
from organs.stomach.core.ingest import IngestBundle

__all__ = ["render_digest", "render_outcome", "savings_line"]

_KIND_STYLES = {
    "log": "bold blue",
    "table": "bold magenta",
    "stack_trace": "bold red",
    "code": "bold cyan",
    "path_ref": "bold green",
    "prose": "bold white",
}


def _console(file: IO[str] | None) -> Console:
    return Console(file=file, soft_wrap=True, highlight=False)


def _rung(reason: str) -> str:
    return reason.split(":", 1)[0] if reason.startswith("rung") else reason


def pills(report: Sequence[SegmentReport]) -> Text:
    text = Text()
    for entry in report:
        label = f" {entry.kind} → {entry.outcome} · {entry.tokens_before}→{entry.tokens_after} · {_rung(entry.reason)} "
        text.append(label, style=f"{_KIND_STYLES.get(entry.kind, 'bold')} reverse")
        text.append(" ")
    return text


def savings_line(report: Sequence[SegmentReport]) -> str:
    before = sum(entry.tokens_before for entry in report)
    after = sum(entry.tokens_after for entry in report)
    if before == 0:
        return "nothing to save: the paste was empty"
    ratio = f"{before / after:.1f}× smaller" if after else "all by reference"
    return f"paste {before:,} tokens → {after:,} served ({before - after:,} saved, {ratio})"


def _report_table(report: Sequence[SegmentReport]) -> Table:
    table = Table(title="segments", show_lines=False, expand=False)
    for column in ("#", "kind", "became", "tokens", "span", "why"):
        table.add_column(column)
    for entry in report:
        table.add_row(
            str(entry.index),
            Text(entry.kind, style=_KIND_STYLES.get(entry.kind, "")),
            entry.outcome,
            f"{entry.tokens_before}→{entry.tokens_after}",
            f"{entry.span[0]}..{entry.span[1]}",
            entry.reason,
        )
    return table


def _prompt_table(prompt: CompiledPrompt) -> Table:
    stable = f" · stable prefix {prompt.stable_prefix_bytes:,} bytes, {prompt.stable_prefix_tokens:,} tokens"
    table = Table(title=f"prompt · {prompt.bytes:,} bytes · {prompt.tokens:,} tokens ({prompt.encoding}){stable}")
    for column in ("bytes", "segment", "disposition", "trust", "tokens"):
        table.add_column(column)
    # In the order the text reads (inspection keeps precedence order); what was not rendered last.
    unrendered = len(prompt.text.encode("utf-8"))
    for entry in sorted(prompt.inspection, key=lambda entry: entry.byte_range[0] if entry.byte_range else unrendered):
        span = f"{entry.byte_range[0]}..{entry.byte_range[1]}" if entry.byte_range else "-"
        table.add_row(span, entry.segment_id, entry.disposition, entry.trust, str(entry.tokens))
    return table


def render_digest(bundle: IngestBundle, file: IO[str] | None = None) -> None:
    """What the stomach's core made of a paste, as ``ichor digest`` shows it."""
    console = _console(file)
    report = bundle.report
    console.print(pills(report))
    console.print(f"tier [bold]{bundle.tier}[/] ({bundle.tier_reason})")
    console.print(f"goal: {bundle.query.goal!r}", markup=False)
    for anchor in bundle.query.anchors:
        console.print(f"anchor: {anchor}", markup=False)
    console.print(_report_table(report))
    for frame in bundle.provider.frames:
        console.rule(f"{frame.title} · {frame.representation} · {frame.token_cost}/{frame.full_tokens} tokens")
        console.print(frame.id, style="dim")
        if frame.content is not None:
            console.print(frame.content, markup=False)
    console.print(savings_line(report), style="bold green")


def render_outcome(envelope: Envelope, file: IO[str] | None = None) -> None:
    console = _console(file)
    payload = envelope.payload
    origin = msgspec.json.encode(envelope.chain.origin).decode()
    console.print(f"{envelope.kind} · tier {envelope.tier} · origin {origin} · trace {envelope.trace_id}", markup=False)
    if isinstance(payload, Admitted):
        console.print(pills(payload.report))
        console.print(_prompt_table(payload.prompt))
        for finding in payload.findings:
            console.print(f"finding: {finding.pattern} in {finding.segment_id} → {finding.action}", style="yellow")
        console.rule("prompt")
        stored = payload.prompt.text_ref
        if stored is not None and not payload.prompt.text:
            # Too large for a message, and not readable here: where it is, rather than an empty prompt.
            console.print(f"{stored.size:,} bytes stored as {stored.name} in the frames object store", style="dim")
        console.print(payload.prompt.text, markup=False)
        console.rule()
        console.print(savings_line(payload.report), style="bold green")
    elif isinstance(payload, Rejected):
        for reason in payload.reasons:
            console.print(f"{reason.code}: {reason.message}", style="red", markup=False)
        if payload.goal_ref is not None:
            goal = payload.goal_ref
            where = f"{goal.size:,} bytes stored as {goal.name} in the frames object store"
            console.print(f"the ask: {where}", markup=False)
