"""The curated rules: which credentials and personal data a paste may hold, and how each is found.

A rule is an id (the kind a placeholder names), lower-case keywords for a pre-filter
(a line holding none of them is never matched; all keywords are found in one pass over
the text, and families share a short one, such as ``gh`` for GitHub's token prefixes),
a pattern whose group ``secret`` is what gets replaced, and where it helps an entropy floor or a further check of the
value. Patterns are written to run in linear time under Python's backtracking
engine: no quantified group holds another open-ended quantifier, every repeat is
bounded, and neighbouring repeats are separated by a literal or by character
classes they do not share, so each start position costs a bounded amount of work.
``tests/stomach/test_redact_rules.py`` checks this on adversarial inputs.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "PERSONAL_CATEGORIES",
    "PERSONAL_RULES",
    "PRIVATE_KEY_KIND",
    "SECRET_RULES",
    "Rule",
    "entropy",
    "literal_password",
]

PRIVATE_KEY_KIND = "private_key"


def entropy(value: str) -> float:
    """Shannon entropy of ``value`` in bits per character."""
    if not value:
        return 0.0
    total = len(value)
    return -sum(count / total * math.log2(count / total) for count in Counter(value).values())


# Compared and hashed by identity: rules are module constants, and the engine's caches are keyed by tuples
# of them, which a field-by-field hash (patterns, keyword tuples) made cost more than the search itself.
@dataclass(frozen=True, slots=True, eq=False)
class Rule:
    id: str
    keywords: tuple[str, ...]
    pattern: re.Pattern[str]
    entropy_floor: float = 0.0
    check: Callable[[str], bool] | None = None
    # Personal data takes a pseudonym (``‹email#2›``) and runs only when its category is opted in.
    category: str | None = None

    def accepts(self, value: str) -> bool:
        if self.entropy_floor and entropy(value) < self.entropy_floor:
            return False
        return self.check is None or self.check(value)


def _rule(
    kind: str,
    keywords: tuple[str, ...],
    pattern: str,
    *,
    floor: float = 0.0,
    check: Callable[[str], bool] | None = None,
    flags: int = 0,
    category: str | None = None,
) -> Rule:
    return Rule(kind, keywords, re.compile(pattern, flags), floor, check, category)


# --- checks of a value ----------------------------------------------------------

# Words that stand where a value would, in code, docs and templates: no secret.
_NOT_VALUES = frozenset(
    [
        "null",
        "none",
        "nil",
        "true",
        "false",
        "undefined",
        "empty",
        "redacted",
        "hidden",
        "masked",
        "filtered",
        "removed",
        "omitted",
        "secret",
        "secrets",
        "password",
        "passwd",
        "token",
        "tokens",
        "key",
        "str",
        "string",
        "int",
        "bool",
        "bytes",
        "any",
        "optional",
        "required",
        "object",
        "dict",
        "list",
        "yes",
        "no",
        "on",
        "off",
        "env",
        "default",
        "example",
        "placeholder",
        "value",
        "your_password",
        "your_token",
        "xxx",
    ]
)
# Code that computes a value rather than holding one: a call, an index, a template, a variable.
_REFERENCE = re.compile(r"[\[{(<`]|^[$%@]|^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")


_CREDENTIAL_WORDS = ("pass", "pwd", "secret", "token", "key")


def _names_a_credential(value: str) -> bool:
    """``db_password``, ``GITHUB_TOKEN``: an identifier naming the credential, as code and env files refer to one."""
    lowered = value.lower()
    return value.isidentifier() and "_" in value and any(word in lowered for word in _CREDENTIAL_WORDS)


def _literal(value: str) -> bool:
    """Whether ``value`` reads as a literal credential, not a placeholder, a mask or code that fetches one."""
    if value.startswith("‹") or value.lower() in _NOT_VALUES or len(set(value)) == 1:
        return False
    return _REFERENCE.search(value) is None and not _names_a_credential(value)


def literal_password(value: str) -> bool:
    """A value that reads as a literal password: three characters or more, not a placeholder or a reference."""
    return len(value) >= 3 and _literal(value)


def _literal_token(value: str) -> bool:
    """A token-like value: long enough and holding a digit, as generated tokens do (words alone are prose)."""
    # ``Class@1a2b3c`` is an object's printed identity, not a credential.
    return len(value) >= 8 and "@" not in value and any(character.isdigit() for character in value) and _literal(value)


def _has_digit(value: str) -> bool:
    return any(character.isdigit() for character in value)


def _basic_credentials(value: str) -> bool:
    """Base64 of ``user:password`` in printable text, as an HTTP Basic header carries."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    return ":" in decoded and decoded.isprintable()


def _ipv6(value: str) -> bool:
    if value.count(":") < 2:
        return False
    try:
        ipaddress.IPv6Address(value)
    except ValueError:
        return False
    return True


def _phone_digits(value: str) -> bool:
    return 8 <= sum(character.isdigit() for character in value) <= 15


# --- assignments: ``name = value`` in code, config, env files and logs ----------

# The name may carry any prefix (``DB_PASSWORD``, ``x-api-key``) but must end in the word
# (``password_policy`` and ``max_tokens`` name no secret), and it starts a word of its own,
# after a space, a quote or a bracket: ``stream/token: NAME`` in a log names a path, not a credential.
_ASSIGNED = (
    r"(?<![^\s\"'{{(\[,;&?|])[A-Za-z0-9_.-]{{0,40}}?(?:{ending})[\"']?[ \t]{{0,8}}(?::=|=>|=|:)[ \t]{{0,8}}"
    r"(?P<open>[\"']?)(?P<secret>(?<=[\"'])[^\"'\n]{{1,256}}(?=[\"'])|(?<![\"'])[^\s\"'`,;&)\]}}>]{{1,256}})"
)


def _assignment(kind: str, keywords: tuple[str, ...], ending: str, check: Callable[[str], bool]) -> Rule:
    return _rule(kind, keywords, _ASSIGNED.format(ending=ending), check=check, flags=re.IGNORECASE)


# --- the rules ------------------------------------------------------------------

_B = r"(?<![A-Za-z0-9_-])"  # the secret starts a token
_E = r"(?![A-Za-z0-9_-])"  # and ends one

SECRET_RULES: tuple[Rule, ...] = (
    # PEM private keys are found by the engine (header, body, footer), not by one pattern; this one finds the header.
    # The header as written, or altered a little (dashes, spacing, case, an underscore) to slip past a pattern.
    _rule(
        PRIVATE_KEY_KIND,
        ("private key", "private  key", "private_key", "privatekey"),
        r"(?i)(?P<secret>-{3,6}[ \t]?BEGIN[ A-Z0-9_]{0,40}PRIVATE[ _]{0,3}KEY(?:[ _]BLOCK)?[ \t]?-{3,6})",
    ),
    _rule("aws_access_key_id", ("akia", "asia"), rf"{_B}(?P<secret>(?:AKIA|ASIA)[A-Z0-9]{{16}}){_E}"),
    _rule(
        "aws_secret_access_key",
        ("secret",),
        r"(?i)aws_?secret_?access_?key[\"']?[ \t]{0,8}(?::=|=>|=|:)[ \t]{0,8}[\"']?"
        r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
    ),
    _rule("gcp_api_key", ("aiza",), rf"{_B}(?P<secret>AIza[0-9A-Za-z_-]{{35}}){_E}"),
    _rule("gcp_oauth_client_secret", ("gocspx",), rf"{_B}(?P<secret>GOCSPX-[A-Za-z0-9_-]{{28}}){_E}"),
    _rule(
        "azure_storage_key",
        ("key",),
        r"(?i)(?:AccountKey|SharedAccessKey)[ \t]{0,4}=[ \t]{0,4}(?P<secret>[A-Za-z0-9+/]{40,100}={0,2})",
    ),
    _rule("azure_sas_token", ("sig=",), r"[?&]sig=(?P<secret>[A-Za-z0-9%+/]{30,200}(?:%3D|=){0,2})"),
    _rule(
        "azure_client_secret",
        ("q~",),
        r"(?<![A-Za-z0-9_~.-])(?P<secret>[A-Za-z0-9_~.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34})(?![A-Za-z0-9_~.-])",
    ),
    _rule(
        "github_token",
        ("gh", "github_pat_"),
        r"(?<![A-Za-z0-9_])(?P<secret>gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,255})(?![A-Za-z0-9_])",
    ),
    _rule(
        "gitlab_token",
        ("gl",),
        rf"{_B}(?P<secret>gl(?:pat|dt|ptt|rt|cbt|ft|imt|soat|oas)-[A-Za-z0-9_-]{{20,255}}"
        rf"(?:\.[A-Za-z0-9_-]{{2,64}}){{0,3}}){_E}",
    ),
    _rule("slack_token", ("xox", "xapp-"), rf"{_B}(?P<secret>(?:xox[abposre]|xapp)-[A-Za-z0-9-]{{10,250}}){_E}"),
    _rule(
        "slack_webhook",
        ("://",),
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9+/_-]{20,200})",
    ),
    _rule(
        "stripe_key",
        ("sk_", "rk_", "whsec_"),
        r"(?<![A-Za-z0-9_])(?P<secret>(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,247}|whsec_[A-Za-z0-9]{24,64})"
        r"(?![A-Za-z0-9])",
    ),
    _rule("anthropic_api_key", ("sk-",), rf"{_B}(?P<secret>sk-ant-[A-Za-z0-9]{{2,10}}-[A-Za-z0-9_-]{{32,200}}){_E}"),
    _rule(
        "openai_api_key",
        ("sk-",),
        rf"{_B}(?P<secret>sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{{20,300}}|sk-[A-Za-z0-9]{{32,64}}){_E}",
        floor=3.0,
    ),
    _rule("npm_token", ("npm_",), r"(?<![A-Za-z0-9_])(?P<secret>npm_[A-Za-z0-9]{36})(?![A-Za-z0-9])", floor=3.0),
    _rule(
        "jwt",
        ("eyj",),
        rf"{_B}(?P<secret>eyJ[A-Za-z0-9_-]{{5,4096}}\.eyJ[A-Za-z0-9_-]{{5,8192}}\.[A-Za-z0-9_-]{{0,4096}}){_E}",
    ),
    _rule(
        "bearer_token",
        ("bearer",),
        r"(?i)(?<![A-Za-z0-9])bearer[ \t]{1,8}(?P<secret>[A-Za-z0-9_~+/.-]{12,4096}={0,2})(?![A-Za-z0-9_~+/.=-])",
        floor=2.5,
        check=_has_digit,
    ),
    _rule(
        "basic_auth",
        ("basic",),
        r"(?i)(?<![A-Za-z0-9])basic[ \t]{1,8}(?P<secret>[A-Za-z0-9+/]{4,1024}={0,2})(?![A-Za-z0-9+/=])",
        check=_basic_credentials,
    ),
    _rule(
        "authorization_header",
        ("authorization",),
        r"(?i)(?<![A-Za-z0-9-])(?:proxy-)?authorization[\"']?[ \t]{0,8}[:=][ \t]{0,8}[\"']?(?!bearer|basic)"
        r"(?:(?:token|digest|apikey|sso-key|key)[ \t]{1,8})?(?P<secret>[^\s\"',;]{8,4096})",
        check=_literal_token,
    ),
    _rule(
        "basic_auth",
        ("-u",),
        r"(?<![A-Za-z0-9-])(?:-u|--user)[ \t]{1,8}[\"']?[^\s:\"']{1,128}:(?P<secret>[^\s\"']{1,256})",
        check=literal_password,
    ),
    _rule(
        "url_password",
        ("://",),
        r"://[^\s:/?#@\"'<>\[\]]{0,256}:(?P<secret>[^\s/?#@\"'<>]{1,256})@",
        check=literal_password,
    ),
    _rule(
        "connection_string_password",
        ("pass", "pwd"),
        r"(?i);[ \t]{0,4}(?:password|pwd)[ \t]{0,4}=[ \t]{0,4}(?P<secret>[^;\n\"']{1,256}?)[ \t]{0,4}(?=;|\"|'|$)",
        check=literal_password,
        flags=re.MULTILINE,
    ),
    # htpasswd: user:hash, the hash in one of the formats Apache writes (apr1, bcrypt, sha-crypt, {SHA}).
    _rule(
        "password_hash",
        ("$apr1$", "$2a$", "$2b$", "$2y$", "$5$", "$6$", "{sha}"),
        r"(?m)^[A-Za-z0-9._@-]{1,64}:(?P<secret>\$(?:apr1|2[aby]|5|6)\$[./0-9A-Za-z$]{8,128}|\{SHA\}[A-Za-z0-9+/]{27}=)$",
    ),
    _assignment(
        "password",
        ("pass", "pwd"),
        r"password|passwd|passphrase|(?<=[_.-])pass|(?<=[_.-])pwd",
        literal_password,
    ),
    _assignment(
        "secret", ("secret",), r"secret|secret[_-]?key|secret[_-]?access[_-]?key|client[_-]?secret", _literal_token
    ),
    _assignment("token", ("token",), r"token", _literal_token),
    _assignment(
        "api_key",
        ("key",),
        r"api[_-]?key|access[_-]?key|private[_-]?key|signing[_-]?key|encryption[_-]?key|master[_-]?key",
        _literal_token,
    ),
)

PERSONAL_CATEGORIES: dict[str, str] = {"emails": "email", "ips": "ip", "phones": "phone"}

PERSONAL_RULES: tuple[Rule, ...] = (
    _rule(
        "email",
        ("@",),
        r"(?<![A-Za-z0-9._%+-])(?P<secret>[A-Za-z0-9._%+-]{1,64}@(?:[A-Za-z0-9-]{1,63}\.){1,8}[A-Za-z]{2,24})"
        r"(?![A-Za-z0-9-])",
        category="emails",
    ),
    _rule(
        "ip",
        (".",),
        r"(?<![0-9A-Za-z.])(?P<secret>(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}"
        r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9]))(?!\.?[0-9])",
        category="ips",
    ),
    _rule(
        "ip",
        ("::", ":"),
        r"(?<![0-9A-Za-z:])(?P<secret>(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4})(?![0-9A-Za-z:])",
        check=_ipv6,
        category="ips",
    ),
    _rule(
        "phone",
        ("+", "(", "-", "."),
        r"(?<![\w+.-])(?P<secret>\+[1-9][0-9]{0,2}(?:[ .-]?\(?[0-9]{1,4}\)?){2,5}"
        r"|\(?[2-9][0-9]{2}\)?[ .-][2-9][0-9]{2}[ .-][0-9]{4})(?![\w.-]?[0-9])",
        check=_phone_digits,
        category="phones",
    ),
)
