"""Phone recognition and grapheme-to-phoneme conversion for the phone error rate (OmniACBench).

The paper recognizes phonemes with POWSM and compares them with the script's reference pronunciation.
Here, two recognizers are available behind one interface:

- ``pocketsphinx``: CMU Sphinx's phone-loop decoding with its packaged en-us acoustic model and phone
  language model. It emits ARPAbet (39 phones); it is weak, so absolute PER values are high.
- ``ctc:<folder>``: any local Hugging Face CTC phoneme model (e.g. a wav2vec2 espeak-phoneme
  fine-tune) emitting IPA phones.

The reference comes from espeak-ng (through phonemizer), which resolves some heteronyms from
context; for ARPAbet recognizers the IPA is mapped to ARPAbet with :func:`ipa_to_arpabet`.
"""

from __future__ import annotations

import functools
import os
import threading
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from omnieval.backends.asr import ModelIdentity
from omnieval.errors import ConfigError

Inventory = Literal["arpabet", "ipa"]

ARPABET = frozenset(
    [
        "AA",
        "AE",
        "AH",
        "AO",
        "AW",
        "AY",
        "B",
        "CH",
        "D",
        "DH",
        "EH",
        "ER",
        "EY",
        "F",
        "G",
        "HH",
        "IH",
        "IY",
        "JH",
        "K",
        "L",
        "M",
        "N",
        "NG",
        "OW",
        "OY",
        "P",
        "R",
        "S",
        "SH",
        "T",
        "TH",
        "UH",
        "UW",
        "V",
        "W",
        "Y",
        "Z",
        "ZH",
    ]
)

# Longest symbols first; values are ARPAbet phones. Flaps and glottal stops become T, syllabic
# consonants a schwa plus the consonant (how CMUdict spells them).
_IPA_TO_ARPABET: dict[str, tuple[str, ...]] = {
    "aɪɚ": ("AY", "ER"),
    "aɪə": ("AY", "AH"),
    "aʊɚ": ("AW", "ER"),
    "tʃ": ("CH",),
    "dʒ": ("JH",),
    "eɪ": ("EY",),
    "aɪ": ("AY",),
    "ɔɪ": ("OY",),
    "aʊ": ("AW",),
    "oʊ": ("OW",),
    "əʊ": ("OW",),
    "oɹ": ("AO", "R"),
    "ɔɹ": ("AO", "R"),
    "ɑɹ": ("AA", "R"),
    "ɛɹ": ("EH", "R"),
    "eɹ": ("EH", "R"),
    "ɪɹ": ("IH", "R"),
    "iɹ": ("IH", "R"),
    "ʊɹ": ("UH", "R"),
    "iə": ("IY", "AH"),
    "ɪə": ("IH", "AH"),
    "n̩": ("AH", "N"),
    "l̩": ("AH", "L"),
    "m̩": ("AH", "M"),
    "i": ("IY",),
    "ɪ": ("IH",),
    "ᵻ": ("IH",),
    "ɨ": ("IH",),
    "e": ("EH",),
    "ɛ": ("EH",),
    "æ": ("AE",),
    "a": ("AE",),
    "ɑ": ("AA",),
    "ɒ": ("AA",),
    "ɔ": ("AO",),
    "o": ("OW",),
    "ʌ": ("AH",),
    "ə": ("AH",),
    "ɐ": ("AH",),
    "ɚ": ("ER",),
    "ɝ": ("ER",),
    "ɜ": ("ER",),
    "ʊ": ("UH",),
    "u": ("UW",),
    "p": ("P",),
    "b": ("B",),
    "t": ("T",),
    "d": ("D",),
    "k": ("K",),
    "g": ("G",),
    "ɡ": ("G",),
    "f": ("F",),
    "v": ("V",),
    "θ": ("TH",),
    "ð": ("DH",),
    "s": ("S",),
    "z": ("Z",),
    "ʃ": ("SH",),
    "ʒ": ("ZH",),
    "h": ("HH",),
    "x": ("HH",),
    "m": ("M",),
    "n": ("N",),
    "ŋ": ("NG",),
    "l": ("L",),
    "ɫ": ("L",),
    "ɹ": ("R",),
    "r": ("R",),
    "w": ("W",),
    "ʍ": ("W",),
    "j": ("Y",),
    "ɾ": ("T",),
    "ʔ": ("T",),
}
_IPA_KEYS = sorted(_IPA_TO_ARPABET, key=len, reverse=True)
_IPA_DROP = str.maketrans("", "", "ːˑˈˌ-'\u0303")


def ipa_to_arpabet(ipa_phones: list[str]) -> list[str]:
    """Map espeak-style IPA phones to ARPAbet (no stress); unknown symbols are dropped.

    Example:
        >>> ipa_to_arpabet(["s", "t", "oːɹ", "m"])
        ['S', 'T', 'AO', 'R', 'M']
        >>> ipa_to_arpabet(["tʃ", "ɪ", "ɾ", "n̩"])
        ['CH', 'IH', 'T', 'AH', 'N']
    """
    out: list[str] = []
    for phone in ipa_phones:
        rest = phone.translate(_IPA_DROP)
        while rest:
            for key in _IPA_KEYS:
                if rest.startswith(key):
                    out.extend(_IPA_TO_ARPABET[key])
                    rest = rest[len(key) :]
                    break
            else:
                rest = rest[1:]
    return out


def normalize_ipa(phones: list[str]) -> list[str]:
    """Drop stress and length marks so model output and reference compare symbol by symbol."""
    return [p for p in (ph.translate(_IPA_DROP) for ph in phones) if p]


@functools.lru_cache(maxsize=2)
def _espeak_backend(language: str) -> Any:
    try:
        from phonemizer.backend import EspeakBackend
    except ImportError as exc:  # pragma: no cover - in the CPU lock
        raise ConfigError("phonemizer is not installed (pip install phonemizer; needs espeak-ng)") from exc
    try:
        return EspeakBackend(language, preserve_punctuation=False, with_stress=False)
    except RuntimeError as exc:
        raise ConfigError(f"espeak-ng is not usable for G2P: {exc} (apt-get install espeak-ng)") from None


_G2P_LOCK = threading.Lock()


def reference_phones(text: str, inventory: Inventory = "arpabet", *, language: str = "en-us") -> list[str]:
    """Reference pronunciation of a script from espeak-ng G2P, in the recognizer's inventory."""
    from phonemizer.separator import Separator

    if not text.strip():
        return []
    with _G2P_LOCK:  # the espeak library is not re-entrant
        [ipa] = _espeak_backend(language).phonemize(
            [text], separator=Separator(phone=" ", word=" | "), strip=True
        )
    phones = [p for p in ipa.split() if p != "|"]
    return ipa_to_arpabet(phones) if inventory == "arpabet" else normalize_ipa(phones)


class PhoneRecognizer(Protocol):
    """Audio to a phone sequence in a declared inventory."""

    name: str
    inventory: Inventory

    def recognize(self, wave_16k: npt.NDArray[np.float32]) -> list[str]:
        """Phones of mono 16 kHz audio, shape ``(n,)``; silences and fillers removed."""
        ...

    def identity(self) -> ModelIdentity: ...


class PocketSphinxPhones:
    """Phone-loop decoding with pocketsphinx's packaged en-us model (ARPAbet output)."""

    name = "pocketsphinx"
    inventory: Inventory = "arpabet"

    def __init__(self) -> None:
        try:
            from pocketsphinx import get_model_path
        except ImportError as exc:  # pragma: no cover - in the CPU lock
            raise ConfigError("pocketsphinx is not installed (pip install pocketsphinx)") from exc
        root = Path(get_model_path()) / "en-us"
        self.hmm = root / "en-us"
        self.phone_lm = root / "en-us-phone.lm.bin"
        if not self.hmm.is_dir() or not self.phone_lm.is_file():
            raise ConfigError(f"pocketsphinx's en-us model is incomplete under {root}")
        self._lock = threading.Lock()
        self._decoder: Any = None

    def _load(self) -> Any:
        if self._decoder is None:
            from pocketsphinx import Decoder

            # Wide beams and a language weight of 2 are pocketsphinx's recommended phone-loop settings.
            self._decoder = Decoder(
                hmm=str(self.hmm),
                allphone=str(self.phone_lm),
                lw=2.0,
                beam=1e-20,
                pbeam=1e-20,
                loglevel="FATAL",
            )
        return self._decoder

    def recognize(self, wave_16k: npt.NDArray[np.float32]) -> list[str]:
        pcm = (np.clip(np.asarray(wave_16k, dtype=np.float32), -1.0, 1.0) * 32767.0).astype("<i2").tobytes()
        with self._lock:
            decoder = self._load()
            decoder.start_utt()
            decoder.process_raw(pcm, full_utt=True)
            decoder.end_utt()
            return [seg.word for seg in decoder.seg() if seg.word in ARPABET]

    def identity(self) -> ModelIdentity:
        from omnieval.backends.assets import file_sha256

        digest = file_sha256(self.hmm / "mdef")[:16] + ":" + file_sha256(self.phone_lm)[:16]
        return ModelIdentity(self.name, str(self.hmm), digest, "allphone;lw=2.0;beam=1e-20;pbeam=1e-20")


class CtcPhones:
    """A local Hugging Face CTC phoneme model (IPA tokens separated by the tokenizer's delimiter)."""

    inventory: Inventory = "ipa"

    def __init__(self, source: str) -> None:
        path = Path(source).expanduser()
        self.name = f"ctc:{source}"
        self.source = str(path) if path.exists() else source
        try:
            from transformers import AutoModelForCTC, AutoProcessor

            from omnieval.backends.embeddings import quiet_transformers

            quiet_transformers()
            processor_cls: Any = AutoProcessor
            model_cls: Any = AutoModelForCTC
            self._processor: Any = processor_cls.from_pretrained(self.source, local_files_only=True)
            self._model: Any = model_cls.from_pretrained(self.source, local_files_only=True)
        except OSError as exc:
            raise ConfigError(f"CTC phoneme model {source!r} is not available locally: {exc}") from None
        self._model.eval()
        self._lock = threading.Lock()

    def recognize(self, wave_16k: npt.NDArray[np.float32]) -> list[str]:
        import torch

        with self._lock, torch.inference_mode():
            inputs = self._processor(
                np.asarray(wave_16k, dtype=np.float32), sampling_rate=16_000, return_tensors="pt"
            )
            ids = torch.argmax(self._model(inputs.input_values).logits, dim=-1)[0].tolist()
        tokenizer = getattr(self._processor, "tokenizer", self._processor)
        # Greedy CTC: merge repeats, drop blanks/specials and word delimiters; each token is one phone.
        collapsed = [tok for i, tok in enumerate(ids) if i == 0 or tok != ids[i - 1]]
        skip = set(getattr(tokenizer, "all_special_tokens", ())) | {
            "|",
            getattr(tokenizer, "word_delimiter_token", "|"),
        }
        tokens = tokenizer.convert_ids_to_tokens(collapsed)
        return normalize_ipa([str(t) for t in tokens if t is not None and str(t) not in skip])

    def identity(self) -> ModelIdentity:
        from omnieval.backends.assets import tree_sha256

        path = Path(self.source)
        digest = tree_sha256(path) if path.is_dir() else ""
        return ModelIdentity(self.name, self.source, digest, "greedy CTC")


@functools.lru_cache(maxsize=4)
def load_phone_recognizer(name: str = "pocketsphinx") -> PhoneRecognizer:
    """Build (once per process) the recognizer a config names."""
    if name == "pocketsphinx":
        return PocketSphinxPhones()
    if name.startswith("ctc:"):
        return CtcPhones(os.path.expanduser(name[4:]))
    raise ConfigError(f"unknown phone recognizer {name!r}; use 'pocketsphinx' or 'ctc:<local folder>'")
