"""Which prose carries the ask, and whether a block is the user's own words at all.

The goal is the user's own words, never text inside evidence:

* A line made by a program is not the user speaking: a line that opens with a
  timestamp, a bracketed prefix (``[ 12.3]``, ``[ERROR]``), a ``file:line:``
  location, a level word and a colon (``error:``, ``warning[E1]:``), a
  ``daemon[pid]:`` tag, a stack frame or exception header, a kernel ``? func+0x``
  frame, a source-excerpt gutter (``  12 | …``), a shell prompt and command
  (``$ make``), a build step (``#5 …``), ``tool: ***`` or a test runner's
  ``E   …`` excerpt. A block where such lines are
  the majority is evidence even when the classifier found no shape for it, and
  nothing in machine lines counts as asking (a compiler's ``did you forget …?``
  is not a question to the reader).
* How strongly a block asks, from its own lines: 2 when it puts a question to the
  reader (a question mark after a word, not followed by the writer's own answer
  such as "No, …" or "Because …"); 1 when it asks otherwise (a question it
  answers itself, a phrase such as "can you" or "I want", or an imperative opener
  such as "Fix" or "Explain"); 0 otherwise.
* When several prose blocks ask, the goal is every block of the strongest kind,
  joined verbatim in paste order: a question outranks context that merely
  mentions a wish or asks a question it answers itself ("Could it be the JVM? No,
  …"), and an imperative line a tool printed ("Identify and stop the process …")
  yields to the user's question.
* The user's words glued to the first line of a trace, log or table (no blank
  line between) are the leading lines before the first line that is machine-made
  or does not read as a sentence (a table header), when they put
  a question to the reader, or end with a colon and read as a sentence ("Fix
  this:", "only this in the journal:"); ``ClassifyTuning.glued_lines`` says how many. A question
  glued under the last line of the evidence is the trailing lines after the last
  machine line (or the last line that does not read as a sentence), when each reads as a sentence and the last
  ends with a question mark (``glued_tail_lines``). Either becomes a prose segment of its own, so an
  ask among them can be the goal.
"""

from __future__ import annotations

import re

from organs.stomach.core.shapes.line_shapes import is_compiler_diagnostic, is_test_report
from organs.stomach.core.shapes.timestamps import leading_stamp
from organs.stomach.core.shapes.trace_shapes import is_thread_heading, is_trace_frame, trace_header
from organs.stomach.core.tuning import ClassifyTuning
from organs.text_views import first_lines, last_lines

__all__ = [
    "ask_strength",
    "glued_lines",
    "glued_tail_lines",
    "machine_line",
    "own_words",
    "speaks_to_reader",
]

_ASK_OPENERS = frozenset(
    [
        "please",
        "why",
        "how",
        "what",
        "where",
        "when",
        "which",
        "who",
        "whom",
        "whose",
        "can",
        "could",
        "would",
        "should",
        "shall",
        "will",
        "is",
        "are",
        "was",
        "were",
        "does",
        "do",
        "did",
        "help",
        "fix",
        "explain",
        "find",
        "tell",
        "show",
        "summarize",
        "summarise",
        "debug",
        "investigate",
        "identify",
        "check",
        "figure",
        "list",
        "give",
        "write",
        "make",
        "add",
        "remove",
        "delete",
        "update",
        "refactor",
        "analyze",
        "analyse",
        "diagnose",
        "look",
        "review",
        "describe",
        "suggest",
        "compare",
        "implement",
        "rewrite",
        "convert",
        "optimise",
        "optimize",
        "propose",
        "recommend",
        "determine",
        "resolve",
        "clarify",
        "walk",
        "point",
        "spot",
    ]
)
_ASK_PHRASES = re.compile(
    r"\b(?:please|can you|could you|would you|help me|i need|i want|we need|tell me|let me know|any idea)\b", re.I
)
# A question mark that ends a word or a quote, not one that opens a token ("? func+0x12").
_QUESTION = re.compile(r"(?<=[\w)\]\"'`\u2019\u201d])\?+(?=[\s\"')\]\u2019\u201d]|$)")
# The words that open an answer: a question followed by one is asked and answered by the writer.
_ANSWER = re.compile(r"(?:yes|no|nope|nah|because|not)\b", re.I)
_MACHINE = re.compile(
    # A tool's status mark may lead (``✘ [ERROR] …``, ``⚠ warning: …``; mangled to U+FFFD by a console's encoding).
    r"\s*(?:[^\x00-\x7f\w\s]{1,3}\s+)?(?:"
    r"\[[^\]\n]{1,60}\]"
    r"|[\w./\\~-]+:\d+(?::\d+)?:"
    r"|(?:error|warning|warn|note|help|info|debug|fatal|panic|err)(?:\[[\w-]{1,20}\])?:(?:\s|$)"
    r"|(?:ERROR|WARN|WARNING|INFO|DEBUG|FATAL|TRACE)\b"
    r"|[\w.-]{1,60}\[\d+\]:"
    r"|\?\s+\S+\+0x"
    r"|\d*\s*\|"
    # a row of a pipe-delimited table ("Column |  Type  | Key? |"): its cells are data, not someone's sentence
    r"|[^|\n]{1,80}\|[^|\n]*\|"
    r"|\w+ (?:ERR!|WARN)\s"
    # a tool's failure line ("make: *** [all] Error 2"), a shell or PowerShell prompt
    r"|\S+: \*\*\*|\$ \S|PS [A-Z]:\\"
    # a build step ("#5 [2/4]"), a script's shebang or a command commented out ("#!/bin/bash", "##diff <(cut …)"):
    # people writing a heading leave a space after its marks
    r"|#+[^\s#]"
    # a tool's step heading: Vault's, Consul's, Packer's, Homebrew's "==> …", docker build's " ---> …"
    r"|=+> |-+> "
    # a program naming itself before its level: "Java HotSpot(TM) 64-Bit Server VM warning: ignoring option …"
    r"|(?!(?:I|We|It|This|That|The|My|Our|You|They|He|She|There|Here)\b)[A-Z][\w().-]*(?: [\w().-]+){1,6}"
    r" (?:warning|error|fatal error|note): "
    # a test runner's failure excerpt: "E       assert 1 == 2", ">       assert f()"
    r"|[E>] {3,}\S"
    # a diagnostic's pointer under the source it quotes: "^-----^ SC2034 (warning): …", "    ^~~~"
    r"|\^[-~^]*(?:\s|$)"
    # a command a build tool echoes, run by its full path: "/usr/bin/gfortran -c -DRELEASE …"
    r"|/[\w.+-]+(?:/[\w.+-]+)+ +--?\w"
    r")"
)
# A shell script's line: an assignment (``now=$(date +"%T")``), a substitution, a variable, a redirection, a test,
# or a command people only type (``echo "…"``, ``sleep 130``); found anywhere in the line, as prose holds none.
_SHELL = re.compile(
    r"^\s*(?:export\s+)?[A-Za-z_]\w*=[^\s=]|\$\(|\$\{|\$[?#@]|\$[A-Za-z_]\w*|\s[12]?>>?\s*[/\w$&]"
    r"|;\s*(?:then|fi|done|do)\b|^\s*(?:if|elif|while|until)\s+\[|^\s*(?:echo|sleep|sudo|source|kinit)\s+[-\"'$/~.\d]"
)
# A line introducing what follows reads as a sentence: it opens with a plain word (not an identifier such
# as "NoMethodError" or an acronym such as "PHP") and runs to at least three words.
_SENTENCE = re.compile(r"[A-Za-z][a-z]*,?\s+\S+(?:\s+\S+)+")


def machine_line(line: str) -> bool:
    """Whether a line has the shape of program output rather than of someone writing."""
    return (
        _MACHINE.match(line) is not None
        or _SHELL.search(line) is not None
        or leading_stamp(line) is not None
        or is_trace_frame(line)
        or is_thread_heading(line)
        or trace_header(line) is not None
        or is_compiler_diagnostic(line)
        or is_test_report(line)
    )


def _own_lines(text: str, tuning: ClassifyTuning) -> list[str] | None:
    """The block's non-blank lines that are not machine-made (within its head), when they are enough for the block
    to be someone writing (``ClassifyTuning.own_words_tenths``); None when they are not."""
    lines = [line for line in text[: tuning.own_words_chars].split("\n") if line.strip()]
    own = [line for line in lines if not machine_line(line)]
    return own if lines and len(own) * 10 > len(lines) * tuning.own_words_tenths else None


def own_words(text: str, tuning: ClassifyTuning) -> bool:
    """Whether the block is someone writing: machine-shaped lines are not its majority."""
    return _own_lines(text, tuning) is not None


def ask_strength(text: str, tuning: ClassifyTuning) -> int:
    """2 when the block puts a question to the reader, 1 when it asks otherwise, 0 when it does not (module doc)."""
    own = _own_lines(text, tuning)
    if own is None:
        return 0
    words = " ".join(line.strip() for line in own)
    questions = list(_QUESTION.finditer(words))
    if any(_ANSWER.match(words[question.end() :].lstrip(" \"')]\u2019\u201d")) is None for question in questions):
        return 2
    if questions or _ASK_PHRASES.search(words) is not None:
        return 1
    first_word = words.split(maxsplit=1)[0].strip(",.:;!").lower() if words else ""
    return 1 if first_word in _ASK_OPENERS else 0


def speaks_to_reader(text: str, tuning: ClassifyTuning) -> bool:
    """Whether the block is the user talking: own words that ask, or that introduce what follows (a colon)."""
    return own_words(text, tuning) and (ask_strength(text, tuning) > 0 or text.rstrip().endswith(":"))


def glued_lines(text: str, tuning: ClassifyTuning) -> int:
    """How many leading lines (at most ``glued_lines``) of an evidence block are the user's words glued to it; 0
    when there are none."""
    lines = first_lines(text, tuning.glued_lines + 1)
    for count, line in enumerate(lines):
        if machine_line(line) or _SENTENCE.match(line.strip()) is None:
            if count == 0 or not line.strip():
                return 0
            lead = "\n".join(lines[:count]).strip()
            introduces = lead.endswith(":") and _SENTENCE.match(lead) is not None
            return count if ask_strength(lead, tuning) == 2 or introduces else 0
    return 0


def glued_tail_lines(text: str, tuning: ClassifyTuning) -> int:
    """How many trailing lines (at most ``glued_lines``) of an evidence block are a question glued under it; 0
    when there is none."""
    lines = last_lines(text, tuning.glued_lines + 1)
    for count, line in enumerate(reversed(lines)):
        # The evidence ends at a machine-made line, or at one that does not read as a sentence (a GC log's
        # record, a table row), as the glued lines above the evidence do.
        if machine_line(line) or _SENTENCE.match(line.strip()) is None:
            if count == 0:
                return 0
            tail = lines[len(lines) - count :]
            sentences = all(_SENTENCE.match(line.strip()) is not None for line in tail)
            question = "\n".join(tail).rstrip()
            return count if sentences and question.endswith("?") and ask_strength(question, tuning) == 2 else 0
    return 0
