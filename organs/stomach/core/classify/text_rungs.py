"""The rungs that read a block as a tool's messages, as code or data, or as a program's output no other rung knows.

These are the shapes people and tools write as text (a compiler's diagnostics, a test runner's report, a source
column's messages, code, a JSON document, nested source): a line's words and punctuation decide, and they are
the shapes prose imitates most, so each rung guards against a sentence or a question. They lean on the log rungs'
helpers (``rungs``) and stand apart from the table rungs (``table_rungs``), which count columns instead.
"""

from __future__ import annotations

import re

from organs.stomach.core.classify.rungs import Classification, carried, reads_as_free_text, written_lines
from organs.stomach.core.shapes.line_shapes import (
    commented_out,
    is_box_level,
    is_comment_line,
    is_compiler_diagnostic,
    is_json_record,
    is_pointer,
    is_test_report,
    source_column_end,
    unboxed,
)
from organs.stomach.core.shapes.timestamps import leading_stamp
from organs.stomach.core.tuning import ClassifyTuning

__all__ = [
    "code_rung",
    "diagnostics_rung",
    "json_document_rung",
    "machine_text_rung",
    "nested_source_rung",
    "source_column_rung",
    "test_report_rung",
]


def source_column_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    # docker compose and kubectl prefix each line with the service or pod that wrote it: a source
    # column, which a two-column pipe table imitates. The sources repeat and what follows them reads
    # as messages; a table's first column names each row once and its cells are values.
    if len(lines) < 2:
        return None
    sources: set[str] = set()
    messages = 0
    prefixed = 0
    for line in lines:
        found = source_column_end(line)
        if found is None:
            continue
        prefixed += 1
        sources.add(found[0])
        rest = line[found[1] :]
        messages += is_json_record(rest) or reads_as_free_text(rest) or leading_stamp(rest) is not None
    if (
        prefixed * 10 < len(lines) * tuning.row_tenths
        or len(sources) > max(tuning.sources_always_allowed, prefixed // tuning.source_one_in)
        or not carried(messages, prefixed, tuning)
    ):
        return None
    return Classification(
        "log", f"lines prefixed by a source column ({len(sources)} sources, {prefixed}/{len(lines)} lines)"
    )


def _diagnostic(line: str) -> bool:
    # A line that asks ("error: x when I run y?") is the user's, whatever it quotes.
    if line.endswith("?"):
        return False
    text, boxed = unboxed(line)
    return is_compiler_diagnostic(text) or (boxed and is_box_level(text))


def diagnostics_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    written = written_lines(lines)
    diagnostics = sum(1 for line in written if _diagnostic(line))
    # A pointer and the source line it stands under are a diagnostic's quote: they count for no side.
    quoted = sum(2 for line in written[1:] if is_pointer(line))
    if diagnostics == 0 or not (
        _diagnostic(written[0]) or diagnostics * tuning.diagnostic_one_in >= len(written) - quoted
    ):
        return None
    return Classification("log", f"compiler or build diagnostics ({diagnostics}/{len(written)} lines)")


def test_report_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    written = written_lines(lines)
    reported = sum(1 for line in written if is_test_report(line))
    if not written or reported < min(2, len(written)) or reported * tuning.diagnostic_one_in < len(written):
        return None
    return Classification("log", f"a test run's report ({reported}/{len(written)} runner lines)")


_CODE_LINE = re.compile(
    r"\s*(?:(?:def|class|import|from|fn|pub|let|const|var|func|function|return|package|use|impl|struct|enum|"
    r"interface|type|async|await|#include|#define|#import|public|private|protected|static|try|catch|except|finally|"
    r"elif|else|switch|case)\b"
    r"|(?:if|for|while)\s*\(|[}\])];?\s*$|@\w|//|/\*|\*/|#!)"
    r"|(?!\s*=+> ).*(?:[;{]\s*$|\)\s*\{|=>|->|:=|==|!=|&&|\|\|)"
    r"|\s*[A-Za-z_][\w.]*(?:\[[^\]\n]{0,80}\])? ?[-+*/|&]?= \S"
    # a config's padded keys ("pid-file        = /run/db.pid") and a rules file's options ("-w /etc/passwd -p wa")
    r"|\s*[A-Za-z_][\w.-]{0,60}[ \t]{1,40}= \S|\s*--?[A-Za-z][\w-]{0,40}(?: \S|\s*$)"
    # INI, systemd units, .env: "[Unit]", "Description=queue worker", "FOO=bar"
    r"|\[[\w .:\"/-]{1,80}\]\s*$|[A-Za-z_][\w.-]{0,60}=\S"
    # YAML and JSON keys: "kind: Deployment", "  name:", "- image: web", "\"version\": \"1.0\","; a YAML key is
    # lower-case and its value a few words, where a prose label ("Context: we run…") is capitalised or says more
    r"|\s*(?:- )?[a-z_][\w.-]{0,60}:(?:\s*$| (?:\S{1,200} ){0,2}\S{1,200}$)|\s*\"[^\"\n]{1,80}\"\s?:\s?\S|\s*[{\[]\s*$"
    # SQL and Dockerfile statements, shell control words
    r"|(?:SELECT|FROM|WHERE|JOIN|LEFT JOIN|INNER JOIN|GROUP BY|ORDER BY|HAVING|LIMIT|INSERT INTO|UPDATE|DELETE FROM"
    r"|CREATE|ALTER|DROP|WITH|VALUES|RUN|CMD|COPY|ADD|WORKDIR|ENV|EXPOSE|ENTRYPOINT|ARG|LABEL|USER|VOLUME) \S"
    r"|\s*(?:fi|done|esac|then|do|else)\s*$|\s*(?:set -[a-z]|export \w|if \[|for \w{1,40} in |while \[|echo )"
    # unified diffs
    r"|diff --git |@@ -\d|(?:---|\+\+\+) [ab]/|index [0-9a-f]{7,40}\.\."
)


_PLAIN_WORD = re.compile(r"[A-Za-z][a-z'’]*[,;:]?|[a-z]+[.?!]?")
# A sentence ends somewhere in the line (a long line is read clipped, so its end may not be seen).
_SENTENCE_ENDS = re.compile(r"^[A-Za-z(\"'].*?[a-z)\"'][.?!](?:\s|$)")


def _reads_as_sentence(line: str, tuning: ClassifyTuning) -> bool:
    """Whether a line is someone writing a sentence (``ClassifyTuning.sentence_least_words``) rather than code."""
    stripped = line.strip()
    if _SENTENCE_ENDS.match(stripped) is None:
        return False
    words = stripped.split()
    return len(words) >= tuning.sentence_least_words and _mostly_plain(words, tuning)


def _mostly_plain(words: list[str], tuning: ClassifyTuning) -> bool:
    """Whether at most one word in ``sentence_odd_word_one_in`` is anything but a plain word."""
    plain = sum(1 for word in words if _PLAIN_WORD.fullmatch(word) is not None)
    return (len(words) - plain) * tuning.sentence_odd_word_one_in <= len(words)


def _code_shaped(line: str) -> bool:
    directive = commented_out(line)
    return _CODE_LINE.match(line) is not None or (directive is not None and _CODE_LINE.match(directive) is not None)


def code_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    # A config's comments ("## Set failure mode to syslog") say what its lines do: its lines decide, a directive
    # commented out (";pm.max_requests = 500") among them, and its blank lines say nothing.
    lines = [line for line in lines if line.strip() and not is_comment_line(line)]
    shaped = sum(1 for line in lines if _code_shaped(line) and not _reads_as_sentence(line, tuning))
    if not carried(shaped, len(lines), tuning) or shaped == 0:
        return None
    return Classification("code", f"unfenced code ({shaped}/{len(lines)} code-shaped lines)")


def _wordy(line: str, tuning: ClassifyTuning) -> bool:
    """Whether a line is mostly plain words, as people write: a few of them, at most one in three anything else."""
    words = line.split()
    return len(words) >= tuning.wordy_least_words and _mostly_plain(words, tuning)


# A line that is a JSON document written on one line: an object or an array of them, with keys.
_JSON_DOCUMENT = re.compile(r'\s*\[?\s*\{\s*"[^"]{1,200}"\s*:')


def json_document_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    # A JSON document minified onto one line (an API's response, a bundler's metafile, a schema) is data, not the
    # user's words; JSON lines with a log's fields were read as a log above.
    written = written_lines(lines)
    documents = sum(1 for line in written if _JSON_DOCUMENT.match(line) is not None and line.count('":') >= 2)
    if documents == 0 or not carried(documents, len(written), tuning):
        return None
    return Classification("code", f"JSON documents ({documents}/{len(written)} lines)")


# A line that opens a nested block (``if {``, ``defmodule Board do``, ``{deps, [``, ``<module name="x">``) and one
# that closes it.
_OPENS = re.compile(r"(?:[{\[(]|\bdo|->)\s*(?:(?:#|//|%).*)?$|^\s*<[A-Za-z][\w:.-]*(?:\s[^<>]*)?(?<!/)>\s*$")
_CLOSES = re.compile(r"\s*(?:[}\])]|end\b|</[A-Za-z])")


def nested_source_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    # Source and configuration in a language no rung knows (Tcl, Elixir, an Erlang term file, a daemon's braces)
    # nest: lines open blocks that later lines close. A program's output seldom does, and never balanced.
    written = written_lines(lines)
    opens = sum(1 for line in written if _OPENS.search(line) is not None)
    closes = sum(1 for line in written if _CLOSES.match(line) is not None)
    if len(written) < tuning.machine_least_lines or opens * tuning.nested_one_in < len(written):
        return None
    if not opens <= closes * tuning.nested_balance <= opens * tuning.nested_balance**2:
        return None
    return Classification("code", f"nested source ({opens} lines open a block, {closes} close one)")


_DIGIT_RUN = re.compile(r"\d+")


def machine_text_rung(lines: list[str], tuning: ClassifyTuning) -> Classification | None:
    # What no rung above read, over many lines few of which are plain words, is a program's output (a tool's
    # report, a debugger's session, a status dump): people write words. A block that asks is the user's. A line of
    # words said again but for its numbers ("Time taken: 0.071 seconds" after each query) is a program's: it
    # counts once.
    written = written_lines(lines)
    if len(written) < tuning.machine_least_lines or any(line.rstrip().endswith("?") for line in written):
        return None
    wordy = len({_DIGIT_RUN.sub("0", line) for line in written if _wordy(line, tuning)})
    if wordy * tuning.machine_wordy_one_in > len(written):
        return None
    return Classification("log", f"a program's output ({wordy}/{len(written)} lines read as words)")
