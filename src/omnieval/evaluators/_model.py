"""The classifier: a trainable backbone over frames, masked mean pooling, a classification head.

Shapes: inputs ``x`` ``[batch, frames, dim]`` with a boolean ``mask`` ``[batch, frames]`` (True =
real frame). The backbone returns hidden frames ``[batch, frames', hidden]`` and their mask; the
head sees the mean of the valid hidden frames ``[batch, hidden]`` and returns logits
``[batch, classes]``. Parameters split into two groups, ``backbone`` and ``head``, trained at their own
learning rates (the paper's grid).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from omnieval.evaluators._network import HeadConfig, ProsodyBackbone, WavLMBackbone, WhisperBackbone

if TYPE_CHECKING:
    import torch
    from torch import nn


def masked_mean(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over valid frames: ``[B, T, D]`` and ``[B, T]`` -> ``[B, D]`` (empty rows give zeros)."""
    weights = mask.to(hidden.dtype).unsqueeze(-1)
    total = (hidden * weights).sum(dim=1)
    count = weights.sum(dim=1).clamp_min(1.0)
    return total / count


def pool_frames(x: torch.Tensor, mask: torch.Tensor, stride: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Average every ``stride`` consecutive valid frames: ``[B, T, D]`` -> ``[B, ceil(T / stride), D]``."""
    import torch

    batch, frames, dim = x.shape
    extra = (-frames) % stride
    if extra:
        x = torch.cat([x, x.new_zeros(batch, extra, dim)], dim=1)
        mask = torch.cat([mask, mask.new_zeros(batch, extra)], dim=1)
    weights = mask.to(x.dtype).reshape(batch, -1, stride, 1)
    total = (x.reshape(batch, -1, stride, dim) * weights).sum(dim=2)
    count = weights.sum(dim=2)
    return total / count.clamp_min(1.0), count[..., 0] > 0


def _modules() -> Any:
    """Build the torch module classes on first use, so importing this file does not import torch."""
    import torch
    from torch import nn

    class FrameAdapter(nn.Module):
        """Per-frame adapter over frozen frames (the CPU backbone's trainable part).

        The encoder part of a frame is layer-normalised (and optionally dropped out); the last
        ``passthrough`` values (prosody) join it unnormalised, so their absolute scale (a pitch in
        octaves) survives; then Linear and GELU.
        """

        def __init__(
            self, in_dim: int, out_dim: int, *, passthrough: int = 0, dropout: float = 0.0, stride: int = 1
        ) -> None:
            super().__init__()
            self.passthrough = passthrough
            self.stride = stride
            # All-passthrough input (prosody only) has nothing to normalise.
            self.norm = nn.LayerNorm(in_dim - passthrough) if in_dim > passthrough else nn.Identity()
            self.drop = nn.Dropout(dropout)
            self.proj = nn.Linear(in_dim, out_dim)
            self.out_dim = out_dim

        def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            if self.stride > 1:
                x, mask = pool_frames(x, mask, self.stride)
            if self.passthrough and self.passthrough == x.shape[-1]:
                joined = x
            elif self.passthrough:
                encoder, extra = x[..., : -self.passthrough], x[..., -self.passthrough :]
                joined = torch.cat([self.drop(self.norm(encoder)), extra], dim=-1)
            else:
                joined = self.drop(self.norm(x))
            return nn.functional.gelu(self.proj(joined)), mask

    class WavLMEncoder(nn.Module):
        """``transformers.WavLMModel`` on raw 16 kHz audio; frames at 50 per second."""

        def __init__(self, model: Any, *, normalize: bool) -> None:
            super().__init__()
            self.wavlm = model
            self.normalize = normalize
            self.out_dim = int(model.config.hidden_size)

        def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            wave = x[..., 0]
            if self.normalize:
                valid = mask.to(wave.dtype)
                count = valid.sum(dim=1, keepdim=True).clamp_min(1.0)
                mean = (wave * valid).sum(dim=1, keepdim=True) / count
                var = (((wave - mean) * valid) ** 2).sum(dim=1, keepdim=True) / count
                wave = (wave - mean) / torch.sqrt(var + 1e-7) * valid
            out = self.wavlm(input_values=wave, attention_mask=mask.long())
            hidden = out.last_hidden_state
            lengths = self.wavlm._get_feat_extract_output_lengths(mask.long().sum(dim=1))
            frames = torch.arange(hidden.shape[1], device=hidden.device)
            return hidden, frames[None, :] < lengths[:, None]

    class SpeechClassifier(nn.Module):
        """Backbone, masked mean pooling, head."""

        def __init__(self, backbone: nn.Module, hidden_dim: int, n_classes: int, head: HeadConfig) -> None:
            super().__init__()
            self.backbone = backbone
            if head.hidden > 0:
                self.head: nn.Module = nn.Sequential(
                    nn.Dropout(head.dropout),
                    nn.Linear(hidden_dim, head.hidden),
                    nn.ReLU(),
                    nn.Dropout(head.dropout),
                    nn.Linear(head.hidden, n_classes),
                )
            else:
                self.head = nn.Sequential(nn.Dropout(head.dropout), nn.Linear(hidden_dim, n_classes))

        def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            hidden, frame_mask = self.backbone(x, mask)
            logits: torch.Tensor = self.head(masked_mean(hidden, frame_mask))
            return logits

        def parameter_groups(self, head_lr: float, backbone_lr: float) -> list[dict[str, Any]]:
            backbone = [p for p in self.backbone.parameters() if p.requires_grad]
            groups = [{"params": list(self.head.parameters()), "lr": head_lr, "name": "head"}]
            if backbone:
                groups.append({"params": backbone, "lr": backbone_lr, "name": "backbone"})
            return groups

    return FrameAdapter, WavLMEncoder, SpeechClassifier


def build_wavlm(config: WavLMBackbone) -> Any:
    """``WavLMModel`` from local weights (``path``) or randomly initialised from ``config``."""
    from transformers import WavLMConfig, WavLMModel

    from omnieval.errors import OmnievalError

    if config.config is not None:
        model = WavLMModel(WavLMConfig(**config.config))
    else:
        assert config.path is not None
        if not (config.path / "config.json").is_file():
            raise OmnievalError(
                f"WavLM weights not found at {config.path} (a local folder with config.json and weights; "
                "omnieval never downloads them: fetch microsoft/wavlm-large on the GPU machine first)"
            )
        model = WavLMModel.from_pretrained(str(config.path), local_files_only=True)
    if config.freeze_feature_encoder:
        model.freeze_feature_encoder()  # type: ignore[no-untyped-call]
    if config.gradient_checkpointing:
        model.gradient_checkpointing_enable()  # type: ignore[no-untyped-call]
    return model


def build_classifier(
    backbone: WhisperBackbone | ProsodyBackbone | WavLMBackbone,
    frontend_dim: int,
    n_classes: int,
    head: HeadConfig,
    *,
    wavlm_model: Any = None,
) -> nn.Module:
    """The full trainable model for a backbone config.

    ``wavlm_model`` lets a caller pass an already built ``WavLMModel`` (loading a checkpoint rebuilds
    it from its saved config instead of the original weights).
    """
    frame_adapter, wavlm_encoder, speech_classifier = _modules()
    if isinstance(backbone, ProsodyBackbone):
        encoder = frame_adapter(
            frontend_dim, backbone.adapter_dim, passthrough=frontend_dim, stride=backbone.frame_stride
        )
    elif isinstance(backbone, WhisperBackbone):
        from omnieval.evaluators._prosody import PROSODY_DIM

        encoder = frame_adapter(
            frontend_dim,
            backbone.adapter_dim,
            passthrough=PROSODY_DIM if backbone.prosody else 0,
            dropout=backbone.encoder_dropout,
            stride=backbone.frame_stride,
        )
    else:
        encoder = wavlm_encoder(
            wavlm_model if wavlm_model is not None else build_wavlm(backbone), normalize=backbone.normalize
        )
    model: nn.Module = speech_classifier(encoder, encoder.out_dim, n_classes, head)
    return model
