"""The organ table is the one place organs are named; what is derived from it agrees with it."""

from __future__ import annotations

import pytest

from envelopes.subjects import Subjects
from organs.anatomy import BORDER, ORGAN_NAMES, ORGANS, organ_named
from organs.asyncapi import asyncapi_document
from organs.operations.security import permissions


def test_the_border_is_border_on_the_bus_and_ada_border_in_envelopes() -> None:
    subjects = Subjects("acme")
    assert BORDER.dead_letter_subject(subjects) == "acme.dlq.border"
    assert BORDER.nats_user == "border"
    assert BORDER.wire_name == "ada_border"
    assert organ_named("ada_border") is organ_named("border") is BORDER
    with pytest.raises(KeyError):
        organ_named("brain")


def test_every_subject_the_table_names_exists_and_every_name_is_unique() -> None:
    subjects = Subjects()
    for organ in ORGANS:
        assert set(organ.input_subjects(subjects)) <= set(subjects.tract_subjects)
        assert set(organ.output_subjects(subjects)) <= set(subjects.tract_subjects)
    durables = [durable for organ in ORGANS for durable in organ.durables]
    assert len(set(durables)) == len(durables)
    assert len({organ.wire_name for organ in ORGANS}) == len(ORGANS) == len(set(ORGAN_NAMES))


def test_each_organ_user_may_publish_exactly_its_outputs_and_dead_letters_of_the_tract() -> None:
    subjects = Subjects()
    users = permissions(subjects)
    tract = set(subjects.tract_subjects) | {organ.dead_letter_subject(subjects) for organ in ORGANS}
    for organ in ORGANS:
        allowed = set(users[organ.nats_user]["publish"]) & tract
        # And the rejection of an input it dead-letters, so that the input's host hears of it (on its sealed
        # sender's own outcome subject too).
        dead_letter_outcome = {organ.dead_letter_subject(subjects), subjects.border_rejected, subjects.outcomes}
        assert allowed == {*organ.output_subjects(subjects), *dead_letter_outcome}


def test_the_asyncapi_document_lists_the_dead_letter_subjects_by_bus_name() -> None:
    channel = asyncapi_document()["channels"]["deadLetters"]
    assert channel["parameters"]["organ"]["enum"] == list(ORGAN_NAMES)
