"""Token embeddings for BERTScore: special-token weights, batching invariance, encoder resolution."""

from __future__ import annotations

import numpy as np
import pytest

from omnieval.errors import ConfigError


def test_custom_encoder_needs_layers() -> None:
    from omnieval.backends.embeddings import resolve_text_encoder

    with pytest.raises(ConfigError, match="num_layers"):
        resolve_text_encoder("/some/local/model")
    assert resolve_text_encoder("/some/local/model", 4).num_layers == 4
    assert resolve_text_encoder("roberta-large").num_layers == 17


@pytest.mark.slow
def test_minilm_embeddings_do_not_depend_on_batching() -> None:
    from omnieval.backends.embeddings import TokenEncoder, resolve_text_encoder

    texts = [
        "a short one",
        "A much longer sentence that forces padding in the batch.",
        "a short one",
        "mid length text",
    ]
    batched = TokenEncoder(resolve_text_encoder("minilm"), batch_size=8).embed(texts)
    single = TokenEncoder(resolve_text_encoder("minilm"), batch_size=1).embed(texts)
    for a, b in zip(batched, single, strict=True):
        np.testing.assert_allclose(a.vectors, b.vectors, atol=1e-4)
        assert a.weights[0] == 0.0 and a.weights[-1] == 0.0 and a.weights[1:-1].all()
        assert a.vectors.shape[1] == 384
    assert batched[0] is batched[2] or np.array_equal(batched[0].vectors, batched[2].vectors)


def test_missing_local_encoder_is_a_config_error(tmp_path: object) -> None:
    from omnieval.backends.embeddings import TextEncoderSpec, TokenEncoder

    encoder = TokenEncoder(TextEncoderSpec("absent", str(tmp_path) + "/absent-model", 2))
    with pytest.raises(ConfigError, match="not available locally"):
        encoder.embed(["hello"])
