"""``drawn``: a deterministic picture of the planned scene, painted by the sample's own drawing code.

The image expert lives here, beside the storybench sample whose painters and books it reuses, and
registers itself in :data:`omnieval.systems.experts.IMAGE_EXPERTS` as ``drawn`` when storybench is
imported; its config (:class:`~omnieval.systems.experts.DrawnConfig`) stays with the other experts'
configs, so orchestration suites validate as before.

It is not a generative model. It reads the image prompt's words and composes a page for one of the
four painters of :mod:`omnieval.benchmarks.storybench._sample._draw` (forest, sea, city, snow):

1. **setting**: the sample book whose vocabulary (character names, their descriptions, the topic,
   prop names) the prompt uses most; a tie goes to the first such book in the sample's order, and a
   prompt naming nothing known to a book chosen by the prompt's hash;
2. **time of day**: the first time word of the painter (``night``, ``dusk``, ``storm``...; with a few
   synonyms such as *sunset* or *moon*) in the prompt, else the book's first page's time;
3. **characters**: the book's characters the prompt names, placed where the book first shows them,
   with a face from the prompt's mood words (*happy*, *sad*, *angry*, *surprised*, *sleepy*);
4. **props**: the props the prompt names (a variant such as ``lantern_bright`` when its extra word,
   or a synonym, appears too), placed where the book first shows them, plus the props on at least
   half of the book's pages (its fixed setting).

So the same prompt always gives the same picture, and a prompt that names characters, a place and a
time gives a picture that shows them. Lineage and the report call it ``drawn`` for that reason.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any, ClassVar

from omnieval.systems.experts import IMAGE_EXPERTS, DrawnConfig, ExpertConfig, ImageExpert, ImageRequest

#: Synonyms of the painters' time-of-day keys (the keys themselves always match).
_TIME_WORDS: dict[str, tuple[str, ...]] = {
    "night": ("night", "midnight", "moon", "moonlight", "moonlit", "nighttime"),
    "dusk": ("dusk", "sunset", "twilight"),
    "evening": ("evening",),
    "morning": ("morning", "dawn", "sunrise"),
    "noon": ("noon", "midday"),
    "afternoon": ("afternoon",),
    "day": ("day", "daytime", "sunny", "sunshine"),
    "storm": ("storm", "stormy", "thunder", "lightning"),
    "rain": ("rain", "rainy", "raining", "drizzle"),
    "cloudy": ("cloudy", "clouds", "overcast", "grey"),
    "blizzard": ("blizzard", "snowstorm"),
}
_MOOD_WORDS: dict[str, tuple[str, ...]] = {
    "happy": ("happy", "smiling", "smile", "smiles", "joyful", "glad", "cheerful", "laughing", "delighted"),
    "sad": ("sad", "crying", "tearful", "unhappy", "lonely", "gloomy", "worried"),
    "angry": ("angry", "furious", "cross", "grumpy"),
    "surprised": ("surprised", "amazed", "astonished", "shocked", "startled"),
    "sleepy": ("sleepy", "asleep", "sleeping", "tired", "yawning"),
}
#: Words of a prop variant's suffix and their synonyms (``lantern_bright`` needs one of them).
_VARIANT_WORDS: dict[str, tuple[str, ...]] = {
    "bright": ("bright", "glowing", "glows", "shining", "blazing", "brightly"),
    "dim": ("dim", "dimming", "fading", "faint", "flickering"),
    "lit": ("lit", "glowing", "shining", "light", "lights", "beam"),
    "post": ("post", "lamp", "streetlamp", "lamppost"),
    "snow": ("snow", "snowy", "snowing", "snowflakes"),
}
_PROP_SYNONYMS: dict[str, tuple[str, ...]] = {
    "stream": ("stream", "river", "brook", "creek"),
    "oak": ("oak", "tree"),
    "pine": ("pine", "pines", "fir", "firs"),
    "mice": ("mice", "mouse"),
    "stone": ("stone", "stones", "rock", "pebble"),
    "waves": ("waves", "wave", "sea", "ocean"),
    "cloud": ("cloud", "clouds"),
    "puddle": ("puddle", "puddles"),
    "tracks": ("tracks", "footprints", "pawprints"),
    "stars": ("stars", "starry"),
    "aurora": ("aurora", "northern"),
    "snowstorm": ("snowstorm", "blizzard"),
    "rainbow": ("rainbow",),
}

_WORD = re.compile(r"[a-z]+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


@IMAGE_EXPERTS.register("drawn")
class DrawnImageExpert(ImageExpert[DrawnConfig]):
    """Composes a sample-style page from the prompt's words (see the module docstring)."""

    name: ClassVar[str] = "drawn"
    config_model: ClassVar[type[ExpertConfig]] = DrawnConfig
    runs_on: ClassVar[str] = "cpu"
    is_generative_model: ClassVar[bool] = False

    def describe(self) -> str:
        return (
            "drawn: not a generative model; composes a deterministic picture from the image prompt's "
            "words with the sample dataset's own drawing code (setting, time of day, named characters, "
            "their mood and named props)"
        )

    def compose(self, prompt: str) -> tuple[Any, Any, dict[str, Any]]:
        """The (book, page) to paint for ``prompt`` and what was matched (see the module docstring)."""
        from omnieval.benchmarks.storybench._sample._books import BOOKS, Actor, Page, Prop
        from omnieval.benchmarks.storybench._sample._draw import _GLOWING, _WEATHER, PAINTERS

        words = _words(prompt)
        digest = hashlib.sha256(prompt.encode()).hexdigest()

        def vocabulary(book: Any) -> set[str]:
            vocab = _words(book.topic)
            for c in book.characters:
                vocab |= _words(c.name) | _words(c.description)
            for page in book.pages:
                for p in page.props:
                    vocab |= set(p.kind.split("_")) | set(_PROP_SYNONYMS.get(p.kind, ()))
            return vocab - {"a", "an", "the", "and", "of", "with", "who", "in", "to", "her", "his", "its"}

        hits = [len(words & vocabulary(b)) for b in BOOKS]
        best = max(hits)
        book = BOOKS[hits.index(best)] if best > 0 else BOOKS[int(digest, 16) % len(BOOKS)]
        painter = PAINTERS[book.painter]

        time = book.pages[0].time
        for key in painter.skies:
            if words & ({key} | set(_TIME_WORDS.get(key, ()))):
                time = key
                break

        mood = next((m for m, syn in _MOOD_WORDS.items() if words & set(syn)), "calm")
        actors: list[Any] = []
        for character in book.characters:
            name = character.name
            if name.lower() not in words:
                continue
            first = next((a for page in book.pages for a in page.actors if a.name == name), None)
            base = first or Actor(name=name, x=256, y=420)
            pose = "stand" if base.pose not in ("fly",) else base.pose
            actors.append(base.model_copy(update={"mood": mood, "pose": pose}))

        first_prop: dict[str, Any] = {}
        counts: dict[str, int] = {}
        for page in book.pages:
            for p in page.props:
                first_prop.setdefault(p.kind, p)
            for kind in {p.kind for p in page.props}:
                counts[kind] = counts.get(kind, 0) + 1
        chosen: dict[str, Any] = {}
        for kind in sorted(first_prop, key=len):
            stem, *extra = kind.split("_")
            named = words & ({stem} | set(_PROP_SYNONYMS.get(kind, ())) | set(_PROP_SYNONYMS.get(stem, ())))
            if not named and kind not in ("light_snow",):
                continue
            if extra and not all(words & set(_VARIANT_WORDS.get(e, (e,))) for e in extra):
                continue
            chosen[stem] = first_prop[kind]  # longer (more specific) variants replace the base
        # The fixed setting: props on half the pages or more, except weather and lights, which
        # belong to a time of day or a moment and are drawn only when the prompt names them.
        transient = _WEATHER | _GLOWING
        setting = [
            first_prop[k] for k, n in counts.items() if n * 2 >= len(book.pages) and k not in transient
        ]
        props: list[Prop] = []
        for p in [*chosen.values(), *setting]:
            if all(p.kind.split("_")[0] != q.kind.split("_")[0] for q in props):
                props.append(p)
        order = list(first_prop)  # the book's drawing order (a lighthouse after its rock)
        props.sort(key=lambda p: order.index(p.kind))
        page = Page(
            key=f"drawn-{digest[:12]}", text=prompt, time=time, actors=tuple(actors), props=tuple(props)
        )
        facts = {
            "painter": book.painter,
            "book": book.key,
            "time": time,
            "characters": [a.name for a in actors],
            "mood": mood,
            "props": [p.kind for p in props],
        }
        return book, page, facts

    def render(self, request: ImageRequest, out: Path) -> dict[str, Any]:
        from omnieval.benchmarks.storybench._sample._draw import draw_page

        book, page, facts = self.compose(request.prompt)
        image = draw_page(book, page, size=self.config.size)
        out.parent.mkdir(parents=True, exist_ok=True)
        image.save(out, format="PNG")
        return {"drawn": facts}
