"""Illustrations for the sample books, drawn with PIL from the page descriptions in ``books.yaml``.

Every book has one painter: a fixed palette and setting, and characters drawn by the same routine on
every page (same shapes, same colours), so a character is recognisable from page to page. Pages
differ by time of day, placement, mood and props. Drawing happens on a 512 x 512 RGBA canvas that is
downsampled to the output size, which smooths the edges. Randomness (stars, windows, snow) comes from
generators seeded by the book and page keys, so the pictures are identical on every run.
"""

from __future__ import annotations

import math
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import ClassVar

from PIL import Image, ImageDraw

from omnieval.benchmarks._sample_media import Color, Pen, Point
from omnieval.benchmarks.storybench._sample._books import Actor, Book, Page, Prop

CANVAS = 512

#: Props drawn after the darkening overlay of night scenes, so they glow.
_GLOWING = {"lantern_bright", "lamp_post_lit", "beam", "lighthouse_lit", "aurora", "stars"}
#: Props that are weather drawn over everything in ``finish``, not objects in the scene.
_WEATHER = {"rain", "snowstorm", "light_snow"}
#: Brightness of a light prop per variant suffix: 1 as drawn, above 1 glowing.
_BRIGHTNESS = {"dim": 0.45, "bright": 1.5, "lit": 1.5}
#: Times of day that get a darkening overlay over everything drawn before the glowing props.
_DARK = {
    "night": (10, 20, 60, 110),
    "storm": (15, 20, 35, 80),
    "evening": (40, 20, 70, 60),
    "dusk": (60, 30, 40, 30),
}


def face(pen: Pen, cx: float, cy: float, r: float, mood: str, eye: Color = (30, 30, 30)) -> None:
    """Eyes and mouth on a round face of radius ``r`` centred at offset (cx, cy)."""
    ex, ey = r * 0.38, cy - r * 0.12
    er = max(2.0, r * 0.12)
    if mood == "sleepy":
        pen.line([(cx - ex - er, ey), (cx - ex + er, ey)], eye, 2)
        pen.line([(cx + ex - er, ey), (cx + ex + er, ey)], eye, 2)
    else:
        pen.circle(cx - ex, ey, er, eye)
        pen.circle(cx + ex, ey, er, eye)
    my = cy + r * 0.4
    dark = (60, 20, 20)
    if mood == "happy":
        pen.arc(cx, my - r * 0.25, r * 0.35, 20, 160, dark, 3)
    elif mood == "sad":
        pen.arc(cx, my + r * 0.2, r * 0.3, 200, 340, dark, 3)
        pen.line([(cx - ex - er, ey - er * 2.2), (cx - ex + er, ey - er * 1.6)], eye, 2)
        pen.line([(cx + ex + er, ey - er * 2.2), (cx + ex - er, ey - er * 1.6)], eye, 2)
    elif mood == "angry":
        pen.line([(cx - r * 0.25, my), (cx + r * 0.25, my)], dark, 3)
        pen.line([(cx - ex - er, ey - er * 1.6), (cx - ex + er, ey - er * 2.4)], eye, 3)
        pen.line([(cx + ex + er, ey - er * 1.6), (cx + ex - er, ey - er * 2.4)], eye, 3)
    elif mood == "surprised":
        pen.ellipse(cx, my, r * 0.12, r * 0.16, dark)
    else:
        pen.line([(cx - r * 0.18, my), (cx + r * 0.18, my)], dark, 2)


class Painter(ABC):
    """Shared machinery: sky, overlays, glows; subclasses add the book's setting and cast."""

    skies: ClassVar[dict[str, tuple[Color, Color]]] = {}
    #: (number of streaks, colour) of rain.
    rain_style: ClassVar[tuple[int, Color]] = (140, (200, 215, 235))

    def __init__(self, book: Book, page: Page) -> None:
        self.book = book
        self.page = page
        self.rng = random.Random(f"{book.source}/{book.key}/{page.key}")
        self.book_rng = random.Random(f"{book.source}/{book.key}")
        self.img = Image.new("RGBA", (CANVAS, CANVAS), (0, 0, 0, 255))
        self.d = ImageDraw.Draw(self.img)

    # -- the page -----------------------------------------------------------------------------
    def paint(self) -> Image.Image:
        top, bottom = self.skies[self.page.time]
        self.gradient(top, bottom, 0, CANVAS)
        self.background()
        for prop in self.page.props:
            if prop.kind not in _GLOWING:
                self.prop(prop)
        for actor in sorted(self.page.actors, key=lambda a: a.y):
            self.actor(actor)
        if self.page.time in _DARK:
            self.overlay(_DARK[self.page.time])
        for prop in self.page.props:
            if prop.kind in _GLOWING:
                self.prop(prop)
        self.finish()
        return self.img

    @abstractmethod
    def background(self) -> None:
        """The book's fixed setting (ground, buildings, sea...) over the sky."""

    def finish(self) -> None:
        """Effects drawn over everything: rain when the page has a ``rain`` prop."""
        if any(p.kind == "rain" for p in self.page.props):
            self.rain(*self.rain_style)

    def prop(self, prop: Prop) -> None:
        if prop.kind in _WEATHER:
            return  # drawn by finish(), over the characters
        # A light's variant (``lantern_dim``, ``lamp_post_lit``) is its routine at another brightness.
        kind, _, variant = prop.kind.rpartition("_")
        if variant not in _BRIGHTNESS:
            kind, variant = prop.kind, ""
        method: Callable[..., None] | None = getattr(self, f"prop_{kind}", None)
        if method is None:
            raise ValueError(f"{type(self).__name__} cannot draw prop {prop.kind!r}")
        # Every routine gets a pen anchored at the prop (scene-wide props draw on ``self.d`` instead).
        pen = self.pen(prop.x, prop.y, prop.scale)
        method(prop, pen, _BRIGHTNESS[variant]) if variant else method(prop, pen)

    def actor(self, actor: Actor) -> None:
        method: Callable[[Actor, Pen], None] | None = getattr(self, f"actor_{actor.name.lower()}", None)
        if method is None:
            raise ValueError(f"{type(self).__name__} cannot draw character {actor.name!r}")
        method(actor, self.pen(actor.x, actor.y, actor.scale, actor.flip))

    def pen(self, x: float, y: float, s: float = 1.0, flip: bool = False) -> Pen:
        return Pen(self.d, x, y, s, flip)

    # -- helpers ------------------------------------------------------------------------------
    def gradient(self, top: Color, bottom: Color, y0: int, y1: int) -> None:
        for y in range(y0, y1):
            t = (y - y0) / max(1, y1 - y0 - 1)
            color = tuple(round(a + (b - a) * t) for a, b in zip(top[:3], bottom[:3], strict=True))
            self.d.line((0, y, CANVAS, y), fill=color)

    def overlay(self, rgba: tuple[int, int, int, int]) -> None:
        self.img.alpha_composite(Image.new("RGBA", self.img.size, rgba))

    def glow(self, cx: float, cy: float, r: float, color: tuple[int, int, int], strength: int = 120) -> None:
        layer = Image.new("RGBA", self.img.size, (0, 0, 0, 0))
        ld = ImageDraw.Draw(layer)
        steps = 8
        for i in range(steps):
            rr = r * (1 - i / steps)
            alpha = int(strength * (i + 1) / steps / 2)
            ld.ellipse((cx - rr, cy - rr, cx + rr, cy + rr), fill=(*color, alpha))
        self.img.alpha_composite(layer)

    def translucent_polygon(self, points: Sequence[Point], rgba: tuple[int, int, int, int]) -> None:
        layer = Image.new("RGBA", self.img.size, (0, 0, 0, 0))
        ImageDraw.Draw(layer).polygon(list(points), fill=rgba)
        self.img.alpha_composite(layer)

    def sun(self, x: float, y: float, r: float, color: Color = (255, 226, 110)) -> None:
        self.d.ellipse((x - r, y - r, x + r, y + r), fill=color)

    def stars(self, n: int, y_max: int) -> None:
        for _ in range(n):
            x, y = self.rng.uniform(0, CANVAS), self.rng.uniform(0, y_max)
            r = self.rng.choice((1.5, 2.0, 2.5, 3.0))
            self.d.ellipse((x - r, y - r, x + r, y + r), fill=(255, 250, 220))

    def rain(self, n: int = 140, color: Color = (200, 215, 235)) -> None:
        for _ in range(n):
            x, y = self.rng.uniform(-40, CANVAS), self.rng.uniform(0, CANVAS)
            self.d.line((x, y, x + 8, y + 26), fill=color, width=2)


class ForestPainter(Painter):
    """Pip and Hazel: green forest, oak, stream; orange fox, brown owl."""

    skies: ClassVar[dict[str, tuple[Color, Color]]] = {
        "morning": ((190, 228, 255), (255, 242, 201)),
        "noon": ((142, 203, 255), (224, 244, 255)),
        "afternoon": ((159, 211, 255), (255, 233, 168)),
        "dusk": ((255, 140, 70), (255, 214, 122)),
        "night": ((11, 26, 58), (36, 56, 107)),
    }

    def background(self) -> None:
        t = self.page.time
        if t in ("morning", "noon", "afternoon"):
            self.sun(430 if t != "afternoon" else 90, 80, 34)
        if t == "dusk":
            self.sun(256, 300, 60, (255, 120, 60))
        if t == "night":
            self.stars(50, 250)
            self.d.ellipse((400, 50, 450, 100), fill=(250, 245, 215))
        # The same tree line on every page: a seeded generator per book, not per page.
        rng = random.Random(f"{self.book.key}/treeline")
        for i in range(14):
            x = i * 40 + rng.uniform(-10, 10)
            h = rng.uniform(60, 110)
            self.d.ellipse((x - 40, 300 - h, x + 40, 330), fill=(46, 110, 62))
        self.d.rectangle((0, 320, CANVAS, CANVAS), fill=(111, 181, 67))
        self.d.ellipse((-100, 300, 250, 360), fill=(111, 181, 67))
        self.d.ellipse((260, 305, 640, 365), fill=(111, 181, 67))
        for _ in range(40):
            x, y = self.rng.uniform(0, CANVAS), self.rng.uniform(340, CANVAS)
            self.d.line((x, y, x + 3, y - 10), fill=(80, 150, 50), width=2)

    def prop_oak(self, p: Prop, pen: Pen) -> None:
        pen.rect((-22, -230, 22, 0), (110, 72, 40))
        pen.line([(0, -170), (60, -215)], (110, 72, 40), 14)
        for dx, dy, r in ((-55, -250, 60), (30, -290, 70), (70, -230, 55), (-10, -220, 60)):
            pen.circle(dx, dy, r, (38, 120, 52))

    def prop_bush(self, p: Prop, pen: Pen) -> None:
        for dx, r in ((-30, 30), (0, 40), (32, 28)):
            pen.circle(dx, -r * 0.8, r, (55, 140, 60))

    def prop_mushroom(self, p: Prop, pen: Pen) -> None:
        pen.rect((-7, -28, 7, 0), (245, 235, 220))
        pen.poly([(-26, -24), (26, -24), (18, -42), (0, -50), (-18, -42)], (210, 40, 40))
        for dx, dy in ((-10, -36), (8, -40), (0, -30)):
            pen.circle(dx, dy, 3.5, (255, 255, 255))

    def prop_lantern(self, p: Prop, pen: Pen, flame: float = 1.0) -> None:
        if flame > 1:
            self.glow(p.x, p.y - 20 * p.scale, 120, (255, 210, 90), 200)
        pen.rect((-15, -42, 15, 0), (181, 140, 60))
        pen.rect((-11, -38, 11, -5), (255, 240, 190))
        pen.line([(-10, -42), (0, -56), (10, -42)], (140, 100, 40), 3)
        pen.ellipse(0, -18, 5 * flame, 10 * flame, (255, 160, 30))

    def prop_stream(self, p: Prop, pen: Pen) -> None:
        pts_top = [(x, 455 + 18 * math.sin(x / 60)) for x in range(0, CANVAS + 8, 8)]
        pts_bot = [(x, 500 + 14 * math.sin(x / 50 + 1)) for x in range(CANVAS, -8, -8)]
        self.d.polygon(pts_top + pts_bot, fill=(70, 150, 220))
        for x in range(20, CANVAS, 70):
            self.d.line((x, 478, x + 25, 476), fill=(200, 230, 255), width=3)

    def prop_stone(self, p: Prop, pen: Pen) -> None:
        pen.ellipse(0, -12, 45, 16, (140, 140, 150))

    def prop_mice(self, p: Prop, pen: Pen) -> None:
        for i in range(3):
            mouse = self.pen(p.x + i * 22, p.y - (i % 2) * 6, 0.8)
            mouse.ellipse(0, -8, 10, 7, (150, 140, 135))
            mouse.circle(9, -13, 5, (150, 140, 135))
            mouse.circle(9, -19, 3, (210, 160, 160))

    def actor_pip(self, a: Actor, pen: Pen) -> None:
        orange, dark, white = (232, 116, 42), (180, 80, 30), (250, 245, 235)
        pen.poly([(-55, -55), (-105, -95), (-125, -70), (-95, -45)], orange)
        pen.circle(-120, -88, 15, white)
        for dx in (-35, -15, 20, 38):
            pen.rect((dx - 5, -30, dx + 5, 0), dark)
        pen.ellipse(0, -48, 58, 30, orange)
        pen.ellipse(10, -40, 30, 16, white)
        pen.poly([(30, -110), (38, -148), (55, -115)], orange)
        pen.poly([(65, -115), (82, -148), (88, -108)], orange)
        pen.circle(58, -95, 32, orange)
        pen.ellipse(58, -80, 18, 14, white)
        pen.circle(58, -86, 4, (30, 30, 30))
        face(pen, 58, -97, 30, a.mood)

    def actor_hazel(self, a: Actor, pen: Pen) -> None:
        brown, belly = (138, 90, 43), (217, 179, 140)
        if a.pose == "fly":
            pen.poly([(-20, -60), (-95, -95), (-70, -45)], brown)
            pen.poly([(20, -60), (95, -95), (70, -45)], brown)
        pen.ellipse(0, -50, 38, 50, brown)
        pen.ellipse(0, -35, 24, 30, belly)
        pen.poly([(-30, -88), (-22, -112), (-10, -92)], brown)
        pen.poly([(30, -88), (22, -112), (10, -92)], brown)
        for ex in (-15, 15):
            pen.circle(ex, -72, 13, (242, 193, 46))
            if a.mood == "calm" and self.page.key == "p03":
                pen.line([(ex - 9, -72), (ex + 9, -72)], (40, 25, 10), 3)
            else:
                pen.circle(ex, -72, 6, (20, 20, 20))
        pen.poly([(-5, -62), (5, -62), (0, -52)], (230, 140, 40))
        if a.mood == "happy":
            pen.arc(0, -56, 10, 30, 150, (70, 40, 20), 2)


class SeaPainter(Painter):
    """Marta and Gus: rock, red-and-white lighthouse, sea; yellow raincoat, white gull."""

    skies: ClassVar[dict[str, tuple[Color, Color]]] = {
        "morning": ((159, 216, 255), (232, 247, 255)),
        "cloudy": ((141, 153, 166), (198, 204, 211)),
        "storm": ((27, 34, 48), (57, 70, 90)),
    }
    rain_style = (180, (150, 170, 200))

    def background(self) -> None:
        t = self.page.time
        if t == "morning":
            self.sun(80, 80, 36)
        sea = {
            "morning": ((40, 120, 200), (20, 80, 160)),
            "cloudy": ((60, 100, 140), (40, 70, 110)),
            "storm": ((25, 45, 70), (15, 30, 50)),
        }[t]
        self.gradient(sea[0], sea[1], 300, CANVAS)
        for _ in range(25):
            x, y = self.rng.uniform(0, CANVAS), self.rng.uniform(310, CANVAS)
            self.d.line(
                (x, y, x + 18, y), fill=(200, 225, 245) if t == "morning" else (120, 140, 160), width=2
            )

    def prop_rock(self, p: Prop, pen: Pen) -> None:
        self.d.polygon(
            [(0, 512), (0, 420), (50, 392), (360, 392), (410, 430), (430, 512)], fill=(112, 112, 120)
        )
        self.d.polygon([(60, 392), (200, 392), (160, 420), (80, 415)], fill=(135, 135, 142))

    def prop_lighthouse(self, p: Prop, pen: Pen, brightness: float = 1.0) -> None:
        lit = brightness > 1
        pen.poly([(-45, 0), (45, 0), (28, -260), (-28, -260)], (245, 245, 245))
        for y0 in (-40, -120, -200):
            w0, w1 = 45 - (-y0) * 17 / 260, 45 - (-(y0 - 40)) * 17 / 260
            pen.poly([(-w0, y0), (w0, y0), (w1, y0 - 40), (-w1, y0 - 40)], (205, 40, 45))
        pen.rect((-34, -266, 34, -258), (60, 60, 60))
        pen.rect((-22, -300, 22, -266), (255, 230, 120) if lit else (170, 200, 215))
        pen.poly([(-30, -300), (30, -300), (0, -330)], (205, 40, 45))
        pen.rect((-8, -30, 8, 0), (90, 60, 40))
        if lit:
            self.glow(p.x, p.y - 283 * p.scale, 60, (255, 235, 140), 220)

    def prop_beam(self, p: Prop, pen: Pen) -> None:
        self.translucent_polygon(
            [(p.x, p.y - 10), (p.x, p.y + 20), (512, 360), (512, 180)], (255, 240, 150, 110)
        )

    def prop_cloud(self, p: Prop, pen: Pen) -> None:
        color = (250, 250, 255) if self.page.time == "morning" else (110, 118, 128)
        for dx, dy, r in ((-40, 5, 28), (0, -8, 38), (42, 4, 30)):
            pen.circle(dx, dy, r, color)

    def prop_railing(self, p: Prop, pen: Pen) -> None:
        pen.rect((-50, -4, 50, 4), (60, 60, 60))
        for dx in (-45, 0, 45):
            pen.rect((dx - 3, 0, dx + 3, 60), (60, 60, 60))

    def prop_sandwich(self, p: Prop, pen: Pen) -> None:
        pen.poly([(-14, 0), (14, 0), (0, -16)], (235, 200, 130))
        pen.line([(-12, -3), (12, -3)], (255, 210, 60), 3)

    def prop_waves(self, p: Prop, pen: Pen) -> None:
        tall = self.page.time == "storm"
        for row, y in enumerate((330, 380, 440, 495)):
            for x in range(-20 + (row % 2) * 30, CANVAS, 60):
                h = 22 if tall else 12
                self.d.polygon(
                    [(x, y), (x + 30, y - h), (x + 60, y)],
                    fill=(190, 215, 235) if not tall else (90, 110, 135),
                )

    def prop_boat(self, p: Prop, pen: Pen) -> None:
        tilt = 10 if self.page.time == "storm" else 0
        pen.poly([(-60, -tilt), (60, tilt), (40, 30 + tilt), (-40, 30 - tilt)], (200, 35, 35))
        pen.line([(0, 0), (tilt, -110)], (90, 60, 40), 5)
        pen.poly([(tilt + 3, -105), (tilt + 3, -20), (55, -25)], (245, 240, 225))
        if self.page.key == "p06":
            for dx in (-30, -10):
                pen.circle(dx, -14, 8, (240, 200, 160))
                pen.rect((dx - 9, -28, dx + 9, -22), (40, 60, 140))

    def actor_marta(self, a: Actor, pen: Pen) -> None:
        yellow, skin = (244, 196, 48), (241, 199, 160)
        pen.rect((-18, -30, -6, 0), (40, 40, 40))
        pen.rect((6, -30, 18, 0), (40, 40, 40))
        pen.poly([(-24, -125), (24, -125), (45, -28), (-45, -28)], yellow)
        arm_up = a.mood == "angry"
        pen.line([(20, -115), (55, -150 if arm_up else -70)], yellow, 12)
        pen.line([(-20, -115), (-45, -70)], yellow, 12)
        pen.circle(0, -150, 26, skin)
        pen.ellipse(0, -168, 27, 14, (170, 170, 175))
        pen.circle(0, -182, 12, (170, 170, 175))
        face(pen, 0, -148, 24, a.mood)

    def actor_gus(self, a: Actor, pen: Pen) -> None:
        white, grey = (250, 250, 250), (160, 165, 175)
        if a.pose == "fly":
            pen.poly([(-5, -30), (-70, -70), (-85, -60), (-20, -22)], grey)
            pen.poly([(5, -30), (70, -70), (85, -60), (20, -22)], grey)
            pen.poly([(-70, -70), (-85, -60), (-78, -72)], (20, 20, 20))
            pen.poly([(70, -70), (85, -60), (78, -72)], (20, 20, 20))
        else:
            pen.line([(-6, -10), (-6, 0)], (240, 170, 40), 3)
            pen.line([(6, -10), (6, 0)], (240, 170, 40), 3)
        pen.ellipse(0, -25, 30, 16, white)
        if a.pose != "fly":
            pen.ellipse(-6, -25, 20, 10, grey)
        pen.circle(24, -40, 13, white)
        pen.poly([(34, -42), (52, -38), (34, -35)], (245, 150, 30))
        pen.circle(27, -43, 2.5, (20, 20, 20))
        if a.mood == "angry":
            pen.line([(21, -50), (31, -47)], (20, 20, 20), 2)


class CityPainter(Painter):
    """Bolt and Nia: brick buildings, street, lamp posts; silver robot, purple raincoat."""

    skies: ClassVar[dict[str, tuple[Color, Color]]] = {
        "day": ((168, 216, 255), (234, 246, 255)),
        "rain": ((125, 135, 148), (179, 186, 195)),
        "evening": ((59, 42, 92), (217, 130, 91)),
    }
    rain_style = (170, (200, 215, 235))

    def background(self) -> None:
        rng = random.Random(f"{self.book.key}/buildings")
        x = 0.0
        palette = ((170, 74, 60), (150, 90, 70), (120, 120, 130), (190, 110, 80))
        lit = self.page.time == "evening"
        while x < CANVAS:
            w, h = rng.uniform(80, 130), rng.uniform(170, 300)
            color = palette[rng.randrange(len(palette))]
            self.d.rectangle((x, 400 - h, x + w - 4, 400), fill=color)
            for wy in range(int(400 - h + 18), 380, 34):
                for wx in range(int(x + 12), int(x + w - 24), 28):
                    on = lit and rng.random() < 0.6
                    self.d.rectangle(
                        (wx, wy, wx + 14, wy + 18), fill=(255, 220, 120) if on else (70, 90, 120)
                    )
            x += w
        self.d.rectangle((0, 400, CANVAS, 420), fill=(170, 170, 170))
        self.d.rectangle((0, 420, CANVAS, CANVAS), fill=(80, 80, 88))
        for sx in range(10, CANVAS, 90):
            self.d.rectangle((sx, 470, sx + 45, 476), fill=(220, 220, 200))

    def prop_lamp_post(self, p: Prop, pen: Pen, brightness: float = 1.0) -> None:
        lit = brightness > 1
        pen.rect((-4, -200, 4, 0), (50, 55, 60))
        pen.rect((-16, -215, 16, -198), (255, 225, 120) if lit else (200, 200, 190))
        if lit:
            self.glow(p.x, p.y - 205 * p.scale, 80, (255, 210, 110), 190)

    def prop_puddle(self, p: Prop, pen: Pen) -> None:
        pen.ellipse(0, 0, 50, 9, (120, 140, 170))

    def prop_umbrella(self, p: Prop, pen: Pen) -> None:
        pen.cap((-90, -55, 90, 55), (40, 150, 80))
        pen.line([(0, 0), (40, 150)], (60, 40, 30), 4)

    def prop_awning(self, p: Prop, pen: Pen) -> None:
        for i in range(8):
            color = (220, 60, 60) if i % 2 == 0 else (250, 245, 235)
            pen.poly(
                [(-160 + i * 40, 0), (-120 + i * 40, 0), (-120 + i * 40, 40), (-160 + i * 40, 40)], color
            )
        pen.rect((-160, -60, 160, 0), (120, 80, 60))

    def prop_scarf(self, p: Prop, pen: Pen) -> None:
        pen.poly([(-10, -10), (60, -4), (62, 8), (-8, 4)], (250, 210, 40))

    def prop_rainbow(self, p: Prop, pen: Pen) -> None:
        colors = (
            (230, 60, 60),
            (245, 150, 40),
            (250, 220, 60),
            (80, 180, 80),
            (60, 120, 220),
            (140, 80, 190),
        )
        for i, c in enumerate(colors):
            r = 260 - i * 14
            self.d.arc((256 - r, 330 - r, 256 + r, 330 + r), 180, 360, fill=c, width=14)

    def actor_bolt(self, a: Actor, pen: Pen) -> None:
        silver, dark = (192, 198, 204), (90, 95, 105)
        lift = -20 if a.pose == "sit" else 0
        if a.pose == "sit":
            pen.rect((-30, -20, 40, 0), dark)
        else:
            pen.circle(-22, -14, 14, dark)
            pen.circle(22, -14, 14, dark)
        pen.rect((-40, -100 - lift, 40, -25 - lift), silver)
        pen.rect((-22, -80 - lift, 22, -50 - lift), (150, 160, 170))
        pen.rect((-30, -150 - lift, 30, -102 - lift), silver)
        pen.line([(0, -150 - lift), (0, -172 - lift)], dark, 4)
        light = (120, 130, 140) if a.mood == "sad" else (60, 160, 255)
        if light != (120, 130, 140):
            self.glow(*pen.p(0, -176 - lift), 18 * a.scale, (80, 170, 255), 160)
        pen.circle(0, -176 - lift, 7, light)
        eye = (40, 120, 220) if a.mood != "sad" else (70, 80, 100)
        face(pen, 0, -126 - lift, 24, a.mood, eye)
        broom = (150, 100, 50)
        if a.pose == "spin":
            pen.line([(-90, -175), (90, -185)], broom, 6)
            pen.poly([(90, -200), (120, -195), (118, -170), (88, -172)], (240, 200, 60))
            pen.arc(0, -150, 110, 200, 340, (255, 255, 255), 3)
        elif a.pose == "sit":
            pen.line([(42, -70), (90, -10)], broom, 6)
        else:
            pen.line([(40, -80), (70, -80), (80, 0)], broom, 6)
            pen.poly([(65, -5), (100, -5), (95, 10), (70, 10)], (240, 200, 60))

    def actor_nia(self, a: Actor, pen: Pen) -> None:
        purple, skin, hair = (123, 63, 160), (141, 85, 36), (25, 20, 20)
        pen.rect((-16, -22, -5, 0), (250, 210, 40))
        pen.rect((5, -22, 16, 0), (250, 210, 40))
        pen.poly([(-20, -120), (20, -120), (42, -22), (-42, -22)], purple)
        if a.pose == "cheer":
            pen.line([(-18, -110), (-45, -165)], purple, 11)
            pen.line([(18, -110), (45, -165)], purple, 11)
        else:
            pen.line([(-18, -110), (-40, -65)], purple, 11)
            pen.line([(18, -110), (40, -65)], purple, 11)
        for dx, dy in ((-22, -160), (22, -160), (-14, -176), (14, -176), (0, -182), (-26, -142), (26, -142)):
            pen.circle(dx, dy, 13, hair)
        pen.circle(0, -146, 22, skin)
        face(pen, 0, -144, 21, a.mood, (20, 15, 15))


class SnowPainter(Painter):
    """Lena and Tundra: snowy hills, pines, cabin; red coat and blue hat, grey husky."""

    skies: ClassVar[dict[str, tuple[Color, Color]]] = {
        "morning": ((207, 232, 255), (245, 251, 255)),
        "blizzard": ((174, 189, 204), (223, 231, 239)),
        "dusk": ((29, 52, 112), (95, 127, 191)),
        "night": ((5, 11, 36), (20, 42, 90)),
    }

    def background(self) -> None:
        rng = random.Random(f"{self.book.key}/hills")
        far = (200, 215, 235) if self.page.time in ("morning", "blizzard") else (90, 110, 160)
        for i in range(4):
            cx = i * 170 + rng.uniform(-30, 30)
            self.d.ellipse((cx - 160, 260, cx + 160, 420), fill=far)
        self.d.rectangle((0, 380, CANVAS, CANVAS), fill=(244, 248, 255))

    def prop_cabin(self, p: Prop, pen: Pen) -> None:
        pen.rect((-80, -110, 80, 0), (130, 82, 45))
        for y in range(-100, 0, 20):
            pen.line([(-80, y), (80, y)], (100, 62, 35), 2)
        pen.poly([(-100, -108), (100, -108), (0, -190)], (170, 40, 40))
        pen.poly([(-100, -108), (-60, -108), (0, -190), (-20, -175)], (250, 252, 255))
        pen.rect((-20, -60, 20, 0), (80, 50, 30))
        pen.rect((35, -80, 65, -50), (255, 220, 130))
        pen.rect((40, -170, 58, -130), (90, 60, 40))

    def prop_pine(self, p: Prop, pen: Pen) -> None:
        pen.rect((-8, -20, 8, 0), (90, 60, 40))
        for i, (w, top) in enumerate(((70, -120), (55, -170), (40, -210))):
            base = -20 - i * 50
            pen.poly([(-w, base), (w, base), (0, top)], (30, 90, 60))
            pen.poly(
                [(-w * 0.35, top + (base - top) * 0.35), (w * 0.35, top + (base - top) * 0.35), (0, top)],
                (250, 252, 255),
            )

    def prop_sled(self, p: Prop, pen: Pen) -> None:
        pen.rect((-40, -22, 40, -10), (150, 95, 50))
        pen.line([(-45, -2), (45, -2), (55, -14)], (90, 60, 40), 4)
        pen.line([(-40, -16), (-85, -30)], (120, 90, 60), 2)

    def prop_tracks(self, p: Prop, pen: Pen) -> None:
        for i in range(9):
            x, y = 40 + i * 22, 505 - i * 8
            self.d.ellipse((x, y, x + 8, y + 5), fill=(170, 185, 205))
            self.d.ellipse((x + 6, y + 10, x + 14, y + 15), fill=(170, 185, 205))

    def prop_hilltop(self, p: Prop, pen: Pen) -> None:
        color = (225, 232, 248) if self.page.time == "dusk" else (200, 210, 235)
        self.d.ellipse((-80, 380, 600, 700), fill=color)

    def prop_stars(self, p: Prop, pen: Pen) -> None:
        self.stars(40 if self.page.time == "dusk" else 90, 300)

    def prop_aurora(self, p: Prop, pen: Pen) -> None:
        bands = (((80, 255, 160, 90), 50), ((255, 120, 200, 70), 95), ((90, 240, 190, 80), 135))
        for k, (color, base) in enumerate(bands):
            top = [(x, base + 30 * math.sin(x / 70 + k)) for x in range(0, CANVAS + 16, 16)]
            bottom = [(x, base + 45 + 25 * math.sin(x / 55 + k * 2)) for x in range(CANVAS, -16, -16)]
            self.translucent_polygon(top + bottom, color)

    def finish(self) -> None:
        kinds = {p.kind for p in self.page.props}
        if "snowstorm" in kinds:
            self.overlay((235, 240, 248, 70))
            for _ in range(260):
                x, y = self.rng.uniform(-30, CANVAS), self.rng.uniform(0, CANVAS)
                self.d.line((x, y, x + 22, y + 6), fill=(255, 255, 255), width=3)
        if "light_snow" in kinds:
            for _ in range(70):
                x, y = self.rng.uniform(0, CANVAS), self.rng.uniform(0, CANVAS)
                self.d.ellipse((x - 3, y - 3, x + 3, y + 3), fill=(255, 255, 255))

    def actor_lena(self, a: Actor, pen: Pen) -> None:
        red, skin, hat = (214, 40, 40), (246, 210, 181), (42, 111, 219)
        pen.rect((-16, -24, -5, 0), (50, 40, 40))
        pen.rect((5, -24, 16, 0), (50, 40, 40))
        pen.poly([(-22, -118), (22, -118), (40, -24), (-40, -24)], red)
        pen.line([(0, -115), (0, -30)], (150, 20, 20), 2)
        pen.line([(-18, -108), (-40, -60)], red, 11)
        pen.line([(18, -108), (40, -60)], red, 11)
        pen.circle(0, -142, 24, skin)
        pen.line([(-22, -140), (-26, -112)], (120, 70, 30), 5)
        pen.line([(22, -140), (26, -112)], (120, 70, 30), 5)
        pen.cap((-26, -190, 26, -130), hat)
        pen.circle(0, -190, 8, (255, 255, 255))
        face(pen, 0, -138, 22, a.mood)

    def actor_tundra(self, a: Actor, pen: Pen) -> None:
        grey, white, dark = (125, 135, 145), (245, 245, 248), (70, 78, 88)
        pen.arc(-62, -70, 20, 90, 330, grey, 9)
        for dx in (-40, -20, 20, 38):
            pen.rect((dx - 6, -32, dx + 6, 0), grey)
        pen.ellipse(0, -50, 58, 28, grey)
        pen.ellipse(8, -40, 32, 14, white)
        hy = -115 if a.pose == "howl" else -92
        pen.poly([(38, hy - 20), (44, hy - 52), (58, hy - 24)], dark)
        pen.poly([(72, hy - 24), (84, hy - 52), (90, hy - 18)], dark)
        pen.circle(64, hy, 30, grey)
        pen.ellipse(64, hy + 10, 20, 16, white)
        pen.circle(64, hy + 2, 4, (20, 20, 20))
        if a.pose == "howl":
            pen.ellipse(64, hy + 18, 6, 8, (90, 30, 40))
            face(pen, 64, hy - 2, 28, "sleepy", (150, 200, 240))
        else:
            face(pen, 64, hy - 2, 28, a.mood, (120, 180, 230))


PAINTERS: dict[str, type[Painter]] = {
    "forest": ForestPainter,
    "sea": SeaPainter,
    "city": CityPainter,
    "snow": SnowPainter,
}


def draw_page(book: Book, page: Page, size: int = 256) -> Image.Image:
    """The illustration of ``page`` as an RGB image of ``size`` x ``size`` pixels."""
    image = PAINTERS[book.painter](book, page).paint().convert("RGB")
    if size != CANVAS:
        image = image.resize((size, size), Image.Resampling.LANCZOS)
    return image
