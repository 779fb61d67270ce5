"""Credentials disguised or shaped to slip past a pattern are still redacted, as the bytes received."""

from __future__ import annotations

import base64

import pytest

from organs.redaction import Redactor, find_secrets
from organs.redaction.normal import normal_form
from organs.stomach import ingest_paste
from organs.stomach.core.blocks.split import split_blocks
from organs.stomach.core.redact import redact_paste

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def redacted(text: str) -> tuple[str, set[str]]:
    out, counts = Redactor().redact(text)
    return out, {count.kind for count in counts}


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("key AKIA\u200bIOSFODNN7EXAMPLE in use", {"aws_access_key_id"}),
        (f"token {GITHUB[:10]}\u00ad{GITHUB[10:]}", {"github_token"}),
        ("\uff50\uff41\uff53\uff53\uff57\uff4f\uff52\uff44=Hunter2Secret", {"password"}),
        ("p\u0430ssword=Hunter2Secret", {"password"}),
        ("pass\u200bword=Hunter2Secret", {"password"}),
        ("\u202epassword=Hunter2Secret", {"password"}),
    ],
    ids=["zero-width in a key", "soft hyphen in a token", "fullwidth", "cyrillic a", "zero-width name", "rlo"],
)
def test_a_disguised_credential_is_matched_on_its_normal_form_and_the_bytes_received_are_replaced(
    text: str, kinds: set[str]
) -> None:
    out, found = redacted(text)
    assert found == kinds
    assert "Hunter2Secret" not in out and "EXAMPLE" not in out and GITHUB[10:] not in out


def test_a_word_wholly_in_cyrillic_is_left_as_it_is() -> None:
    text = "Пароль сервера: смотри журнал"
    assert normal_form(text).text == text and redacted(text) == (text, set())


def test_a_csv_column_named_like_a_secret_is_redacted_under_its_header() -> None:
    text = f"User name,Password,Access key ID,Secret access key\nalice,,AKIAIOSFODNN7EXAMPLE,{SECRET}\n"
    out, found = redacted(text)
    assert found == {"aws_access_key_id", "secret"} and SECRET not in out


def test_a_tsv_password_column_is_redacted() -> None:
    out, found = redacted("host\tuser\tpassword\ndb1\tsvc\tS3cr3tValue!\n")
    assert found == {"secret"} and "S3cr3tValue!" not in out


def test_a_table_without_a_secret_column_is_left_alone() -> None:
    text = "name,key id,region\nalice,AK12,eu-west-1\n"
    assert redacted(text) == (text, set())


def test_base64_wrapped_credential_is_redacted_whole() -> None:
    wrapped = base64.b64encode(f"aws_secret_access_key={SECRET}".encode()).decode()
    out, found = redacted(f"config: {wrapped}")
    assert found == {"base64_aws_secret_access_key"} and wrapped not in out


def test_base64_of_ordinary_text_is_left_alone() -> None:
    wrapped = base64.b64encode(b"just an ordinary sentence with no credential").decode()
    assert redacted(f"blob {wrapped}") == (f"blob {wrapped}", set())


def test_a_pem_block_with_an_altered_header_is_redacted_to_its_footer_only() -> None:
    text = "-----BEGIN RSA PRIVATE  KEY----\nMIIEowIBAAKCAQEA1234567890abcdef\n-----END RSA PRIVATE  KEY----\nnext line"
    out, found = redacted(text)
    assert found == {"private_key"} and out.endswith("›\nnext line") and "MIIE" not in out


def test_a_pgpass_line_loses_its_password() -> None:
    out, found = redacted("db.internal:5432:app:svc:S3cretPgPass!")
    assert found == {"pgpass_password"} and out == "db.internal:5432:app:svc:‹secret:pgpass_password#1›"


def test_an_ipv6_address_is_not_a_pgpass_line() -> None:
    assert redacted("fe80:0:0:0:204:61ff:fe9d:f156") == ("fe80:0:0:0:204:61ff:fe9d:f156", set())


def test_an_htpasswd_line_loses_its_hash() -> None:
    out, found = redacted("admin:$apr1$abcdefgh$0123456789ABCDEFabcdef")
    assert found == {"password_hash"} and "$apr1$" not in out


@pytest.mark.parametrize(
    "text",
    ["AKIAIOSFOD\nNN7EXAMPLE rest", f"{GITHUB[:20]}\n{GITHUB[20:]}\nnext"],
    ids=["aws key", "github token"],
)
def test_a_key_split_over_two_lines_is_redacted_in_both(text: str) -> None:
    out, found = redacted(text)
    assert len(found) == 1 and out.count("‹secret:") == 2


def test_a_split_that_does_not_make_the_keys_length_is_left_alone() -> None:
    assert redacted("AKIAIOSFOD\nNN7 rest") == ("AKIAIOSFOD\nNN7 rest", set())


def test_a_bare_aws_secret_on_its_own_line_is_redacted_and_never_an_anchor() -> None:
    bundle = ingest_paste(f"Why does the deploy fail?\n\n{SECRET}\n\n./src/app.py\n")
    assert bundle.query.anchors == ("./src/app.py",)
    assert all(SECRET not in (frame.content or "") for frame in bundle.provider.frames)
    assert find_secrets(SECRET) and not find_secrets("a" * 40) and not find_secrets("0123456789abcdef" * 2 + "01234567")


def test_one_value_gets_one_placeholder_in_every_block_of_a_paste() -> None:
    text = f"[default]\naws_secret_access_key = {SECRET}\n\nthe key {SECRET} was used by the job\n"
    redaction = redact_paste(text, split_blocks(text))
    assert SECRET not in redaction.text
    assert redaction.text.count("‹secret:aws_secret_access_key#1›") == 2
