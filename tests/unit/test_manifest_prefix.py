"""A control manifest's id prefix is the project's own: there is no default to inherit."""

from __future__ import annotations

import pytest

from vitrine.controls import ManifestError, ManifestExpectation


def test_the_prefix_must_be_stated():
    with pytest.raises(TypeError, match="prefix"):
        ManifestExpectation(count=3)  # type: ignore[call-arg]


@pytest.mark.parametrize("prefix", ["", "   "])
def test_a_blank_prefix_is_refused_with_a_sentence(prefix):
    with pytest.raises(ManifestError, match="needs a non-blank id prefix"):
        ManifestExpectation(count=3, prefix=prefix)


def test_ids_follow_the_stated_prefix():
    expectation = ManifestExpectation(count=12, prefix="AIR-")
    assert [expectation.expected_id(i) for i in (1, 12)] == ["AIR-01", "AIR-12"]
