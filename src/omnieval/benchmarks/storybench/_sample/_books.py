"""The four picture books of the sample dataset, written for omnieval.

Each book is plain data: metadata, pages (narration plus what the illustration shows) and one
annotation per page transition (next-page conditions and the target speech line). Coordinates are
on the 512 x 512 drawing canvas (x right, y down; an actor's ``y`` is where its feet touch the ground).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Actor:
    """A recurring character placed on a page; ``mood`` picks the face, ``pose`` the body."""

    name: str
    x: int
    y: int
    scale: float = 1.0
    mood: str = "calm"
    pose: str = "stand"
    flip: bool = False


@dataclass(frozen=True)
class Prop:
    """A scene object (``kind`` names a drawing routine of the book's painter)."""

    kind: str
    x: int = 0
    y: int = 0
    scale: float = 1.0


@dataclass(frozen=True)
class Page:
    """One page: narration and the illustration's content."""

    key: str
    text: str
    time: str
    actors: tuple[Actor, ...] = ()
    props: tuple[Prop, ...] = ()


@dataclass(frozen=True)
class Step:
    """Annotation of the transition into a page: next-page conditions and the target speech line."""

    characters: tuple[dict[str, str], ...]
    scene: str
    text_instruction: str
    ambient_sound: str
    speaker: str
    line: str
    emotion: str
    speed: str
    pitch: str
    gender: str


@dataclass(frozen=True)
class Book:
    """A book; ``steps[i]`` annotates the transition ``pages[i] -> pages[i + 1]``."""

    source: str
    key: str
    painter: str
    genre: str
    topic: str
    style: str
    narrative_tense: str
    narrative_perspective: str
    characters: tuple[dict[str, str], ...]
    pages: tuple[Page, ...]
    steps: tuple[Step, ...] = field(default=())

    def metadata(self) -> dict[str, Any]:
        """The book metadata object of FORMATS.md section 1."""
        return {
            "genre": self.genre,
            "topic": self.topic,
            "style": self.style,
            "narrative_tense": self.narrative_tense,
            "narrative_perspective": self.narrative_perspective,
            "characters": [dict(c) for c in self.characters],
        }


def _who(
    name: str, emotion: str, visibility: str, action: str, speech_intent: str = "stays silent"
) -> dict[str, str]:
    return {
        "name": name,
        "emotion": emotion,
        "visibility": visibility,
        "action": action,
        "speech_intent": speech_intent,
    }


FOX = Book(
    source="omnieval-fables",
    key="pip-and-the-brass-lantern",
    painter="forest",
    genre="fairy tale",
    topic="a young fox finds a lost lantern and carries it home to the river mice before its flame dies",
    style="warm picture-book illustration with flat shapes, green forest and orange fox",
    narrative_tense="past",
    narrative_perspective="third person",
    characters=(
        {"name": "Pip", "description": "a small orange fox with a white-tipped tail; curious and brave"},
        {
            "name": "Hazel",
            "description": "an old brown owl with round golden eyes who lives in the oak; wise",
        },
    ),
    pages=(
        Page(
            "p01",
            "Pip the fox woke early under the old oak tree. The morning sun slid between the leaves. "
            "He stretched his white-tipped tail and sniffed the cool air.",
            "morning",
            actors=(Actor("Pip", 250, 430, 1.0, "calm"),),
            props=(Prop("oak", 95, 440), Prop("bush", 420, 445)),
        ),
        Page(
            "p02",
            "Near a ring of red mushrooms, Pip found a little brass lantern. Its glass was cracked, "
            "but a tiny flame still flickered inside. Who could have lost it?",
            "morning",
            actors=(Actor("Pip", 200, 440, 1.1, "surprised"),),
            props=(
                Prop("oak", 60, 440, 0.8),
                Prop("mushroom", 300, 450),
                Prop("mushroom", 350, 462, 0.8),
                Prop("mushroom", 400, 452),
                Prop("lantern", 345, 440),
            ),
        ),
        Page(
            "p03",
            "Pip carried the lantern to the oak, where Hazel the owl was dozing on a branch. She "
            "opened one golden eye. The lantern, she said, belonged to the river mice.",
            "noon",
            actors=(Actor("Pip", 330, 445, 1.0, "calm"), Actor("Hazel", 150, 210, 1.0, "calm")),
            props=(Prop("oak", 130, 450, 1.2), Prop("lantern", 390, 440)),
        ),
        Page(
            "p04",
            "Pip trotted along the stream with the lantern swinging from his mouth. Hazel flew above, "
            "calling out the way. The water sparkled in the afternoon light.",
            "afternoon",
            actors=(Actor("Pip", 200, 400, 0.9, "happy"), Actor("Hazel", 330, 150, 0.8, "calm", "fly")),
            props=(Prop("stream"), Prop("lantern", 262, 372, 0.8), Prop("bush", 440, 400)),
        ),
        Page(
            "p05",
            "As the sky turned orange, the little flame began to shrink. Pip stopped and whimpered. "
            "If it went out, the mice would never find their way home.",
            "dusk",
            actors=(Actor("Pip", 230, 420, 1.0, "sad"), Actor("Hazel", 400, 160, 0.7, "sad", "fly")),
            props=(Prop("stream"), Prop("lantern_dim", 300, 430)),
        ),
        Page(
            "p06",
            "At the bend of the stream, Pip set the lantern on a flat stone. The flame leapt up bright "
            "and golden. Far away, tiny voices cheered, and Hazel hooted softly in the dark.",
            "night",
            actors=(Actor("Pip", 170, 430, 1.0, "happy"), Actor("Hazel", 420, 330, 0.8, "happy")),
            props=(
                Prop("stream"),
                Prop("stone", 300, 440),
                Prop("lantern_bright", 300, 410),
                Prop("mice", 420, 420),
            ),
        ),
    ),
    steps=(
        Step(
            (
                _who(
                    "Pip",
                    "surprised and curious",
                    "visible, close to the viewer",
                    "sniffs at a small lantern lying among red mushrooms",
                    "wonders aloud about the lantern",
                ),
            ),
            "a sunny forest clearing with a ring of red-capped mushrooms and the oak at the edge",
            "Describe Pip discovering a small lantern with a cracked glass and a living flame, and wondering "
            "whose it is.",
            "birdsong and rustling leaves",
            "Pip",
            "Oh! A lantern, all by itself in the moss?",
            "happy",
            "normal",
            "high",
            "male",
        ),
        Step(
            (
                _who("Pip", "hopeful", "visible on the ground", "holds the lantern up toward the oak branch"),
                _who(
                    "Hazel",
                    "sleepy, then attentive",
                    "visible on a branch of the oak",
                    "opens one eye and looks down at the lantern",
                    "tells Pip who owns the lantern",
                ),
            ),
            "under the big oak at midday; the owl sits on a low branch above the fox",
            "Tell how Pip brings his find to the old owl, who wakes and recognises it as belonging to the "
            "mice by the river.",
            "a soft breeze in the oak leaves",
            "Hazel",
            "That lamp belongs to the river mice, little one.",
            "neutral",
            "slow",
            "low",
            "female",
        ),
        Step(
            (
                _who(
                    "Pip",
                    "determined and cheerful",
                    "visible, walking along the bank",
                    "carries the lantern in his mouth beside the water",
                ),
                _who(
                    "Hazel",
                    "encouraging",
                    "visible, flying overhead",
                    "glides ahead and shows the way",
                    "urges Pip to keep following the water",
                ),
            ),
            "a winding stream through the forest in golden afternoon light",
            "Narrate the journey along the stream: the fox carrying the lantern and the owl guiding "
            "from the air.",
            "running water and the owl's wingbeats",
            "Hazel",
            "Follow the water, Pip, and don't stop for anything!",
            "happy",
            "fast",
            "normal",
            "female",
        ),
        Step(
            (
                _who(
                    "Pip",
                    "worried and sad",
                    "visible beside the stream",
                    "stops and stares at the shrinking flame",
                    "fears the mice will be lost",
                ),
                _who("Hazel", "concerned", "small, flying in the orange sky", "circles above the fox"),
            ),
            "the same stream at sunset; the sky is orange and the lantern glows only faintly",
            "Show the flame getting weaker as evening comes and Pip's fear that the mice will not find home.",
            "crickets starting to chirp and a faint whimper",
            "Pip",
            "If it goes out, the mice will never find their way home.",
            "sad",
            "slow",
            "normal",
            "male",
        ),
        Step(
            (
                _who(
                    "Pip",
                    "relieved and joyful",
                    "visible on the bank",
                    "has set the lantern on a flat stone",
                    "calls out to the owl in delight",
                ),
                _who("Hazel", "proud", "visible on a low stump", "hoots softly"),
            ),
            "night at a bend of the stream; the lantern shines brightly on a stone and tiny mice "
            "gather nearby",
            "Conclude with the lantern placed on a stone and blazing again, the mice cheering from afar, and "
            "the owl answering in the dark.",
            "quiet night, tiny distant cheers and an owl's hoot",
            "Pip",
            "Look, Hazel! It's shining again!",
            "happy",
            "fast",
            "high",
            "male",
        ),
    ),
)


LIGHTHOUSE = Book(
    source="omnieval-fables",
    key="marta-of-gull-rock",
    painter="sea",
    genre="adventure",
    topic="a lighthouse keeper and a greedy seagull guide a small boat to safety through a storm",
    style="bold seaside picture-book illustration with blue water, a red-and-white lighthouse and grey rocks",
    narrative_tense="present",
    narrative_perspective="first person",
    characters=(
        {
            "name": "Marta",
            "description": "the lighthouse keeper of Gull Rock, grey hair in a bun, yellow raincoat",
        },
        {
            "name": "Gus",
            "description": "a white seagull with an orange beak and a huge appetite; cheeky but loyal",
        },
    ),
    pages=(
        Page(
            "p01",
            "I am Marta, and I keep the lighthouse on Gull Rock. Every morning I polish the great lamp. "
            "Today the sea is calm and blue.",
            "morning",
            actors=(Actor("Marta", 300, 400, 1.0, "happy"),),
            props=(Prop("rock"), Prop("lighthouse", 150, 400), Prop("cloud", 380, 90)),
        ),
        Page(
            "p02",
            "A gull lands on the railing beside me. He snatches my cheese sandwich and gulps it down. "
            "I name him Gus, because he is such a greedy guest.",
            "morning",
            actors=(Actor("Marta", 300, 400, 1.0, "angry"), Actor("Gus", 390, 330, 1.0, "happy")),
            props=(
                Prop("rock"),
                Prop("lighthouse", 150, 400),
                Prop("railing", 390, 335),
                Prop("sandwich", 405, 318),
            ),
        ),
        Page(
            "p03",
            "By noon, grey clouds pile up over the water. Gus flaps and screeches at the sky. The waves grow "
            "tall and slap against the rock.",
            "cloudy",
            actors=(Actor("Marta", 310, 400, 1.0, "calm"), Actor("Gus", 400, 250, 1.0, "angry", "fly")),
            props=(
                Prop("waves"),
                Prop("rock"),
                Prop("lighthouse", 150, 400),
                Prop("cloud", 100, 80),
                Prop("cloud", 330, 110),
            ),
        ),
        Page(
            "p04",
            "Night falls with rain and wind. Through the dark I see a small red boat tossing on the waves. "
            "Its sailors cannot see the rocks!",
            "storm",
            actors=(Actor("Marta", 250, 400, 0.9, "sad"),),
            props=(
                Prop("waves"),
                Prop("rock"),
                Prop("lighthouse", 120, 400),
                Prop("boat", 400, 300, 0.8),
                Prop("rain"),
            ),
        ),
        Page(
            "p05",
            "I climb the stairs and light the great lamp. Its beam sweeps across the sea. Gus flies out into "
            "the storm, crying loudly to guide the boat.",
            "storm",
            actors=(Actor("Gus", 330, 200, 0.9, "angry", "fly"),),
            props=(
                Prop("waves"),
                Prop("rock"),
                Prop("boat", 420, 300, 0.8),
                Prop("beam", 150, 117),
                Prop("lighthouse_lit", 150, 400),
                Prop("rain"),
            ),
        ),
        Page(
            "p06",
            "In the morning, the red boat rests safely by the rocks. The sailors wave their caps at us. "
            "Today I share my sandwich with Gus.",
            "morning",
            actors=(Actor("Marta", 290, 400, 1.0, "happy"), Actor("Gus", 360, 395, 0.9, "happy")),
            props=(
                Prop("rock"),
                Prop("lighthouse", 150, 400),
                Prop("boat", 440, 380, 0.9),
                Prop("sandwich", 330, 345),
            ),
        ),
    ),
    steps=(
        Step(
            (
                _who(
                    "Marta",
                    "annoyed",
                    "visible beside the lighthouse",
                    "reaches for her stolen lunch",
                    "scolds the gull",
                ),
                _who("Gus", "pleased with himself", "visible on the railing", "gulps down a sandwich"),
            ),
            "the lighthouse gallery on a bright morning; a seagull perches on the railing with bread "
            "in its beak",
            "Describe a seagull landing, stealing the keeper's lunch, and the keeper naming him.",
            "waves lapping and a gull's cry",
            "Marta",
            "Hey! That was my lunch, you greedy bird!",
            "angry",
            "fast",
            "high",
            "female",
        ),
        Step(
            (
                _who(
                    "Marta",
                    "calm but watchful",
                    "visible on the rock",
                    "looks up at the darkening sky",
                    "reassures the gull",
                ),
                _who("Gus", "agitated", "visible in the air", "flaps and screeches at the clouds"),
            ),
            "Gull Rock at noon under heavy grey clouds; the waves have grown tall",
            "Tell how the weather turns: clouds gather, the gull grows restless, the sea rises "
            "against the rock.",
            "rising wind, screeching gull and waves slapping stone",
            "Marta",
            "Easy, Gus. I see the clouds too.",
            "neutral",
            "normal",
            "low",
            "female",
        ),
        Step(
            (
                _who(
                    "Marta",
                    "frightened for the sailors",
                    "visible, small, on the rock in the rain",
                    "peers into the dark sea",
                    "speaks her dread quietly",
                ),
            ),
            "a stormy night with slanting rain; a small red boat pitches on dark waves near the rocks",
            "Narrate nightfall in the storm and the keeper spotting a boat in danger of hitting the rocks.",
            "howling wind, heavy rain and crashing waves",
            "Marta",
            "Oh no. Not tonight, of all nights.",
            "sad",
            "slow",
            "low",
            "female",
        ),
        Step(
            (
                _who(
                    "Gus",
                    "fierce and urgent",
                    "visible, flying over the waves in the beam",
                    "flies toward the boat and cries out",
                    "calls the sailors toward safety",
                ),
            ),
            "the lighthouse lamp is lit and its yellow beam cuts across the stormy sea toward the boat",
            "Describe the keeper lighting the lamp, the beam sweeping the water, and the gull flying "
            "out to lead "
            "the boat.",
            "storm wind, the hum of the lamp and a gull's loud calls",
            "Gus",
            "Kraa! This way, sailors! This way!",
            "angry",
            "fast",
            "high",
            "male",
        ),
        Step(
            (
                _who(
                    "Marta",
                    "happy and relieved",
                    "visible on the rock",
                    "breaks her sandwich in two",
                    "offers the gull half",
                ),
                _who("Gus", "delighted", "visible beside her", "waits for his share"),
            ),
            "a calm bright morning; the red boat is moored safely by the rocks",
            "Conclude the story with the rescued boat safe, the sailors thanking them, and the "
            "keeper sharing "
            "her food with the gull.",
            "gentle waves and distant cheering",
            "Marta",
            "Here you go, Gus. Half for you, half for me.",
            "happy",
            "normal",
            "normal",
            "female",
        ),
    ),
)


ROBOT = Book(
    source="omnieval-adventures",
    key="bolt-in-brick-city",
    painter="city",
    genre="science fiction fable",
    topic="a lonely street-sweeping robot breaks down in the rain and is helped by a kind girl",
    style="playful city picture-book illustration with brick buildings, a silver robot and a purple raincoat",
    narrative_tense="past",
    narrative_perspective="third person",
    characters=(
        {
            "name": "Bolt",
            "description": "a small silver street-sweeping robot with a blue antenna light and a broom",
        },
        {
            "name": "Nia",
            "description": "a girl with curly black hair in a purple raincoat; kind and talkative",
        },
    ),
    pages=(
        Page(
            "p01",
            "Bolt was a small silver robot who swept the streets of Brick City. Every day he pushed "
            "his broom "
            "past the tall buildings. Nobody ever stopped to say hello.",
            "day",
            actors=(Actor("Bolt", 260, 440, 1.0, "calm"),),
            props=(Prop("lamp_post", 430, 440),),
        ),
        Page(
            "p02",
            "One afternoon, rain poured from the grey sky. Water dripped into Bolt's joints, and his "
            "arms began "
            "to creak. He sat down on the curb, unable to move.",
            "rain",
            actors=(Actor("Bolt", 240, 445, 0.9, "sad", "sit"),),
            props=(Prop("lamp_post", 430, 440), Prop("puddle", 330, 470), Prop("rain")),
        ),
        Page(
            "p03",
            "A girl in a purple raincoat splashed down the street. She saw Bolt shivering by the curb. "
            "Nia crouched beside him and held her umbrella over his head.",
            "rain",
            actors=(Actor("Bolt", 200, 445, 0.9, "sad", "sit"), Actor("Nia", 310, 450, 1.0, "sad")),
            props=(
                Prop("umbrella", 270, 250),
                Prop("lamp_post", 430, 440),
                Prop("puddle", 380, 470),
                Prop("rain"),
            ),
        ),
        Page(
            "p04",
            "Nia pulled Bolt under a shop awning. She dried his joints with her yellow scarf. Bolt's blue "
            "antenna light blinked on again.",
            "rain",
            actors=(Actor("Bolt", 230, 440, 1.0, "happy"), Actor("Nia", 330, 445, 1.0, "happy")),
            props=(Prop("awning", 270, 250), Prop("scarf", 255, 385), Prop("rain")),
        ),
        Page(
            "p05",
            "Soon the rain stopped and a rainbow arched over the rooftops. Bolt stood up and spun "
            "his broom in "
            "a happy circle. Nia laughed and clapped.",
            "day",
            actors=(
                Actor("Bolt", 220, 440, 1.0, "happy", "spin"),
                Actor("Nia", 350, 445, 1.0, "happy", "cheer"),
            ),
            props=(Prop("rainbow"), Prop("puddle", 120, 470)),
        ),
        Page(
            "p06",
            "In the evening, the streetlamps glowed along Brick City. Bolt swept the street, and Nia walked "
            "beside him, telling him stories. Now Bolt had a friend to say hello to.",
            "evening",
            actors=(Actor("Bolt", 190, 440, 0.9, "happy"), Actor("Nia", 290, 445, 0.95, "happy")),
            props=(Prop("lamp_post_lit", 430, 440), Prop("lamp_post_lit", 70, 440)),
        ),
    ),
    steps=(
        Step(
            (
                _who(
                    "Bolt",
                    "weak and sad",
                    "visible, sitting on the curb",
                    "sits down as rain drips into his joints",
                    "complains that he cannot move",
                ),
            ),
            "the same city street under a grey sky with heavy rain and puddles forming",
            "Describe the rain starting, water seeping into the robot's joints, and the robot "
            "stalling on the curb.",
            "pouring rain and a creaking metal squeak",
            "Bolt",
            "My arms... are getting... so stiff.",
            "sad",
            "slow",
            "low",
            "male",
        ),
        Step(
            (
                _who(
                    "Nia",
                    "sympathetic",
                    "visible, crouching beside the robot",
                    "holds her umbrella over him",
                    "comforts the robot",
                ),
                _who("Bolt", "cold and shivering", "visible on the curb", "looks up at the girl"),
            ),
            "the rainy street; a girl in a purple raincoat shelters the robot under a green umbrella",
            "Introduce a kind girl who notices the robot shivering and shelters him under her umbrella.",
            "rain drumming on an umbrella and splashing footsteps",
            "Nia",
            "Oh, you poor thing. Let me keep you dry.",
            "sad",
            "normal",
            "high",
            "female",
        ),
        Step(
            (
                _who(
                    "Bolt",
                    "grateful",
                    "visible under the awning",
                    "his antenna light switches back on",
                    "thanks the girl",
                ),
                _who("Nia", "pleased", "visible beside him", "rubs his joints with a yellow scarf"),
            ),
            "under a striped shop awning out of the rain",
            "Show the girl moving the robot under shelter and drying him until his light comes back.",
            "rain on the awning and a soft electronic beep",
            "Bolt",
            "Thank you. My light is working again.",
            "neutral",
            "normal",
            "normal",
            "male",
        ),
        Step(
            (
                _who(
                    "Nia",
                    "delighted",
                    "visible, clapping",
                    "laughs and claps her hands",
                    "cheers the robot on",
                ),
                _who("Bolt", "joyful", "visible in the street", "spins his broom in a circle"),
            ),
            "the street after the rain with a rainbow over the rooftops",
            "Narrate the rain ending, a rainbow appearing, and the robot dancing with his broom "
            "while the girl "
            "laughs.",
            "dripping gutters, laughter and clapping",
            "Nia",
            "Look at you spin, Bolt! You're dancing!",
            "happy",
            "fast",
            "high",
            "female",
        ),
        Step(
            (
                _who(
                    "Bolt",
                    "content",
                    "visible, sweeping",
                    "sweeps the street at dusk",
                    "greets his new friend warmly",
                ),
                _who("Nia", "chatty and happy", "visible, walking beside him", "tells him a story"),
            ),
            "the same street in the evening with glowing streetlamps",
            "End with the two walking and sweeping together in the evening and the robot no longer lonely.",
            "evening city hum and a broom swishing",
            "Bolt",
            "Good evening, Nia. Same street tomorrow?",
            "happy",
            "normal",
            "normal",
            "male",
        ),
    ),
)


SNOW = Book(
    source="omnieval-adventures",
    key="lena-and-the-northern-lights",
    painter="snow",
    genre="adventure",
    topic="a girl and her husky cross the snowy hills through a storm to see the northern lights",
    style="soft winter picture-book illustration with cold blues, white hills and a bright red coat",
    narrative_tense="past",
    narrative_perspective="third person",
    characters=(
        {
            "name": "Lena",
            "description": "a girl in a red coat and a knitted blue hat; eager and a little stubborn",
        },
        {"name": "Tundra", "description": "a big grey-and-white husky with pale blue eyes; loyal and steady"},
    ),
    pages=(
        Page(
            "p01",
            "Lena lived in a wooden cabin at the foot of the snowy hills. Grandma said the northern lights "
            "danced beyond the last hill. Lena zipped up her red coat.",
            "morning",
            actors=(Actor("Lena", 330, 440, 1.0, "happy"),),
            props=(Prop("cabin", 140, 440), Prop("pine", 450, 430), Prop("pine", 30, 420, 0.8)),
        ),
        Page(
            "p02",
            "Lena tied her sled to Tundra, her big grey husky. Together they set off across the snow. "
            "The pine trees stood quiet and white.",
            "morning",
            actors=(Actor("Tundra", 200, 440, 1.0, "happy"), Actor("Lena", 340, 445, 1.0, "happy")),
            props=(Prop("sled", 290, 455), Prop("pine", 60, 420), Prop("pine", 460, 420, 0.9)),
        ),
        Page(
            "p03",
            "Halfway up the hill, a cold wind began to howl. Snow whirled around them, and Lena could not "
            "see the path. She called out for Tundra.",
            "blizzard",
            actors=(Actor("Lena", 260, 440, 1.0, "sad"), Actor("Tundra", 420, 440, 0.7, "calm")),
            props=(Prop("pine", 80, 420, 0.9), Prop("snowstorm")),
        ),
        Page(
            "p04",
            "Tundra barked and pressed his warm side against her. He sniffed the snow and found their old "
            "tracks. Slowly, he led Lena up the hill.",
            "blizzard",
            actors=(Actor("Tundra", 220, 440, 1.0, "happy"), Actor("Lena", 330, 440, 1.0, "calm")),
            props=(Prop("tracks"), Prop("pine", 460, 420, 0.8), Prop("light_snow")),
        ),
        Page(
            "p05",
            "At the top, the wind dropped away. The sky turned deep blue, and the first stars came out. "
            "Lena hugged Tundra and waited.",
            "dusk",
            actors=(Actor("Lena", 270, 400, 1.0, "calm"), Actor("Tundra", 350, 405, 0.9, "calm")),
            props=(Prop("hilltop"), Prop("stars")),
        ),
        Page(
            "p06",
            "Then green and pink ribbons of light rippled across the sky. Lena gasped with joy. "
            "Tundra howled "
            "a long, happy song to the northern lights.",
            "night",
            actors=(Actor("Lena", 250, 400, 1.0, "happy"), Actor("Tundra", 340, 405, 0.9, "happy", "howl")),
            props=(Prop("hilltop"), Prop("stars"), Prop("aurora")),
        ),
    ),
    steps=(
        Step(
            (
                _who(
                    "Lena",
                    "excited",
                    "visible, holding the sled rope",
                    "ties the sled to the dog and sets off",
                    "urges the dog to hurry",
                ),
                _who("Tundra", "eager", "visible in front of the sled", "pulls the sled through the snow"),
            ),
            "a snowy meadow with white pine trees on a clear morning; a husky pulls a wooden sled",
            "Tell how the girl harnesses her husky to the sled and they start across the snow.",
            "crunching snow and a jingling harness",
            "Lena",
            "Come on, Tundra, let's go find the lights!",
            "happy",
            "fast",
            "high",
            "female",
        ),
        Step(
            (
                _who(
                    "Lena",
                    "scared and lost",
                    "visible, shielding her face",
                    "struggles against the wind",
                    "calls desperately for her dog",
                ),
                _who(
                    "Tundra", "alert", "partly hidden by whirling snow", "pushes through the snow toward her"
                ),
            ),
            "a hillside in a blizzard; snow whirls and the path has disappeared",
            "Describe a sudden snowstorm on the hillside that hides the path and separates the girl "
            "from her dog.",
            "howling wind and hissing snow",
            "Lena",
            "Tundra, where are you? I can't see the path!",
            "sad",
            "fast",
            "high",
            "female",
        ),
        Step(
            (
                _who(
                    "Tundra",
                    "steady and protective",
                    "visible, leading",
                    "sniffs out old tracks and leads the way",
                ),
                _who(
                    "Lena",
                    "relieved",
                    "visible, following",
                    "holds on to the dog's fur",
                    "praises the dog gently",
                ),
            ),
            "the hillside as the snow eases; paw prints and boot prints lead uphill",
            "Narrate the husky finding the girl, warming her, and leading her uphill along their "
            "earlier tracks.",
            "a bark, softer wind and footsteps in deep snow",
            "Lena",
            "You found our tracks! Good boy, Tundra.",
            "happy",
            "normal",
            "normal",
            "female",
        ),
        Step(
            (
                _who(
                    "Lena",
                    "tired but calm",
                    "visible on the hilltop",
                    "hugs the dog and sits down to wait",
                    "says quietly that they only need to wait",
                ),
                _who("Tundra", "calm", "visible next to her", "leans against the girl"),
            ),
            "the top of the hill at dusk; the sky is deep blue with the first stars",
            "Show the pair reaching the hilltop as the wind stops, the first stars appearing, and "
            "the girl waiting.",
            "near silence and a soft breath of wind",
            "Lena",
            "We made it. Now we just have to wait.",
            "neutral",
            "slow",
            "low",
            "female",
        ),
        Step(
            (
                _who(
                    "Lena",
                    "amazed and joyful",
                    "visible on the hilltop",
                    "gazes up at the sky",
                    "whispers her wonder",
                ),
                _who("Tundra", "happy", "visible beside her", "lifts his head and howls"),
            ),
            "the hilltop at night under rippling green and pink northern lights",
            "Conclude with the northern lights filling the sky, the girl overjoyed and the husky howling.",
            "a long happy howl under a still night sky",
            "Lena",
            "Oh, Tundra, it's even more beautiful than Grandma said!",
            "happy",
            "slow",
            "high",
            "female",
        ),
    ),
)


BOOKS: tuple[Book, ...] = (FOX, LIGHTHOUSE, ROBOT, SNOW)
