"""The built-in probe set a backend must count exactly as the reference does before it may serve.

The probes aim at where two implementations of one vocabulary could part:
every branch of the pre-tokenizers (contractions in either case, letter runs
after punctuation, digit runs cut in threes, punctuation runs swallowing
newlines, whitespace runs before text, at the end and of every length around
the longest whitespace tokens), case changes inside words (``o200k_base`` splits
there), scripts without spaces, combining marks, emoji sequences, text that
spells a special token, and long single pieces where BPE merges the most.
"""

from __future__ import annotations

__all__ = ["PROBES"]

_HAND_WRITTEN = (
    "",
    " ",
    "\n",
    "hello world",
    "It's the user's job; they'll see we've done what you'd said, I'm sure.",
    "IT'S LOUD, DON'T SHOUT. O'Neil's ALLCAPS'LL Ve'RE",
    "camelCaseIdentifier HTTPServerError getHTTPResponseCode XMLHttpRequest iOS macOS",
    "2026-11-30T22:41:07.123456Z ERROR [worker-7] request_id=9f3b2c7a latency_ms=1234567",
    "0 00 000 0000 00000 1234567890123456789 3.14159 -42 +7e10 0x1F 1_000_000",
    "  File \"/srv/app/handlers.py\", line 88, in post\n    raise ValueError('bad') from exc\n",
    "def f(x):\n\tif x:\n\t\treturn {'a': [1, 2, 3]}\r\n\treturn None\r\n",
    "| col | other |\n|-----|-------|\n| 1   |  two  |\n",
    "<|endoftext|> <|fim_prefix|><|endofprompt|> text that spells special tokens",
    "!!!???... ---===>>> ;;;\n\n\n:::\r\n\r\n/// ///\n/x",
    "word\n\n\n   \n\t\n  indented\n    \n",
    "trailing spaces   ",
    "trailing newlines\n\n\n",
    "   leading spaces",
    "a \u00a0b\u2003c\u3000d\u200be\ufeff",
    "日本語のテキストと中文文本，以及한국어 텍스트。",
    "Ελληνικά, русский текст, עברית, العربية, हिन्दी, ไทย",
    "e\u0301 n\u0303 a\u030a\u0328 Z\u0351\u0352\u0353",
    "👍🏽 👨\u200d👩\u200d👧\u200d👦 🏳️\u200d🌈 🇫🇷🇯🇵 ❤️ 🤖🧪",
    "\U0001d400\U0001d401 \U00020000\U0002a6d6 \U0010fffd",
    "\x00\x01\x07\x1b[31mred\x1b[0m\x7f",
    "naïve café résumé Straße ĲSSEL ǅemal ﬁle",
    "https://example.com/a/b?c=d&e=f#g user@example.org C:\\Users\\x\\file.txt",
)


def _generated() -> tuple[str, ...]:
    runs: list[str] = []
    for length in (1, 2, 3, 4, 7, 8, 16, 31, 32, 33, 64, 79, 80, 81, 127, 128, 130, 200, 400, 1000):
        runs.append("a" + " " * length + "b")
        runs.append("x" + "\t" * length + "\n" + " " * length)
        runs.append("7" * length)
        runs.append("=" * length + "\n")
    for length in (1000, 5000):
        runs.append("ab" * length)
        runs.append("\u2800" * length)
    runs.append("".join(chr(code) for code in range(0x20, 0x2FF)))
    return tuple(runs)


PROBES: tuple[str, ...] = _HAND_WRITTEN + _generated()
