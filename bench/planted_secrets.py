"""Fake credentials, generated at run time, planted in the places people paste them from.

Every value is random (a seeded ``random.Random``), shaped like the real format so
the rules must recognise it, and planted in logs, configs, env files, traces, curl
commands, code, JSON and YAML. Nothing here is, or was ever, a real key. Used by
the redaction tests and by ``bench/redact_bench.py`` (planted-secret recall).
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Planted", "planted_pastes"]

_ALNUM = string.ascii_letters + string.digits
_URLSAFE = _ALNUM + "_-"
_BASE64 = _ALNUM + "+/"


@dataclass(frozen=True, slots=True)
class Planted:
    """One paste holding ``secrets`` (the values that must never be served), each of kind ``kind``."""

    kind: str
    place: str
    secrets: tuple[str, ...]
    text: str


def _draw(rng: random.Random, alphabet: str, length: int) -> str:
    # A value drawn from letters and digits holds both, as generated credentials do.
    digits = any(character.isdigit() for character in alphabet)
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(length))
        if any(character.isalpha() for character in value) and (
            not digits or any(character.isdigit() for character in value)
        ):
            return value


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _jwt(rng: random.Random) -> str:
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = _b64url(json.dumps({"sub": str(rng.randrange(10**9)), "iat": rng.randrange(10**9)}).encode())
    return f"{header}.{payload}.{_draw(rng, _URLSAFE, 43)}"


def _pem(rng: random.Random, label: str) -> str:
    body = "\n".join(_draw(rng, _BASE64, 64) for _ in range(6))
    return f"-----BEGIN {label}-----\n{body}\n{_draw(rng, _BASE64, 20)}==\n-----END {label}-----"


def _password(rng: random.Random) -> str:
    return _draw(rng, _ALNUM + "!#%^*", rng.randrange(9, 17))


# kind → how to make one value of it
_MAKERS: dict[str, Callable[[random.Random], str]] = {
    "aws_access_key_id": lambda rng: "AKIA" + _draw(rng, string.ascii_uppercase + "234567", 16),
    "aws_secret_access_key": lambda rng: _draw(rng, _BASE64, 40),
    "gcp_api_key": lambda rng: "AIza" + _draw(rng, _URLSAFE, 35),
    "gcp_oauth_client_secret": lambda rng: "GOCSPX-" + _draw(rng, _URLSAFE, 28),
    "azure_storage_key": lambda rng: _draw(rng, _BASE64, 86) + "==",
    "azure_client_secret": lambda rng: _draw(rng, _ALNUM, 3) + str(rng.randrange(10)) + "Q~" + _draw(rng, _ALNUM, 34),
    "github_token": lambda rng: "ghp_" + _draw(rng, _ALNUM, 36),
    "github_fine_grained": lambda rng: "github_pat_" + _draw(rng, _ALNUM, 22) + "_" + _draw(rng, _ALNUM, 59),
    "gitlab_token": lambda rng: "glpat-" + _draw(rng, _URLSAFE, 20),
    "slack_token": lambda rng: (
        f"xoxb-{rng.randrange(10**11, 10**12)}-{rng.randrange(10**12, 10**13)}-" + _draw(rng, _ALNUM, 24)
    ),
    "slack_webhook": lambda rng: (
        f"T{_draw(rng, string.ascii_uppercase + string.digits, 8)}/"
        f"B{_draw(rng, string.ascii_uppercase + string.digits, 8)}/{_draw(rng, _ALNUM, 24)}"
    ),
    "stripe_key": lambda rng: "sk_live_" + _draw(rng, _ALNUM, 24),
    "openai_api_key": lambda rng: "sk-proj-" + _draw(rng, _URLSAFE, 48),
    "anthropic_api_key": lambda rng: "sk-ant-api03-" + _draw(rng, _URLSAFE, 93) + "AA",
    "npm_token": lambda rng: "npm_" + _draw(rng, _ALNUM, 36),
    "jwt": _jwt,
    "bearer_token": lambda rng: _draw(rng, _URLSAFE + ".", 40),
    "password": _password,
    "token": lambda rng: _draw(rng, _ALNUM, 32),
    "api_key": lambda rng: _draw(rng, _ALNUM, 32),
    "secret": lambda rng: _draw(rng, _ALNUM, 40),
}


def _places(kind: str, value: str, rng: random.Random) -> list[tuple[str, str]]:
    """(place, paste) pairs that plant ``value`` the way a ``kind`` is found in the wild."""
    env_name = {"gcp_api_key": "GOOGLE_API_KEY", "stripe_key": "STRIPE_SECRET_KEY"}.get(kind, kind.upper())
    host = f"db{rng.randrange(100)}.internal"
    stamp = f"2025-03-0{rng.randrange(1, 9)} 10:1{rng.randrange(10)}:0{rng.randrange(10)}"
    if kind == "aws_secret_access_key":
        return [
            ("env", f"AWS_ACCESS_KEY_ID=AKIA{_draw(rng, string.ascii_uppercase, 16)}\nAWS_SECRET_ACCESS_KEY={value}"),
            ("ini", f"[default]\naws_secret_access_key = {value}\nregion = eu-west-1"),
        ]
    if kind == "azure_storage_key":
        return [
            (
                "connection string",
                f"DefaultEndpointsProtocol=https;AccountName=store1;AccountKey={value};EndpointSuffix=core.windows.net",
            )
        ]
    if kind == "slack_webhook":
        return [("curl", f'curl -X POST -d \'{{"text":"hi"}}\' https://hooks.slack.com/services/{value}')]
    if kind == "bearer_token":
        return [
            ("curl", f'curl -s -H "Authorization: Bearer {value}" https://api.example.test/v1/items'),
            ("log", f"{stamp} DEBUG http: request headers {{'Authorization': 'Bearer {value}', 'Accept': '*/*'}}"),
        ]
    if kind in ("password", "token", "api_key", "secret"):
        name = {"password": "db_password", "token": "access_token", "api_key": "api_key", "secret": "client_secret"}
        key = name[kind]
        return [
            ("env", f"{key.upper()}={value}\nLOG_LEVEL=debug"),
            ("yaml", f'database:\n  host: {host}\n  {key}: "{value}"\n  pool: 5'),
            ("json", json.dumps({"service": "billing", key: value, "retries": 3}, indent=2)),
            ("python", f'client = Client(\n    host="{host}",\n    {key}="{value}",\n)'),
            ("log", f"{stamp} ERROR auth: login rejected for user=svc {key}={value} from {host}"),
        ]
    return [
        ("env", f"export {env_name}={value}"),
        ("json", json.dumps({"name": "deploy", "credentials": {"value": value}}, indent=2)),
        ("log", f"{stamp} WARN client: retrying with credential {value} (attempt 2)"),
        (
            "trace",
            "Traceback (most recent call last):\n"
            '  File "app/client.py", line 41, in connect\n'
            "    session.login(key)\n"
            f"ValueError: rejected credential '{value}'",
        ),
    ]


def _structured(rng: random.Random) -> list[Planted]:
    """Secrets whose form carries its own context: URLs, headers, connection strings, key files."""
    password = _password(rng).replace("#", "x").replace("%", "x").replace("^", "x")
    user = "svc_" + _draw(rng, string.ascii_lowercase, 5)
    basic = base64.b64encode(f"{user}:{password}".encode()).decode()
    key = _pem(rng, "RSA PRIVATE KEY")
    other = _pem(rng, "PRIVATE KEY")
    sas = _draw(rng, _ALNUM, 43) + "%3D"
    return [
        Planted("url_password", "url", (password,), f"DATABASE_URL=postgres://{user}:{password}@db.internal:5432/app"),
        Planted(
            "url_password",
            "log",
            (password,),
            f"2025-03-01 10:00:00 ERROR pool: cannot reach mongodb://{user}:{password}@mongo:27017/admin",
        ),
        Planted("basic_auth", "curl", (password,), f"curl -u {user}:{password} https://api.example.test/v1"),
        Planted(
            "basic_auth", "header", (basic,), f"GET /v1 HTTP/1.1\nHost: api.example.test\nAuthorization: Basic {basic}"
        ),
        Planted(
            "connection_string_password",
            "config",
            (password,),
            f"Server=tcp:sql.internal,1433;Database=app;User Id={user};Password={password};Encrypt=true",
        ),
        Planted("private_key", "pem", (key.splitlines()[1], key.splitlines()[-2]), f"id_rsa:\n{key}"),
        Planted(
            "private_key",
            "json",
            (other.splitlines()[1],),
            json.dumps({"type": "service_account", "private_key": other + "\n", "client_email": "x"}, indent=2),
        ),
        Planted(
            "azure_sas_token",
            "url",
            (sas,),
            f"https://store1.blob.core.windows.net/c/f.txt?sv=2022-11-02&ss=b&srt=o&sp=r&se=2030-01-01&sig={sas}",
        ),
    ]


_ZERO_WIDTH, _SOFT_HYPHEN, _RTL_OVERRIDE = "\u200b", "\u00ad", "\u202e"
_FULLWIDTH = str.maketrans({chr(code): chr(code + 0xFEE0) for code in range(0x21, 0x7F)})
_CYRILLIC = str.maketrans({"a": "\u0430", "o": "\u043e", "e": "\u0435"})


def _halves(value: str, rng: random.Random, mark: str) -> tuple[str, tuple[str, str]]:
    """``value`` with ``mark`` inside it, and its two visible halves (each must be gone once redacted)."""
    cut = rng.randrange(8, len(value) - 7)
    return value[:cut] + mark + value[cut:], (value[:cut], value[cut:])


def _obfuscated(rng: random.Random) -> list[Planted]:
    """Secrets disguised or shaped to slip past a pattern: invisible and look-alike characters, a column
    header, base64, split lines, an altered PEM header, pgpass and htpasswd, a bare key on its line."""
    secret, password = _draw(rng, _BASE64, 40), _password(rng)
    key_id = "AKIA" + _draw(rng, string.ascii_uppercase + "234567", 16)
    token = "ghp_" + _draw(rng, _ALNUM, 36)
    hidden_key, key_parts = _halves(key_id, rng, _ZERO_WIDTH)
    hidden_token, token_parts = _halves(token, rng, _SOFT_HYPHEN)
    wrapped = base64.b64encode(f"aws_secret_access_key={secret}\n".encode()).decode()
    pem = _pem(rng, "RSA PRIVATE KEY").replace("-----BEGIN RSA PRIVATE KEY-----", "----BEGIN RSA PRIVATE  KEY----")
    user = "svc_" + _draw(rng, string.ascii_lowercase, 5)
    bcrypt = "$2y$10$" + _draw(rng, _ALNUM + "./", 53)
    cut = rng.randrange(6, 14)
    return [
        Planted(
            "secret",
            "credentials.csv",
            (secret,),
            f"User name,Password,Access key ID,Secret access key,Console login link\n{user},,{key_id},{secret},"
            "https://console.example.test\n",
        ),
        Planted("aws_access_key_id", "zero-width space", key_parts, f"export AWS_ACCESS_KEY_ID={hidden_key}"),
        Planted("github_token", "soft hyphen", token_parts, f"GITHUB_TOKEN={hidden_token}"),
        Planted("password", "fullwidth name", (password,), f"{'password'.translate(_FULLWIDTH)}={password}"),
        Planted("password", "cyrillic look-alikes", (password,), f"db_{'password'.translate(_CYRILLIC)}: {password}"),
        Planted("password", "zero-width name", (password,), f"pass{_ZERO_WIDTH}word={password}"),
        Planted("password", "right-to-left override", (password,), f"{_RTL_OVERRIDE}password={password}"),
        Planted("base64_aws_secret_access_key", "base64", (wrapped,), f"data:\n  credentials: {wrapped}"),
        Planted("private_key", "altered pem header", (pem.splitlines()[1], pem.splitlines()[-2]), pem),
        Planted("pgpass_password", "pgpass", (password,), f"db.internal:5432:app:{user}:{password}"),
        Planted("password_hash", "htpasswd", (bcrypt,), f"{user}:{bcrypt}"),
        Planted("aws_access_key_id", "split lines", (key_id[:cut], key_id[cut:]), f"{key_id[:cut]}\n{key_id[cut:]}"),
        Planted("aws_secret_access_key", "bare line", (secret,), f"keys:\n{secret}\n"),
    ]


def planted_pastes(seed: int = 12) -> list[Planted]:
    """Every supported kind in each of its places, plus the structured ones; the same list for the same seed."""
    rng = random.Random(seed)
    planted = [
        Planted(kind, place, (value,), text)
        for kind, make in _MAKERS.items()
        for value in [make(rng)]
        for place, text in _places(kind, value, rng)
    ]
    return planted + _structured(rng) + _obfuscated(rng)
