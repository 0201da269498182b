"""The sample's books file (``_sample/books.yaml``): read into typed models, wrong files refused by field."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest
import yaml

from omnieval.benchmarks.storybench._sample import BOOKS, BOOKS_FILE, load_books
from omnieval.benchmarks.storybench._sample import _books as books_module
from omnieval.errors import ConfigError


def _raw() -> dict:  # type: ignore[type-arg]
    return yaml.safe_load(BOOKS_FILE.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _write(tmp_path: Path, raw: object) -> Path:
    path = tmp_path / "books.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def test_the_shipped_file_is_the_books() -> None:
    assert load_books() == BOOKS
    assert [f"{b.source}/{b.key}" for b in BOOKS] == [
        "omnieval-fables/pip-and-the-brass-lantern",
        "omnieval-fables/marta-of-gull-rock",
        "omnieval-adventures/bolt-in-brick-city",
        "omnieval-adventures/lena-and-the-northern-lights",
    ]
    # Unset drawing fields take the documented defaults.
    pip = BOOKS[0].pages[0].actors[0]
    assert (pip.scale, pip.mood, pip.pose, pip.flip) == (1.0, "calm", "stand", False)
    assert BOOKS[0].metadata()["characters"][0] == {
        "name": "Pip",
        "description": "a small orange fox with a white-tipped tail; curious and brave",
    }


def test_the_file_ships_with_the_package() -> None:
    assert BOOKS_FILE.name == "books.yaml" and BOOKS_FILE.parent == Path(books_module.__file__).parent


def test_a_round_trip_through_yaml_is_the_same_books(tmp_path: Path) -> None:
    assert load_books(_write(tmp_path, _raw())) == BOOKS


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        (lambda r: r["books"][1].pop("painter"), "books.1.painter", "Field required"),
        (
            lambda r: r["books"][0]["pages"][2]["actors"][0].update(colour="red"),
            "books.0.pages.2.actors.0.colour",
            "Extra inputs are not permitted",
        ),
        (
            lambda r: r["books"][3]["steps"][0].update(emotion="bored"),
            "books.3.steps.0.emotion",
            "'bored' is not one of neutral, happy, sad, angry",
        ),
        (
            lambda r: r["books"][0]["steps"][1]["characters"][0].pop("speech_intent"),
            "books.0.steps.1.characters.0.speech_intent",
            "Field required",
        ),
        (
            lambda r: r["books"][2]["pages"][0]["props"][0].update(x="left"),
            "books.2.pages.0.props.0.x",
            "valid integer",
        ),
        (lambda r: r["books"][0]["steps"].pop(), "books.0", "6 pages need 5 steps, not 4"),
        (lambda r: r["books"].append(r["books"][0]), "(top level)", "listed twice: omnieval-fables/pip"),
    ],
)
def test_a_wrong_field_is_refused_naming_the_file_and_field(
    tmp_path: Path,
    edit: object,
    field: str,
    message: str,
) -> None:
    raw = _raw()
    edit(raw)  # type: ignore[operator]
    path = _write(tmp_path, raw)
    with pytest.raises(ConfigError) as info:
        load_books(path)
    text = str(info.value)
    assert text.startswith(f"{path}: invalid sample books")
    line = next((ln for ln in text.splitlines() if ln.startswith(f"  - {field}:")), None)
    assert line is not None and message in line, text
    assert info.value.exit_code == 2


def test_a_file_that_is_not_yaml_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "books.yaml"
    path.write_text("books: [unclosed\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{path}: cannot read the sample books"):
        load_books(path)
    with pytest.raises(ConfigError, match="cannot read the sample books"):
        load_books(tmp_path / "absent.yaml")


def test_docstring_examples() -> None:
    failures, tried = doctest.testmod(books_module)
    assert tried >= 2 and failures == 0
