"""Credentials found by their shape where the search reads the text in place, a piece at a time: past the first
piece of a large paste, and where lower-casing would move the text's positions."""

from __future__ import annotations

import base64

from organs.redaction import Redactor, find_secrets
from organs.text_views import PIECE_CHARS

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def test_a_header_is_read_where_lower_casing_changes_the_texts_length() -> None:
    # "İ" lower-cases to two characters, so a lower-cased copy's positions are not the text's.
    out, counts = Redactor().redact("İstanbul office\nhost\tuser\tpassword\ndb1\tsvc\tS3cr3tValue!\n")
    assert {count.kind for count in counts} == {"secret"}
    assert "S3cr3tValue!" not in out and out.startswith("İstanbul office\nhost\tuser\tpassword\ndb1\tsvc\t‹")


def test_every_shape_is_found_at_its_place_past_the_first_piece_of_a_large_paste() -> None:
    wrapped = base64.b64encode(f"aws_secret_access_key={SECRET}".encode()).decode()
    planted = {
        "secret": ("host\tuser\tpassword\ndb1\tsvc\t", "S3cr3tValue!"),
        "base64_aws_secret_access_key": ("config: ", wrapped),
        "pgpass_password": ("db.internal:5432:app:svc:", "S3cretPgPass!"),
        "aws_secret_access_key": ("", SECRET),
    }
    filler = "".join(f"2026-11-29T10:00:00Z INFO job {n} done\n" for n in range(PIECE_CHARS // 16))
    text = filler + "".join(f"{before}{value}\n{filler}" for before, value in planted.values())
    assert len(text) > 4 * PIECE_CHARS
    found = {hit.kind: text[hit.start : hit.end] for hit in find_secrets(text)}
    assert found == {kind: value for kind, (_, value) in planted.items()}


def test_a_shape_on_the_first_line_is_found_at_its_place() -> None:
    for line, value in ((f"{SECRET}\nnext", SECRET), ("db.internal:5432:app:svc:S3cretPgPass!\nnext", "S3cretPgPass!")):
        assert [line[hit.start : hit.end] for hit in find_secrets(line)] == [value]
