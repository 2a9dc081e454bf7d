"""Error hints: every error type has a title and a hint a person can act on (pure)."""

from __future__ import annotations

import pytest

from fredica_app.views import error_hints
from fredica_app.views.error_hints import (
    CONTEXT,
    GENERIC_HINT,
    GENERIC_TITLE,
    HINTS,
    QT_TRANSLATE_NOOP,
    TITLES,
    hint,
    is_known,
    title,
)
from workers.states import ErrorType


@pytest.mark.parametrize("error_type", list(ErrorType))
def test_every_error_type_has_its_own_title_and_hint(error_type: ErrorType) -> None:
    assert is_known(error_type)
    assert is_known(error_type.value)  # the stored spelling is a plain string
    assert title(error_type.value) == TITLES[error_type] != GENERIC_TITLE
    text = hint(error_type.value)
    assert text == HINTS[error_type] != GENERIC_HINT
    # A sentence or two, for a person: capitalised, ends with a full stop, no raw type name.
    assert text[0].isupper() and text.endswith(".")
    assert 40 < len(text) < 320
    assert error_type.value not in text


def test_the_tables_cover_exactly_the_error_types() -> None:
    assert set(HINTS) == set(TITLES) == set(ErrorType)


def test_hints_and_titles_are_all_different() -> None:
    assert len(set(HINTS.values())) == len(HINTS)
    assert len(set(TITLES.values())) == len(TITLES)


@pytest.mark.parametrize("error_type", [None, "", "SOMETHING_NEWER", "payload_error"])
def test_an_unknown_or_missing_type_gets_the_generic_texts(error_type: str | None) -> None:
    assert not is_known(error_type)
    assert title(error_type) == GENERIC_TITLE
    assert hint(error_type) == GENERIC_HINT


def test_the_marker_returns_the_text_as_it_is() -> None:
    """``lupdate`` extracts the texts from these calls; at run time they are the English text,
    translated by the GUI under :data:`CONTEXT`."""
    assert CONTEXT == "ErrorHints"
    assert QT_TRANSLATE_NOOP(CONTEXT, "Disk full") == "Disk full"
    assert error_hints.TITLES[ErrorType.NO_SPACE] == "Disk full"
