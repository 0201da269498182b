"""Modality experts: ``espeak`` and ``piper`` on CPU, and the GPU experts (``diffusers``, ``parler``)
through their real code paths with tiny randomly initialised models built here.

The tiny models produce noise, but real files: a two-block Stable Diffusion pipeline (text-to-image,
and image+prompt through its image-to-image sibling) and a one-layer VITS text-to-waveform model
(the transformers path of ``parler``). An orchestration system using them writes a candidate folder
that passes the candidates gate, loading each expert once per ``generate`` call and releasing it
afterwards. The Parler-TTS path itself needs the ``parler_tts`` package, which is not installed
here: only its clear failure and its description text are tested.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Literal

import pytest

from omnieval.backends.llm import ChatRequest
from omnieval.candidates import Modality, read_candidate
from omnieval.systems import PLANNING_CODE, GenerationRequest
from omnieval.systems.experts import (
    DiffusersConfig,
    EspeakConfig,
    ExpertError,
    ImageRequest,
    ParlerConfig,
    PiperConfig,
    SpeechPlan,
    image_expert,
    speech_expert,
)
from omnieval.systems.experts._parler import description_for

ROOT = Path(__file__).resolve().parents[2]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- espeak ---------------------------------------------------------------------------------------
def test_espeak_speaks_the_plan_and_says_emotion_is_not_rendered(tmp_path: Path) -> None:
    import soundfile as sf

    expert = speech_expert(EspeakConfig(controlled_rate=False))
    facts = expert.speak(SpeechPlan("We made it home!", "happy", "male", "fast", "high"), tmp_path / "s.wav")
    assert sf.info(str(tmp_path / "s.wav")).frames > 0
    assert facts["not_rendered"] == ["emotion"]
    assert "+m" in " ".join(facts["command"])  # the male voice variant
    with pytest.raises(ExpertError, match="unknown speed label"):
        expert.speak(SpeechPlan("Hi there", speed="hurried"), tmp_path / "t.wav")


def test_piper_renders_speed_and_pitch_and_says_what_it_cannot(tmp_path: Path) -> None:
    import numpy as np
    import parselmouth
    import soundfile as sf

    expert = speech_expert(PiperConfig())
    line = "The lantern swung as we walked down to the harbour at dusk."
    facts = {
        label: expert.speak(SpeechPlan(line, "neutral", "male", speed, pitch), tmp_path / f"{label}.wav")
        for label, speed, pitch in (("slow", "slow", "normal"), ("fast", "fast", "normal"),
                                    ("low", "normal", "low"), ("high", "normal", "high"))
    }  # fmt: skip
    expert.close()
    seconds = {k: sf.info(str(tmp_path / f"{k}.wav")).duration for k in facts}
    assert seconds["slow"] > 1.5 * seconds["fast"]

    def median_f0(name: str) -> float:
        pitch = parselmouth.Sound(str(tmp_path / f"{name}.wav")).to_pitch()
        f0 = pitch.selected_array["frequency"]
        return float(np.median(f0[f0 > 0]))

    # +-3 semitones apart: the high clip is ~1.4x the low clip's median F0.
    assert median_f0("high") > 1.25 * median_f0("low")
    assert facts["slow"]["not_rendered"] == []
    female = expert.speak(SpeechPlan(line, "sad", "female"), tmp_path / "f.wav")
    assert female["not_rendered"] == ["gender", "emotion"]
    assert "voice_sha256" in expert.identity()
    # Sampling noise is off by default: the same plan gives the same audio (the cache relies on it).
    expert.speak(SpeechPlan(line, "neutral", "male", "slow", "normal"), tmp_path / "again.wav")
    assert _sha(tmp_path / "again.wav") == _sha(tmp_path / "slow.wav")


# -- tiny GPU-class models built here -------------------------------------------------------------
def _tiny_diffusion(folder: Path) -> Path:
    """A two-block Stable Diffusion pipeline with a character-level CLIP tokenizer, saved to ``folder``."""
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    chars = list(bytes_to_unicode().values())  # type: ignore[no-untyped-call]
    vocab = {c: i for i, c in enumerate(chars)}
    vocab.update({c + "</w>": len(chars) + i for i, c in enumerate(chars)})
    vocab["<|startoftext|>"], vocab["<|endoftext|>"] = len(vocab), len(vocab) + 1
    torch.manual_seed(0)
    unet = UNet2DConditionModel(  # type: ignore[no-untyped-call]
        block_out_channels=(4, 8),
        layers_per_block=1,
        sample_size=8,
        in_channels=4,
        out_channels=4,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=8,
        norm_num_groups=2,
        attention_head_dim=2,
    )
    vae = AutoencoderKL(  # type: ignore[no-untyped-call]
        block_out_channels=[4, 8],
        in_channels=3,
        out_channels=3,
        down_block_types=["DownEncoderBlock2D"] * 2,
        up_block_types=["UpDecoderBlock2D"] * 2,
        latent_channels=4,
        norm_num_groups=2,
    )
    text = CLIPTextModel(
        CLIPTextConfig(
            bos_token_id=vocab["<|startoftext|>"],
            eos_token_id=vocab["<|endoftext|>"],
            pad_token_id=vocab["<|endoftext|>"],
            hidden_size=8,
            intermediate_size=16,
            num_attention_heads=2,
            num_hidden_layers=2,
            vocab_size=len(vocab),
            max_position_embeddings=32,
        )
    )
    pipe = StableDiffusionPipeline(  # type: ignore[no-untyped-call]
        vae=vae,
        text_encoder=text,
        tokenizer=CLIPTokenizer(vocab=vocab, merges=[], model_max_length=32),
        unet=unet,
        scheduler=DDIMScheduler(clip_sample=False, steps_offset=1),  # type: ignore[no-untyped-call]
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    pipe.save_pretrained(folder)  # type: ignore[attr-defined]
    return folder


def _tiny_vits(folder: Path) -> Path:
    """A one-layer VITS text-to-waveform model with a character vocabulary, saved to ``folder``."""
    import torch
    from transformers import VitsConfig, VitsModel, VitsTokenizer

    chars = list(" abcdefghijklmnopqrstuvwxyz'.,!?-")
    folder.mkdir(parents=True)
    vocab_file = folder.parent / "vits_vocab.json"
    vocab_file.write_text(json.dumps({c: i for i, c in enumerate(chars)}), encoding="utf-8")
    torch.manual_seed(0)
    config = VitsConfig(
        vocab_size=len(chars),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        ffn_dim=16,
        flow_size=16,
        spectrogram_bins=17,
        upsample_initial_channel=16,
        upsample_rates=[4, 4],
        upsample_kernel_sizes=[8, 8],
        resblock_kernel_sizes=[3],
        resblock_dilation_sizes=[[1, 3]],
        prior_encoder_num_flows=1,
        prior_encoder_num_wavenet_layers=1,
        posterior_encoder_num_wavenet_layers=1,
        duration_predictor_filter_channels=16,
        depth_separable_num_layers=1,
        duration_predictor_num_flows=1,
        sampling_rate=16000,
    )
    VitsModel(config).save_pretrained(folder)
    VitsTokenizer(str(vocab_file), phonemize=False, add_blank=True).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny-models")
    return {"diffusion": _tiny_diffusion(root / "sd"), "vits": _tiny_vits(root / "vits")}


def _diffusers(path: Path, mode: Literal["text", "image_prompt"]) -> DiffusersConfig:
    return DiffusersConfig(
        model_path=str(path), mode=mode, device="cpu", dtype="float32", steps=2, height=32, width=32
    )


def test_diffusers_text_and_image_prompt_modes(tiny_models: dict[str, Path], tmp_path: Path) -> None:
    reference = next((ROOT / "data" / "storybench-sample" / "images").rglob("*.png"))
    text = image_expert(_diffusers(tiny_models["diffusion"], "text"))
    facts = text.render(ImageRequest("a fox in the forest", reference, 1), tmp_path / "t.png")
    assert facts["pipeline"] == "StableDiffusionPipeline"
    text.render(ImageRequest("a fox in the forest", reference, 1), tmp_path / "t2.png")
    assert _sha(tmp_path / "t.png") == _sha(tmp_path / "t2.png")  # seeded per example
    edit = image_expert(_diffusers(tiny_models["diffusion"], "image_prompt"))
    facts = edit.render(ImageRequest("the fox at night", reference, 1), tmp_path / "e.png")
    assert facts["pipeline"] == "StableDiffusionImg2ImgPipeline"
    with pytest.raises(ExpertError, match="needs the current page"):
        edit.render(ImageRequest("the fox at night", None, 1), tmp_path / "x.png")
    for expert in (text, edit):
        expert.close()
    assert len(text.identity()["weights_sha256"]) >= 3  # unet, vae, text encoder


def test_parler_transformers_path_speaks_with_the_planned_speed(
    tiny_models: dict[str, Path], tmp_path: Path
) -> None:
    import soundfile as sf

    config = ParlerConfig(model_path=str(tiny_models["vits"]), device="cpu", dtype="float32")
    expert = speech_expert(config)
    slow = expert.speak(SpeechPlan("come home now", speed="slow"), tmp_path / "slow.wav")
    expert.speak(SpeechPlan("come home now", speed="fast"), tmp_path / "fast.wav")
    assert slow["family"] == "transformers:VitsModel"
    assert slow["not_rendered"] == ["gender", "pitch", "emotion"]
    n_slow, n_fast = sf.info(str(tmp_path / "slow.wav")).frames, sf.info(str(tmp_path / "fast.wav")).frames
    assert n_slow > n_fast > 0  # speaking_rate follows the planned speed
    expert.close()


def test_parler_checkpoint_without_the_package_fails_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "config.json").write_text(
        json.dumps({"architectures": ["ParlerTTSForConditionalGeneration"]})
    )
    expert = speech_expert(ParlerConfig(model_path=str(tmp_path), device="cpu", dtype="float32"))
    # The package missing, whatever this environment has: None in sys.modules makes any import of
    # it raise ModuleNotFoundError, as on a machine without parler-tts.
    monkeypatch.setitem(sys.modules, "parler_tts", None)
    with pytest.raises(ImportError):
        import parler_tts  # noqa: F401
    with pytest.raises(ExpertError, match="parler_tts package is not installed"):
        expert.open()
    assert description_for(
        SpeechPlan("Hi", "sad", "female", "slow", "high"), ParlerConfig.model_fields["description"].default
    ) == (
        "A female speaker delivers a sad line at a slow pace with a high-pitched voice, "
        "in a very clear recording with no background noise."
    )


# -- an orchestration system on the tiny experts ---------------------------------------------------
def plan_script(request: ChatRequest) -> str:
    return json.dumps(
        {
            "narration": "The fox carried the lantern home through the dark wood.",
            "image_prompt": "Pip the fox carrying a lantern through a dark forest at night",
            "speech": {
                "text": "almost there",
                "emotion": "neutral",
                "gender": "male",
                "speed": "fast",
                "pitch": "low",
            },
        }
    )


def test_orchestration_with_gpu_class_experts_passes_the_candidates_gate(
    tiny_models: dict[str, Path],
    storybench_instances: tuple[Any, ...],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import diffusers
    import torch
    from transformers import AutoModelForTextToWaveform

    from omnieval.benchmarks import get_benchmark
    from omnieval.gates import gate_candidates
    from omnieval.systems.orchestration import OrchestrationConfig, OrchestrationSystem

    loads: list[str] = []
    released: list[int] = []
    real_pipe, real_tts = (
        diffusers.DiffusionPipeline.from_pretrained,
        AutoModelForTextToWaveform.from_pretrained,
    )

    def count_pipe(*args: Any, **kwargs: Any) -> Any:
        loads.append("image")
        return real_pipe(*args, **kwargs)  # type: ignore[no-untyped-call]

    def count_tts(*args: Any, **kwargs: Any) -> Any:
        loads.append("speech")
        return real_tts(*args, **kwargs)

    monkeypatch.setattr(diffusers.DiffusionPipeline, "from_pretrained", count_pipe)
    monkeypatch.setattr(AutoModelForTextToWaveform, "from_pretrained", count_tts)
    # As if on a GPU machine: memory is handed back between and after the experts.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: released.append(1))

    config = OrchestrationConfig.model_validate(
        {
            "kind": "orchestration",
            "planner": {
                "model": "scripted",
                "backend": {"kind": "scripted", "script": f"{__name__}:plan_script"},
            },
            "image": _diffusers(tiny_models["diffusion"], "image_prompt").model_dump(),
            "speech": {
                "name": "parler",
                "model_path": str(tiny_models["vits"]),
                "device": "cpu",
                "dtype": "float32",
            },
        }
    )
    bench = get_benchmark("storybench")
    system = OrchestrationSystem(config, system_id="gpu-class", cache_dir=tmp_path / "cache")
    n = 3
    summary = system.generate(
        GenerationRequest(
            storybench_instances[:n],
            tmp_path / "out",
            visible=bench.visible_task,
            modalities=bench.modalities,
        )
    )
    assert sorted(loads) == ["image", "speech"]  # each expert loaded once per generate call
    assert released and system.experts.image._pipe is None and system.experts.speech._model is None  # type: ignore[attr-defined]
    for index in range(n):
        for modality in (Modality.TEXT, Modality.IMAGE, Modality.SPEECH):
            assert read_candidate(tmp_path / "out", modality, index).present, (index, modality)
    gate = gate_candidates(tmp_path / "out", n, None, modalities=bench.modalities)
    assert gate.success, gate
    experts = summary.lineage["experts"]
    assert experts["image"]["runs_on"] == "gpu" and experts["speech"]["name"] == "parler"
    assert set(summary.lineage["generation"]["seconds"]) == {"plan", "text", "image", "speech"}


def test_an_expert_registered_outside_the_systems_package_keys_the_examples_by_its_own_code() -> None:
    # storybench registers ``drawn`` from its own package; the planning kinds' code digest must
    # follow that file without the systems package naming it.
    import omnieval
    import omnieval.benchmarks  # registers the benchmarks' experts
    from omnieval.systems.experts import IMAGE_EXPERTS, expert_code

    root = Path(omnieval.__file__).resolve().parent
    code = expert_code()
    drawn = Path(IMAGE_EXPERTS.get("drawn").__module__.replace(".", "/") + ".py")
    assert drawn.relative_to("omnieval").as_posix() in code
    assert code == tuple(sorted(code)) and all((root / path).is_file() for path in code)
    assert not any(path.startswith("benchmarks/") for path in PLANNING_CODE)
