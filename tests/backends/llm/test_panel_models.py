"""Every paper panel judge's architecture reaches ``generate`` through the transformers loading path.

The paper's judges are tens of gigabytes and live only on GPU machines. What can break long before
a GPU run is the code path: a checkpoint loaded through an auto class whose model has no
``generate`` (Audio Flamingo Next through ``AutoModel``), or an omni model whose ``generate``
ignores the request's token limit. So each architecture is built here from a tiny random config
made in code (no download, no hub), saved to a folder, loaded back by
:func:`load_generation_model` with ``model_class: auto`` (the backend's own loading step) and asked
for a few greedy tokens with the backend's generation arguments. Judges whose architecture
transformers cannot build (remote code only) must carry an ``unavailable`` reason in their panel,
which ``omnieval judge panels`` prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from omnieval.backends.llm import TransformersConfig
from omnieval.backends.llm._transformers import load_generation_model, text_generation_kwargs

ARCHITECTURES: dict[str, str] = {
    # panel A
    "Qwen/Qwen3-30B-A3B-Instruct-2507": "qwen3_moe",
    "Qwen/Qwen3-VL-32B-Instruct": "qwen3_vl",
    "nvidia/audio-flamingo-next-hf": "musicflamingo",
    "Qwen/Qwen3-Omni-30B-A3B-Instruct": "qwen3_omni_moe",
    # panel B (InternVL3.5: the checkpoint ships remote code; transformers' own InternVL class is the
    # same vision encoder + projector + Qwen3 decoder layout, which its -HF conversions load into)
    "ByteDance-Seed/Seed-OSS-36B-Instruct": "seed_oss",
    "OpenGVLab/InternVL3_5-38B-Instruct": "internvl",
    "nvidia/Nemotron-3-Nano-Omni-30B-A3B-Reasoning-BF16": "nemotron_h_omni",
    # panel C
    "LGAI-EXAONE/EXAONE-4.5-33B": "exaone4_5",
    "google/gemma-4-12B-it": "gemma4",
}
"""Hub id of each paper judge checked here -> the transformers model type of its architecture."""

TINY: dict[str, int] = {
    "vocab_size": 128,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "depth": 1,
    "num_heads": 2,
    "out_hidden_size": 32,
    "moe_intermediate_size": 16,
    "shared_expert_intermediate_size": 16,
    "moe_shared_expert_intermediate_size": 16,
    "num_experts": 4,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "projector_hidden_size": 32,
    "vision_hidden_size": 32,
    "d_model": 32,
    "encoder_layers": 1,
    "encoder_attention_heads": 2,
    "encoder_ffn_dim": 64,
    "output_dim": 32,
    "mamba_num_heads": 4,
    "mamba_head_dim": 8,
    "ssm_state_size": 8,
    "n_groups": 1,
    "hidden_size_per_layer_input": 8,
    "vocab_size_per_layer_input": 128,
    "num_kv_shared_layers": 0,
    "max_position_embeddings": 512,
}
"""Sizes every (sub-)config gets, whatever its architecture: a model of well under 10 M parameters."""


def _shrink(values: dict[str, Any]) -> dict[str, Any]:
    """The architecture's default config with every size made tiny, sub-configs included."""
    out = dict(values)
    for key, value in values.items():
        if key == "per_layer_config":
            out[key] = {}  # per-layer overrides name layer indices of the full-size model
        elif isinstance(value, dict) and key.endswith("_config"):
            out[key] = _shrink(value)
        elif key == "layer_types" and isinstance(value, list):
            out[key] = value[: TINY["num_hidden_layers"]]
        elif key in TINY and isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = TINY[key]
    return out


def tiny_config(model_type: str) -> Any:
    """A tiny random-weight config of ``model_type``, built in code from its defaults."""
    from transformers import AutoConfig

    values = _shrink(AutoConfig.for_model(model_type).to_dict())
    for key in ("model_type", "transformers_version", "architectures"):  # given by for_model / not needed
        values.pop(key, None)
    if model_type == "qwen3_omni_moe":
        # Judging needs the thinker (text out) only; the defaults leave two vision ids unset.
        values["enable_audio_output"] = False
        values["thinker_config"].update(vision_start_token_id=151652, vision_end_token_id=151653)
    return AutoConfig.for_model(model_type, **values)


def tiny_checkpoint(model_type: str, folder: Path) -> Path:
    """Save a randomly initialised tiny model of ``model_type`` the way a hub snapshot is laid out."""
    import torch
    import transformers

    config = tiny_config(model_type)
    torch.manual_seed(0)
    for name in ("AutoModelForMultimodalLM", "AutoModelForSeq2SeqLM", "AutoModelForCausalLM"):
        auto_class = getattr(transformers, name)
        if type(config) in auto_class._model_mapping:
            auto_class.from_config(config).save_pretrained(folder)
            return folder
    raise AssertionError(f"{model_type}: no generation class to build the tiny model with")


@pytest.mark.parametrize("hub_id", sorted(ARCHITECTURES))
def test_paper_judge_architecture_reaches_generate(hub_id: str, tmp_path: Path) -> None:
    import torch

    model_type = ARCHITECTURES[hub_id]
    path = tiny_checkpoint(model_type, tmp_path / model_type)
    backend_config = TransformersConfig(model_path=str(path), model_class="auto", dtype="float32")
    model = load_generation_model(path, backend_config)
    assert callable(model.generate)
    prompt = torch.tensor([[1, 5, 7, 9]])
    # The backend's greedy arguments (TransformersChatBackend.chat), for a 3-token answer.
    generate = {"max_new_tokens": 3, "do_sample": False, "repetition_penalty": 1.0, "pad_token_id": 0}
    with torch.inference_mode():
        output = model.generate(
            input_ids=prompt,
            attention_mask=torch.ones_like(prompt),
            **text_generation_kwargs(model, generate),
        )
    assert isinstance(output, torch.Tensor)
    new_tokens = output[0, prompt.shape[-1] :]
    # The request's limit holds (an omni model's own default would have run to 1024 tokens).
    assert 1 <= len(new_tokens) <= 3
    assert output[0, : prompt.shape[-1]].tolist() == prompt[0].tolist()


def test_audio_flamingo_next_does_not_load_as_a_bare_backbone(tmp_path: Path) -> None:
    """The defect this file was written for: ``AutoModel`` builds MusicFlamingoModel, which cannot generate."""
    import transformers

    path = tiny_checkpoint("musicflamingo", tmp_path / "af-next")
    bare = transformers.AutoModel.from_pretrained(path, local_files_only=True)
    assert not callable(getattr(bare, "generate", None)) or not hasattr(bare, "lm_head")
    model = load_generation_model(path, TransformersConfig(model_path=str(path), model_class="auto"))
    assert type(model).__name__ == "MusicFlamingoForConditionalGeneration"


def _shipped_judges() -> list[tuple[str, str, Any]]:
    """(panel, role, judge config) of every judge and repair model in every shipped panel."""
    import omnieval.benchmarks  # noqa: F401  (registers the storybench panels)
    from omnieval.benchmarks.prism._judge import load_prism_panel, prism_panel_names
    from omnieval.judges import load_panel, panel_names

    found: list[tuple[str, str, Any]] = []
    for name in panel_names():
        panel = load_panel(name)
        found += [(name, track, judge) for track, judge in panel.judges()]
        if panel.repair is not None:
            found.append((name, "repair", panel.repair))
    for name in prism_panel_names():
        prism = load_prism_panel(name)
        found += [(name, "judge", judge) for judge in prism.judges]
        if prism.repair is not None:
            found.append((name, "repair", prism.repair))
    return found


def test_every_shipped_judge_is_checked_here_or_marked_unavailable() -> None:
    """A panel judge served from hub weights (vLLM, an OpenAI-compatible server, transformers) either
    has its architecture in :data:`ARCHITECTURES` or says in its panel why it cannot be built here."""
    unchecked = []
    for panel, role, judge in _shipped_judges():
        if judge.backend.kind not in ("vllm", "openai", "transformers"):
            continue  # llama.cpp GGUFs run in the CPU tests; hosted Gemini has no local weights
        if judge.model in ARCHITECTURES:
            assert not judge.unavailable, (
                f"{panel}/{role}: {judge.id} is checked here, yet marked unavailable"
            )
        elif not judge.unavailable:
            unchecked.append(f"{panel}/{role}: {judge.id}")
    assert not unchecked, "judges neither checked on a tiny model nor marked unavailable: " + ", ".join(
        unchecked
    )


def test_judge_panels_lists_the_unbuildable_judges_with_their_reason(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from omnieval.cli import main

    assert main(["judge", "panels", "--json"]) == 0
    import json

    described = {p["name"]: p for p in json.loads(capsys.readouterr().out)}
    reasons = {
        j["id"]: j.get("unavailable", "") for t in described["paper"]["tracks"].values() for j in t["judges"]
    }
    for judge_id in (
        "moonshotai/Kimi-Audio-7B-Instruct",
        "OpenMOSS-Team/MOSS-Audio-8B-Instruct",
        "nvidia/Llama-3_3-Nemotron-Super-49B-v1_5",
    ):
        assert "remote code" in reasons[judge_id] and "vLLM" in reasons[judge_id]
    assert all(not reasons[hub_id] for hub_id in ARCHITECTURES if hub_id in reasons)
