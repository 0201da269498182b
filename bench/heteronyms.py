"""Heteronym readings: does the pronunciation decision pick the reading that was spoken?

Renders both readings of every heteronym in ``omnieval.benchmarks.acbench._heteronyms`` with espeak-ng
(the word forced to the reading through ``[[phonemes]]``) in several voices and rates, prepares the
audio as the acbench metric does (mono, 16 kHz, untrimmed; ``--trimmed`` trims at 30 dB first), and runs
:func:`omnieval.backends.phones.pronunciation_decision`. Prints the share of renderings whose own
reading wins, overall, per voice and per word, the PER the benchmark would report against the
rendered and the other reading, and, for contrast, the PER of pocketsphinx's free phone loop on the
heteronym's aligned segment (the old recognizer, which cannot separate the readings).

Run: ``python -m bench heteronyms`` or ``python bench/heteronyms.py [--quick] [--trimmed]``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

# (espeak-ng voice, words per minute)
VOICES: tuple[tuple[str, int], ...] = (
    ("en-us", 175),
    ("en-us+f3", 175),
    ("en-us+m3", 175),
    ("en-gb", 175),
    ("en-us", 140),
    ("en-us", 220),
)


def _share(hits: list[bool]) -> str:
    return f"{sum(hits)}/{len(hits)} = {sum(hits) / len(hits):.1%}"


def run(voices: tuple[tuple[str, int], ...] = VOICES, *, trimmed: bool = False) -> dict[str, Any]:
    """Measure the decision on every heteronym, reading and voice; print and return the figures."""
    from omnieval.audio import espeak_wav, prepare_speech
    from omnieval.backends.phones import load_phone_recognizer, pronunciation_decision, reading_per
    from omnieval.benchmarks.acbench._heteronyms import HETERONYMS, espeak_markup
    from omnieval.metrics.functional.acoustic import phone_error_rate

    loop = load_phone_recognizer("pocketsphinx")
    by_word: dict[str, list[bool]] = defaultdict(list)
    by_voice: dict[str, list[bool]] = defaultdict(list)
    per_lower: list[bool] = []
    loop_lower: list[bool] = []
    misses: list[str] = []
    seconds = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for n, (voice, wpm) in enumerate(voices):
            label = f"{voice}@{wpm}"
            for entry in HETERONYMS:
                phones = entry.arpabet()
                for key, reading in entry.readings.items():
                    other = next(k for k in entry.readings if k != key)
                    text = espeak_markup(reading.example_script, entry.word, reading)
                    wav = espeak_wav(
                        text, Path(tmp) / f"{n}-{entry.word}-{key}.wav", voice=voice, rate_wpm=wpm
                    )
                    prepared = prepare_speech(wav)
                    audio = prepared.trimmed if trimmed else prepared.wave
                    started = time.perf_counter()
                    decision = pronunciation_decision(audio, reading.example_script, entry.word, phones)
                    seconds += time.perf_counter() - started
                    hit = decision.chosen == key
                    by_word[entry.word].append(hit)
                    by_voice[label].append(hit)
                    own, alt = reading_per(decision, key, phones), reading_per(decision, other, phones)
                    per_lower.append(own < alt)
                    free: list[str] = []
                    if decision.segment_s is not None:
                        # 50 ms either side: the phone loop needs a little context at the edges.
                        lo = max(0, int((decision.segment_s[0] - 0.05) * 16_000))
                        hi = int((decision.segment_s[1] + 0.05) * 16_000)
                        free = loop.recognize(audio[lo:hi])
                    loop_own = phone_error_rate(phones[key], free)
                    loop_alt = phone_error_rate(phones[other], free)
                    loop_lower.append(loop_own < loop_alt)
                    print(
                        f"  {label:<14} {entry.word:<8} {key:<9} -> {decision.chosen or '-':<9} "
                        f"margin {decision.margin:6.2f}  PER own/other {own:.2f}/{alt:.2f}  "
                        f"phone-loop {' '.join(free) or '-'} PER {loop_own:.2f}/{loop_alt:.2f}",
                        flush=True,
                    )
                    if not hit:
                        misses.append(f"{label} {entry.word}:{key}")
    hits = [h for v in by_word.values() for h in v]
    print(f"right reading wins: {_share(hits)}")
    print(f"reading PER lower against the rendered reading: {_share(per_lower)}")
    print(f"phone-loop PER on the segment lower against the rendered reading: {_share(loop_lower)}")
    for label, v in by_voice.items():
        print(f"  voice {label:<14} {_share(v)}")
    for word, v in by_word.items():
        print(f"  word  {word:<14} {_share(v)}")
    print(f"decision time: {seconds / len(hits):.2f} s per clip (CPU)")
    return {
        "accuracy": sum(hits) / len(hits),
        "per_lower_share": sum(per_lower) / len(per_lower),
        "phone_loop_per_lower_share": sum(loop_lower) / len(loop_lower),
        "by_voice": {k: sum(v) / len(v) for k, v in by_voice.items()},
        "by_word": {k: sum(v) / len(v) for k, v in by_word.items()},
        "seconds_per_clip": seconds / len(hits),
        "misses": misses,
    }


if __name__ == "__main__":
    run(VOICES[:1] if "--quick" in sys.argv[1:] else VOICES, trimmed="--trimmed" in sys.argv[1:])
