"""Byte identity of what storybench's wording and story data produce, pinned before they moved to files.

Every golden below was computed at the commit before the rubrics moved to ``templates/judge/`` and
the books to ``_sample/books.yaml`` (issue 41, "data as data"): the rendered chat of every judge
of every shipped panel on three sample rows, the request part of each judge's cache key, each
template's strings, every file the sample generator writes, and the pictures of the ``drawn`` image
expert (it paints from the books; recorded from an archive of that commit). A change here is a
change in outputs (prompt hashes in lineage, judge cache keys, sample bytes, candidates) and must
be deliberate.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

from omnieval.backends.llm import ChatRequest
from omnieval.benchmarks.storybench._record import load_storybench
from omnieval.benchmarks.storybench._rubrics import TEMPLATES
from omnieval.benchmarks.storybench._sample import build_rows, write_sample
from omnieval.benchmarks.storybench._tracks import PANELS, page_turn_inputs
from omnieval.judges import cache_key, load_panel, template, verdict_schema
from omnieval.judges._cache import MediaHasher, messages_material, request_material
from omnieval.judges._render import render_messages
from omnieval.systems.experts import DrawnConfig, ImageRequest, image_expert

COMMITTED = Path(__file__).resolve().parents[3] / "data" / "storybench-sample"
ROWS = (0, 7, 19)
"""Sample rows rendered: the first book's first turn, a middle one, the last book's last turn."""

ANALYSIS: dict[str, object] = {
    "status": "ok",
    "transcript": "Look, Hazel! It's shining again.",
    "duration_s": 2.31,
    "pitch": "high",
    "f0_median_hz": 251.7,
    "speed": "fast",
    "words_per_second": 3.9,
    "gender": "male",
    "emotion": None,
}
"""A fixed measured analysis for the speech cascade prompts (the describer is not under test)."""
IMAGE_ANALYSIS: dict[str, object] = {
    "size": [256, 256],
    "brightness": 0.5213,
    "contrast": 0.1874,
    "neighbour_correlation": 0.9912,
    "kind": "picture",
    "similarity_to_reference": 0.7472,
    "similarity_to_current": 0.8434,
    "reference_similarity_to_current": 0.8727,
    "backbone": "efficientnet-lite0",
}
"""A fixed image analysis for the image and integrated cascade prompts (the describer is not under test)."""


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def rendered_prompts() -> dict[str, tuple[str, str]]:
    """``panel/track/judge/row`` -> (sha256 of the rendered messages, request part of the cache key).

    The candidate of row ``i`` is another row's next page (text, image) and that row's image file as
    the audio attachment (attachments enter messages and keys by content hash only).
    """
    dataset = load_storybench(COMMITTED)
    items = list(dataset)
    hasher = MediaHasher()
    out: dict[str, tuple[str, str]] = {}
    for panel_name in PANELS:
        panel = load_panel(panel_name)
        for track_name, judge in panel.judges():
            cfg = panel.tracks[track_name]
            tpl = template(track_name, cfg.variant)
            framing = judge.framing
            schema = (
                verdict_schema(
                    track_name,
                    rationale_max_chars=framing.rationale_max_chars,
                    rationale_first=framing.rationale_first,
                )
                if framing.schema_constrained
                else None
            )
            for i in ROWS:
                other = items[(i + 5) % len(items)]
                inputs = dataclasses.replace(
                    page_turn_inputs(items[i]),
                    candidate_text=other.next_text,
                    candidate_image=other.next_image,
                    candidate_audio=other.current_image,
                    candidate_audio_analysis=ANALYSIS if cfg.input == "cascade" else None,
                    candidate_image_analysis=IMAGE_ANALYSIS if cfg.input == "cascade" else None,
                )
                request = ChatRequest(
                    messages=render_messages(tpl, inputs, framing),
                    decoding=judge.decoding,
                    json_schema=schema,
                    chat_template_kwargs=dict(framing.chat_template_kwargs),
                )
                messages = json.dumps(messages_material(request, hasher), ensure_ascii=False, sort_keys=True)
                key = cache_key(prompt_sha256=tpl.sha256(), request=request_material(request, hasher))
                out[f"{panel_name}/{track_name}/{judge.id}/{i}"] = (_sha(messages), key)
    return out


def template_strings() -> dict[str, str]:
    """``track/variant`` -> sha256 of the template's fields as JSON (every string, in order)."""
    return {
        f"{t}/{v}": _sha(json.dumps(dataclasses.asdict(tpl), ensure_ascii=False, sort_keys=True))
        for (t, v), tpl in TEMPLATES.items()
    }


def sample_files(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``root``."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


GOLDEN_PROMPTS: dict[str, tuple[str, str]] = {
    "cpu/speech/cpu-qwen2.5-coder-1.5b/0": (
        "0c51dfb911179fc828b47b38f977adea6174c3e256755b628d7252aedcbf6206",
        "0e0bedcf8188f7054c27d6bc2e041c978e7885cd9efbefb65c16c83be8b0ca7a",
    ),
    "cpu/speech/cpu-qwen2.5-coder-1.5b/19": (
        "9f4e29ca6cf2f4c9a7cfbfdc3d3a7cbe184d29f199a37a12e55e8dfa66923273",
        "5f8b742aec885591aca63934c494eee63138ef54bb409f9dae5c1bf42cd5cae9",
    ),
    "cpu/speech/cpu-qwen2.5-coder-1.5b/7": (
        "20d43b14cb5826eb6f8f6e540b719f82de02ba7c8e6adab9c07798134c1c0994",
        "cf547e151a3ee55c9efb3c25ee11f909900a0f75fab0f1d0ab5ef9c6016c9108",
    ),
    "cpu/text/cpu-qwen2.5-coder-1.5b/0": (
        "4666e9acec75910ef51c871a256accf61e7c16fb4c414d8055b8b8a95fc692da",
        "f03fe130a4650cf830bb55b9ffd2b0c33bf363837f46b3537864d5fcc54e4ca5",
    ),
    "cpu/text/cpu-qwen2.5-coder-1.5b/19": (
        "358186e6977396248490a1f8dcb84ba48c05a7f43b519c28b7cdd4d08e1a91fa",
        "92080954ed0647c080a08b011630836827cd88aa18d83ddee56083461681c35e",
    ),
    "cpu/text/cpu-qwen2.5-coder-1.5b/7": (
        "6d9fcefe7ff06e4c01015e5b257696d5aad235150dc28173d1217adf01b486d1",
        "8ed3803c576e9f6d2c5f2a982b6ba60ffbdbc214f04b3ae6ffa7c90937831c05",
    ),
    "paper-a/image/Qwen/Qwen3-VL-32B-Instruct/0": (
        "9b94cc7f3bb264a7659014f954132e8ed7654d979ae3da342b8dc398fc474058",
        "6acac38925de1a4aceadd0bf4ef73583a6f5c65f178082665f390fda0c15f1bb",
    ),
    "paper-a/image/Qwen/Qwen3-VL-32B-Instruct/19": (
        "14ecd3083836b582fa8891e471885d793cf174645168ab2f9dee759b4217736c",
        "77dccc85917963f75127b99abcb8ac7bea4448fe0c9b7540baea4b3e213930e7",
    ),
    "paper-a/image/Qwen/Qwen3-VL-32B-Instruct/7": (
        "91825d27a6a8597e8548e66ac62a0361eb42dcc8a0a8214c85e2ef7661b28186",
        "1f5bec26efcaa150f5f680c0e83aeedd6545d74f0edd6655a26b0a36b9034707",
    ),
    "paper-a/integrated/Qwen/Qwen3-Omni-30B-A3B-Instruct/0": (
        "2932afa5ecd47e92a39f3f4a0d461d278372066525c7a3f2f424e24087ec7f75",
        "97bf33c79dc8f45ba9f26f0d51b9dbc5f3c1dc10f9535b5e9c56e9b3d66887c6",
    ),
    "paper-a/integrated/Qwen/Qwen3-Omni-30B-A3B-Instruct/19": (
        "898b580e7d0ef192ffc1e63bd96e9f50c61c1646811c94449587a710f0bb8180",
        "e8559263985be6f2ef53f9d8ef6645f965c1f66e32585b6e17d7e1147e242821",
    ),
    "paper-a/integrated/Qwen/Qwen3-Omni-30B-A3B-Instruct/7": (
        "ec03154fc1b80f00217beb1b991e121214edd7312928eaca54cbcfc5f7fbc4f5",
        "4cb87b95bb8289bf65e52adad2eac112e12ac38019dd5496d7c4337b9faf5721",
    ),
    "paper-a/speech/nvidia/audio-flamingo-next-hf/0": (
        "601b786a8c489729b063bdc7b26d9eca05dafea781abac780e4a7f28cccf7f96",
        "149ec72f9317f62dfa2e976ed3f8ffea0329ea3c469e49aa3f98ff8b843d5f55",
    ),
    "paper-a/speech/nvidia/audio-flamingo-next-hf/19": (
        "fd245b88b1ce1a4acbeb511d9c802f84f9ba64d00296fd5be27c14fc115f9ffe",
        "535d675530ec68f1dc5b1dcbd5ad66d1c33751b01df76825062d19675e609678",
    ),
    "paper-a/speech/nvidia/audio-flamingo-next-hf/7": (
        "3af84c0f1cc766c3ab0f78661aa2aa19b218170ae258b665455240df764743a8",
        "47f61b06dc1379b8ce91d0b4e9781f9ca6d442d2d79a4a8cc83d30b8f1242e95",
    ),
    "paper-a/text/Qwen/Qwen3-30B-A3B-Instruct-2507/0": (
        "8bc13173f835d43fbe2f94fb1c186ec4ccc85a6e63552a310ce445f263082882",
        "33a4a778d10c02156cc7faf698e13b9a794098f20636ba26387f315a1cd1d2fc",
    ),
    "paper-a/text/Qwen/Qwen3-30B-A3B-Instruct-2507/19": (
        "e19a35443a9a26e8ff130c4f7b7e88db42bf98ef71ebe66e25a86fb1abab3628",
        "827fddb14143669da113b55dbcba432aa45e67590495b2c697b224cdfe3f0ee5",
    ),
    "paper-a/text/Qwen/Qwen3-30B-A3B-Instruct-2507/7": (
        "9f053a66db483881c0c74f06690a3559165a7f12ffa526a7e9bc3c4d32b4c5ca",
        "88155213769eebcc1e9f67ef4c991c9a483ebcbd43e574eed2d6459e38d8aefc",
    ),
    "paper-b/image/OpenGVLab/InternVL3_5-38B-Instruct/0": (
        "9b94cc7f3bb264a7659014f954132e8ed7654d979ae3da342b8dc398fc474058",
        "6acac38925de1a4aceadd0bf4ef73583a6f5c65f178082665f390fda0c15f1bb",
    ),
    "paper-b/image/OpenGVLab/InternVL3_5-38B-Instruct/19": (
        "14ecd3083836b582fa8891e471885d793cf174645168ab2f9dee759b4217736c",
        "77dccc85917963f75127b99abcb8ac7bea4448fe0c9b7540baea4b3e213930e7",
    ),
    "paper-b/image/OpenGVLab/InternVL3_5-38B-Instruct/7": (
        "91825d27a6a8597e8548e66ac62a0361eb42dcc8a0a8214c85e2ef7661b28186",
        "1f5bec26efcaa150f5f680c0e83aeedd6545d74f0edd6655a26b0a36b9034707",
    ),
    "paper-b/integrated/nvidia/Nemotron-3-Nano-Omni-30B-A3B-Reasoning-BF16/0": (
        "2932afa5ecd47e92a39f3f4a0d461d278372066525c7a3f2f424e24087ec7f75",
        "6f413ad3dc18bea7a9ff1cfe2e6fafd1fdf22900afd76fe5660426d6ab7622c7",
    ),
    "paper-b/integrated/nvidia/Nemotron-3-Nano-Omni-30B-A3B-Reasoning-BF16/19": (
        "898b580e7d0ef192ffc1e63bd96e9f50c61c1646811c94449587a710f0bb8180",
        "56bcc6f187bb4060e879afeeaad1aed4b136d589f5ea789b465eefadf919abbb",
    ),
    "paper-b/integrated/nvidia/Nemotron-3-Nano-Omni-30B-A3B-Reasoning-BF16/7": (
        "ec03154fc1b80f00217beb1b991e121214edd7312928eaca54cbcfc5f7fbc4f5",
        "1bed136986eae959d0c9abc9f58a4f426df13350fb054119c736656358c2d1fc",
    ),
    "paper-b/speech/OpenMOSS-Team/MOSS-Audio-8B-Instruct/0": (
        "514714a67c8a4d102385454d6a2d5378556fbb72199a793bd7c58df355bc607b",
        "f0e80f2f17d5fb45224178db3915394957763b5ee59a9084f8da8f3b1b1e1860",
    ),
    "paper-b/speech/OpenMOSS-Team/MOSS-Audio-8B-Instruct/19": (
        "e2c4ab00f27e2b6273295fc6b390cde22cd1427333de2fc689c03992189c2f3a",
        "13fbaefe4c2d3bbd41f0f6c9d64283b62c54ee5d430aa35f5ec309f845128974",
    ),
    "paper-b/speech/OpenMOSS-Team/MOSS-Audio-8B-Instruct/7": (
        "9e040d88018b3ed5940db8e6aa6d6d7799674157ab900009064b855dd07a5343",
        "7a9dff723d4435c96f9a5a1babd4fb42ad1a0f372e2a093fed1c4f7b4b1997aa",
    ),
    "paper-b/text/ByteDance-Seed/Seed-OSS-36B-Instruct/0": (
        "8bc13173f835d43fbe2f94fb1c186ec4ccc85a6e63552a310ce445f263082882",
        "e6f56185957731643f0fa8bc6085addf132e1e663ced22d690e6c6a7c67d40a4",
    ),
    "paper-b/text/ByteDance-Seed/Seed-OSS-36B-Instruct/19": (
        "e19a35443a9a26e8ff130c4f7b7e88db42bf98ef71ebe66e25a86fb1abab3628",
        "0c8c49ba62de2b3011ce30c8eafc62cec7e1a215d1494fb4f30d1ee195c22957",
    ),
    "paper-b/text/ByteDance-Seed/Seed-OSS-36B-Instruct/7": (
        "9f053a66db483881c0c74f06690a3559165a7f12ffa526a7e9bc3c4d32b4c5ca",
        "7b81ad8c63029668881a24701518b16ddbc4c1b36a647c4ae376376ead38085e",
    ),
    "paper-c/image/LGAI-EXAONE/EXAONE-4.5-33B/0": (
        "9b94cc7f3bb264a7659014f954132e8ed7654d979ae3da342b8dc398fc474058",
        "ed981765a6792d4b74375feb5687d661dea88a16e37f75e46033edf758666a38",
    ),
    "paper-c/image/LGAI-EXAONE/EXAONE-4.5-33B/19": (
        "14ecd3083836b582fa8891e471885d793cf174645168ab2f9dee759b4217736c",
        "e0b3650cec181a30be405249700a8855dd7f72e8813871e0c5238a03b7c7d0ac",
    ),
    "paper-c/image/LGAI-EXAONE/EXAONE-4.5-33B/7": (
        "91825d27a6a8597e8548e66ac62a0361eb42dcc8a0a8214c85e2ef7661b28186",
        "e6141983efcfb25308be4384a187f203d16ee64f9393e44e5aa3cdf2f9d13f2b",
    ),
    "paper-c/integrated/google/gemma-4-12B-it/0": (
        "9b9cfdb9bec7eef9c06a439e7ded7e8aec3c461942e1a876896c17abd77a06f6",
        "f10b8d27de113d87c606c58faed6ebc4735775db86ca2e9ee09afe9274c9b59b",
    ),
    "paper-c/integrated/google/gemma-4-12B-it/19": (
        "fe27304e009bc033372052ba06f2c9bf077fd989cf63d97844d9c1a45e77c18b",
        "366ae3cf40a44289d7222a473afd7183a2065f7a3564b1b8f3fde609cc8586ed",
    ),
    "paper-c/integrated/google/gemma-4-12B-it/7": (
        "5277f965dce58e356493e8670bbd7a16cbd73d899511b3532e01525c3a651a70",
        "1ada4431ed904ea1902ee865e27d46b991dfc78f8482b8d95c3fd971b8f23bdd",
    ),
    "paper-c/speech/moonshotai/Kimi-Audio-7B-Instruct/0": (
        "601b786a8c489729b063bdc7b26d9eca05dafea781abac780e4a7f28cccf7f96",
        "9a74c2ca75e5800a6d6ed90c4decf238c9093467ccdafb7d0c1846eabffeaf69",
    ),
    "paper-c/speech/moonshotai/Kimi-Audio-7B-Instruct/19": (
        "fd245b88b1ce1a4acbeb511d9c802f84f9ba64d00296fd5be27c14fc115f9ffe",
        "6b2e6f88cb6f22c29d0c98a7527404d346a5656471f18cb8cfddcbea513b2680",
    ),
    "paper-c/speech/moonshotai/Kimi-Audio-7B-Instruct/7": (
        "3af84c0f1cc766c3ab0f78661aa2aa19b218170ae258b665455240df764743a8",
        "d786a0fc296c5a27b97a5fe234fdb1761205f57dc8eda1009dea561d81bef951",
    ),
    "paper-c/text/nvidia/Llama-3_3-Nemotron-Super-49B-v1_5/0": (
        "b7c5599c80b497f2b2e03dc40eebcfce9ab6e85c080b5588619c1d81f9213e1e",
        "e34cc514592a455c35bfdac94d5e66a693d4647d00ea15ccb0bb831b4d072705",
    ),
    "paper-c/text/nvidia/Llama-3_3-Nemotron-Super-49B-v1_5/19": (
        "bab0f37cdf3a7dbca69b37be8218b1e305aab7cae90e6e40213dea6e9acf1685",
        "cb13ca47da3a5c80b2a4b9732c23f5604a2944dab7ce7b197debdfae25313cf6",
    ),
    "paper-c/text/nvidia/Llama-3_3-Nemotron-Super-49B-v1_5/7": (
        "add511aff80998146f14be3697e2cb51cb524807acec607179e1e350c19f22ae",
        "92acc8641f660ed0a2b355f2f9966ca9c87fd528efa1881768022b21406aaaf4",
    ),
    "paper/image/LGAI-EXAONE/EXAONE-4.5-33B/0": (
        "9b94cc7f3bb264a7659014f954132e8ed7654d979ae3da342b8dc398fc474058",
        "ed981765a6792d4b74375feb5687d661dea88a16e37f75e46033edf758666a38",
    ),
    "paper/image/LGAI-EXAONE/EXAONE-4.5-33B/19": (
        "14ecd3083836b582fa8891e471885d793cf174645168ab2f9dee759b4217736c",
        "e0b3650cec181a30be405249700a8855dd7f72e8813871e0c5238a03b7c7d0ac",
    ),
    "paper/image/LGAI-EXAONE/EXAONE-4.5-33B/7": (
        "91825d27a6a8597e8548e66ac62a0361eb42dcc8a0a8214c85e2ef7661b28186",
        "e6141983efcfb25308be4384a187f203d16ee64f9393e44e5aa3cdf2f9d13f2b",
    ),
    "paper/image/OpenGVLab/InternVL3_5-38B-Instruct/0": (
        "9b94cc7f3bb264a7659014f954132e8ed7654d979ae3da342b8dc398fc474058",
        "6acac38925de1a4aceadd0bf4ef73583a6f5c65f178082665f390fda0c15f1bb",
    ),
    "paper/image/OpenGVLab/InternVL3_5-38B-Instruct/19": (
        "14ecd3083836b582fa8891e471885d793cf174645168ab2f9dee759b4217736c",
        "77dccc85917963f75127b99abcb8ac7bea4448fe0c9b7540baea4b3e213930e7",
    ),
    "paper/image/OpenGVLab/InternVL3_5-38B-Instruct/7": (
        "91825d27a6a8597e8548e66ac62a0361eb42dcc8a0a8214c85e2ef7661b28186",
        "1f5bec26efcaa150f5f680c0e83aeedd6545d74f0edd6655a26b0a36b9034707",
    ),
    "paper/image/Qwen/Qwen3-VL-32B-Instruct/0": (
        "9b94cc7f3bb264a7659014f954132e8ed7654d979ae3da342b8dc398fc474058",
        "6acac38925de1a4aceadd0bf4ef73583a6f5c65f178082665f390fda0c15f1bb",
    ),
    "paper/image/Qwen/Qwen3-VL-32B-Instruct/19": (
        "14ecd3083836b582fa8891e471885d793cf174645168ab2f9dee759b4217736c",
        "77dccc85917963f75127b99abcb8ac7bea4448fe0c9b7540baea4b3e213930e7",
    ),
    "paper/image/Qwen/Qwen3-VL-32B-Instruct/7": (
        "91825d27a6a8597e8548e66ac62a0361eb42dcc8a0a8214c85e2ef7661b28186",
        "1f5bec26efcaa150f5f680c0e83aeedd6545d74f0edd6655a26b0a36b9034707",
    ),
    "paper/integrated/Qwen/Qwen3-Omni-30B-A3B-Instruct/0": (
        "2932afa5ecd47e92a39f3f4a0d461d278372066525c7a3f2f424e24087ec7f75",
        "97bf33c79dc8f45ba9f26f0d51b9dbc5f3c1dc10f9535b5e9c56e9b3d66887c6",
    ),
    "paper/integrated/Qwen/Qwen3-Omni-30B-A3B-Instruct/19": (
        "898b580e7d0ef192ffc1e63bd96e9f50c61c1646811c94449587a710f0bb8180",
        "e8559263985be6f2ef53f9d8ef6645f965c1f66e32585b6e17d7e1147e242821",
    ),
    "paper/integrated/Qwen/Qwen3-Omni-30B-A3B-Instruct/7": (
        "ec03154fc1b80f00217beb1b991e121214edd7312928eaca54cbcfc5f7fbc4f5",
        "4cb87b95bb8289bf65e52adad2eac112e12ac38019dd5496d7c4337b9faf5721",
    ),
    "paper/integrated/google/gemma-4-12B-it/0": (
        "9b9cfdb9bec7eef9c06a439e7ded7e8aec3c461942e1a876896c17abd77a06f6",
        "f10b8d27de113d87c606c58faed6ebc4735775db86ca2e9ee09afe9274c9b59b",
    ),
    "paper/integrated/google/gemma-4-12B-it/19": (
        "fe27304e009bc033372052ba06f2c9bf077fd989cf63d97844d9c1a45e77c18b",
        "366ae3cf40a44289d7222a473afd7183a2065f7a3564b1b8f3fde609cc8586ed",
    ),
    "paper/integrated/google/gemma-4-12B-it/7": (
        "5277f965dce58e356493e8670bbd7a16cbd73d899511b3532e01525c3a651a70",
        "1ada4431ed904ea1902ee865e27d46b991dfc78f8482b8d95c3fd971b8f23bdd",
    ),
    "paper/integrated/nvidia/Nemotron-3-Nano-Omni-30B-A3B-Reasoning-BF16/0": (
        "2932afa5ecd47e92a39f3f4a0d461d278372066525c7a3f2f424e24087ec7f75",
        "6f413ad3dc18bea7a9ff1cfe2e6fafd1fdf22900afd76fe5660426d6ab7622c7",
    ),
    "paper/integrated/nvidia/Nemotron-3-Nano-Omni-30B-A3B-Reasoning-BF16/19": (
        "898b580e7d0ef192ffc1e63bd96e9f50c61c1646811c94449587a710f0bb8180",
        "56bcc6f187bb4060e879afeeaad1aed4b136d589f5ea789b465eefadf919abbb",
    ),
    "paper/integrated/nvidia/Nemotron-3-Nano-Omni-30B-A3B-Reasoning-BF16/7": (
        "ec03154fc1b80f00217beb1b991e121214edd7312928eaca54cbcfc5f7fbc4f5",
        "1bed136986eae959d0c9abc9f58a4f426df13350fb054119c736656358c2d1fc",
    ),
    "paper/speech/OpenMOSS-Team/MOSS-Audio-8B-Instruct/0": (
        "514714a67c8a4d102385454d6a2d5378556fbb72199a793bd7c58df355bc607b",
        "f0e80f2f17d5fb45224178db3915394957763b5ee59a9084f8da8f3b1b1e1860",
    ),
    "paper/speech/OpenMOSS-Team/MOSS-Audio-8B-Instruct/19": (
        "e2c4ab00f27e2b6273295fc6b390cde22cd1427333de2fc689c03992189c2f3a",
        "13fbaefe4c2d3bbd41f0f6c9d64283b62c54ee5d430aa35f5ec309f845128974",
    ),
    "paper/speech/OpenMOSS-Team/MOSS-Audio-8B-Instruct/7": (
        "9e040d88018b3ed5940db8e6aa6d6d7799674157ab900009064b855dd07a5343",
        "7a9dff723d4435c96f9a5a1babd4fb42ad1a0f372e2a093fed1c4f7b4b1997aa",
    ),
    "paper/speech/moonshotai/Kimi-Audio-7B-Instruct/0": (
        "601b786a8c489729b063bdc7b26d9eca05dafea781abac780e4a7f28cccf7f96",
        "9a74c2ca75e5800a6d6ed90c4decf238c9093467ccdafb7d0c1846eabffeaf69",
    ),
    "paper/speech/moonshotai/Kimi-Audio-7B-Instruct/19": (
        "fd245b88b1ce1a4acbeb511d9c802f84f9ba64d00296fd5be27c14fc115f9ffe",
        "6b2e6f88cb6f22c29d0c98a7527404d346a5656471f18cb8cfddcbea513b2680",
    ),
    "paper/speech/moonshotai/Kimi-Audio-7B-Instruct/7": (
        "3af84c0f1cc766c3ab0f78661aa2aa19b218170ae258b665455240df764743a8",
        "d786a0fc296c5a27b97a5fe234fdb1761205f57dc8eda1009dea561d81bef951",
    ),
    "paper/speech/nvidia/audio-flamingo-next-hf/0": (
        "601b786a8c489729b063bdc7b26d9eca05dafea781abac780e4a7f28cccf7f96",
        "149ec72f9317f62dfa2e976ed3f8ffea0329ea3c469e49aa3f98ff8b843d5f55",
    ),
    "paper/speech/nvidia/audio-flamingo-next-hf/19": (
        "fd245b88b1ce1a4acbeb511d9c802f84f9ba64d00296fd5be27c14fc115f9ffe",
        "535d675530ec68f1dc5b1dcbd5ad66d1c33751b01df76825062d19675e609678",
    ),
    "paper/speech/nvidia/audio-flamingo-next-hf/7": (
        "3af84c0f1cc766c3ab0f78661aa2aa19b218170ae258b665455240df764743a8",
        "47f61b06dc1379b8ce91d0b4e9781f9ca6d442d2d79a4a8cc83d30b8f1242e95",
    ),
    "paper/text/ByteDance-Seed/Seed-OSS-36B-Instruct/0": (
        "8bc13173f835d43fbe2f94fb1c186ec4ccc85a6e63552a310ce445f263082882",
        "e6f56185957731643f0fa8bc6085addf132e1e663ced22d690e6c6a7c67d40a4",
    ),
    "paper/text/ByteDance-Seed/Seed-OSS-36B-Instruct/19": (
        "e19a35443a9a26e8ff130c4f7b7e88db42bf98ef71ebe66e25a86fb1abab3628",
        "0c8c49ba62de2b3011ce30c8eafc62cec7e1a215d1494fb4f30d1ee195c22957",
    ),
    "paper/text/ByteDance-Seed/Seed-OSS-36B-Instruct/7": (
        "9f053a66db483881c0c74f06690a3559165a7f12ffa526a7e9bc3c4d32b4c5ca",
        "7b81ad8c63029668881a24701518b16ddbc4c1b36a647c4ae376376ead38085e",
    ),
    "paper/text/Qwen/Qwen3-30B-A3B-Instruct-2507/0": (
        "8bc13173f835d43fbe2f94fb1c186ec4ccc85a6e63552a310ce445f263082882",
        "33a4a778d10c02156cc7faf698e13b9a794098f20636ba26387f315a1cd1d2fc",
    ),
    "paper/text/Qwen/Qwen3-30B-A3B-Instruct-2507/19": (
        "e19a35443a9a26e8ff130c4f7b7e88db42bf98ef71ebe66e25a86fb1abab3628",
        "827fddb14143669da113b55dbcba432aa45e67590495b2c697b224cdfe3f0ee5",
    ),
    "paper/text/Qwen/Qwen3-30B-A3B-Instruct-2507/7": (
        "9f053a66db483881c0c74f06690a3559165a7f12ffa526a7e9bc3c4d32b4c5ca",
        "88155213769eebcc1e9f67ef4c991c9a483ebcbd43e574eed2d6459e38d8aefc",
    ),
    "paper/text/nvidia/Llama-3_3-Nemotron-Super-49B-v1_5/0": (
        "b7c5599c80b497f2b2e03dc40eebcfce9ab6e85c080b5588619c1d81f9213e1e",
        "e34cc514592a455c35bfdac94d5e66a693d4647d00ea15ccb0bb831b4d072705",
    ),
    "paper/text/nvidia/Llama-3_3-Nemotron-Super-49B-v1_5/19": (
        "bab0f37cdf3a7dbca69b37be8218b1e305aab7cae90e6e40213dea6e9acf1685",
        "cb13ca47da3a5c80b2a4b9732c23f5604a2944dab7ce7b197debdfae25313cf6",
    ),
    "paper/text/nvidia/Llama-3_3-Nemotron-Super-49B-v1_5/7": (
        "add511aff80998146f14be3697e2cb51cb524807acec607179e1e350c19f22ae",
        "92acc8641f660ed0a2b355f2f9966ca9c87fd528efa1881768022b21406aaaf4",
    ),
    "cpu/image/cpu-qwen2.5-coder-1.5b/0": (
        "a1753a944a62256d6e4d44e2286dbcec7d2ca8cd240e20c38d64dff57fec4ad3",
        "d5407a45f427c5c61ddd884c297acc2660a38a14d2f876b5e3aae605bf8c8720",
    ),
    "cpu/image/cpu-qwen2.5-coder-1.5b/19": (
        "eba87db192028d8770cfab45eccd1724e269de8c9d5ba685e0d79eb8b97aa8c9",
        "0096c3c1b6a983d640f0b49a0e50c1dbf1e821d8cf03eab52881595867f19f46",
    ),
    "cpu/image/cpu-qwen2.5-coder-1.5b/7": (
        "2abf2d020c4c87203da6eed9ad93edbe213898ec562e48c9eb4b2bd942faee07",
        "0611ebde682f595a29ce7366e0d3ccafce6d2e1908db83c764bc8c6499c2f5f0",
    ),
    "cpu/integrated/cpu-qwen2.5-coder-1.5b/0": (
        "a3c30c708363097f11af08ef5e720f1cdcbfbafa5bb5775da74f989c23901ba7",
        "c5e1457479799acd37d7a2cb23ec633219018306d4de4a5af98970e639e23cb4",
    ),
    "cpu/integrated/cpu-qwen2.5-coder-1.5b/19": (
        "3598eb9f40d804151b5b22556e3fb20afd35da2df0b0139ef3d1b45b26c519d6",
        "8d7bf115226290d9534f0b038d1660cbed139a03627baa725ddcb30b1f43baa8",
    ),
    "cpu/integrated/cpu-qwen2.5-coder-1.5b/7": (
        "0b67da0eee824229d15d500195511230e310acf06bc55cbf17169c4850569830",
        "519e9d189cf5d8c24ee5327aa971689530b271a6343afe20ec4dc7c8a367a789",
    ),
}
GOLDEN_TEMPLATE_STRINGS: dict[str, str] = {
    "image/cpu-cascade": "f5bbb23fa7b98f4c2d89015c90f0b57b92dfc0105c86178daded6cff74e31ef7",
    "integrated/cpu-cascade": "cf603a80adfc7167d6d19a76b8d430a6aec71d81531e4073a1fae819cecc1cc4",
    "image/native": "c2a9d30306647edac6e78b0a80e85c17a34714a343142d276b9623861d7aceab",
    "integrated/native": "88c37571a440134652a708e139cfa8013a81ab1129387cbb77ba42f75bf2f666",
    "speech/cascade": "17fdc178b1eb14d265d46d3b3c728cf9705c634d42bc2fe0b60f90a5be7daed6",
    "speech/cpu-cascade": "ed0d9edcac66a8d1abdb74274ca03efeff0564ad05ebd2d72248cc073dacf644",
    "speech/native": "5702c729a6210333b14d2cdd750a132b661b24fd8e726a889577e7c5d64ccec4",
    "text/cpu": "6fe0bcdbeb59ca2dd38bfdd0d18ecedbebbf63a1574b2e02ca3ad85fa726cf10",
    "text/native": "1df3e6374cb19ee25f0222351b0df55976ed19258c943b4bb69feb92fcf1e98f",
}
GOLDEN_ROWS_SHA256 = "f73566632b089cb62bf89474a921724a2b8cc2b8f00ddf82024a8838bda2e201"
GOLDEN_SAMPLE_FILES: dict[str, str] = {
    "README.md": "402bcdfdcd3b1b717f0e9c7dfcb39824b42c326b0330ecca0c73b92ed8bedd9e",
    "data/omni_storybench.parquet": "6d7ed664ac3b8cc8c8f4b105959fd13a59c5382738a24338196a9351291e3e5a",
    "images/omnieval-adventures/bolt-in-brick-city/p01.png": "acd392764ef5cd12aea5bed56918eba83d3830dfda717211cce99a1286b6b000",
    "images/omnieval-adventures/bolt-in-brick-city/p02.png": "c46eed6dfe09606bdeeaded79f6034c84b22e559d9ccad70c702bddec49415d9",
    "images/omnieval-adventures/bolt-in-brick-city/p03.png": "8171c9aca8393237061ec4f24b12b89a17baa5faaa4721a07ce8edd2d37ef6bd",
    "images/omnieval-adventures/bolt-in-brick-city/p04.png": "6bdaf6ee815e64db9d3155c01f2f068024662bf8a59179e5b81c11708c48b9de",
    "images/omnieval-adventures/bolt-in-brick-city/p05.png": "d569d69032a2b16ad354bb6b0c6f233467af9deccc651561e9c9b58839962674",
    "images/omnieval-adventures/bolt-in-brick-city/p06.png": "12ca8ba3179318824932ee7492ea1a6d7bd7179df728c87d6d09cbb7440c42e1",
    "images/omnieval-adventures/lena-and-the-northern-lights/p01.png": "4cd236266e6962c5d04957981b0ebc3f8c3b0d49ca1899dc7aed1e306aa6f68c",
    "images/omnieval-adventures/lena-and-the-northern-lights/p02.png": "b62f156e340d2cc581c158bc63c28e341464777dd5a3e936319809bc86100534",
    "images/omnieval-adventures/lena-and-the-northern-lights/p03.png": "2f0d79a966628a158c1cccb0dc2489cb35929d0b8be0d7fdf4446e722122b4ef",
    "images/omnieval-adventures/lena-and-the-northern-lights/p04.png": "e6dba70afd26c88521a3e365058c82c189ba6a6e993a0bec67168ecb3d8b1a6e",
    "images/omnieval-adventures/lena-and-the-northern-lights/p05.png": "332782d571500767686ff38608a18b3891546865bd9e1e4faeb6d75e7bb52a2c",
    "images/omnieval-adventures/lena-and-the-northern-lights/p06.png": "042d21952035631765a7cb907c32a0b9d3eb6ca8cd349c27c9b1eb4c755fa888",
    "images/omnieval-fables/marta-of-gull-rock/p01.png": "2bb394466fc33b80eb0f1bb575d86c3f6760765c034e099d4ac5ff58c123c509",
    "images/omnieval-fables/marta-of-gull-rock/p02.png": "4f473ef7a4ce96aaded5c8b9fa731d728a4183fe2772ffcba17db64c9c93a800",
    "images/omnieval-fables/marta-of-gull-rock/p03.png": "6aca8f2a46dddfe4f6872a4d0336203183c981fe1707e51182db7606b2ffb9a6",
    "images/omnieval-fables/marta-of-gull-rock/p04.png": "872d48ee778d6f28e55f9b382581d8588de2574e046bb6eebd7eda01e9031e22",
    "images/omnieval-fables/marta-of-gull-rock/p05.png": "acac014bc8afb17bdbf4264c7cecbd37fd175df3938f933302d7b30d07bf2124",
    "images/omnieval-fables/marta-of-gull-rock/p06.png": "3d35ed1627cdceeff7dc0127019f062e09cbdc347a19bbbef5fb1e47fc4dc601",
    "images/omnieval-fables/pip-and-the-brass-lantern/p01.png": "33c2e329aa98f3ff1ae0307e27ab6f90a828c6bfc358bfd4cafcab1510b3976c",
    "images/omnieval-fables/pip-and-the-brass-lantern/p02.png": "a614440df4f241d41bcbccb53e11f9ce45aa94db1e40e251fa1fafc4c618f3fc",
    "images/omnieval-fables/pip-and-the-brass-lantern/p03.png": "eb44162c9677f4d6b280fc1557571cfb23b57cc7e2fdcd6a5c85a1accbc3af15",
    "images/omnieval-fables/pip-and-the-brass-lantern/p04.png": "0428c1995c2459b0bb8833eaad4b97843e68181cdc2e5057a6afda8c1a1adb56",
    "images/omnieval-fables/pip-and-the-brass-lantern/p05.png": "2bee5fc2a6c219d0379b5e2e8fe6d837109bbeb5d45b75ced5b870b1332e3e1e",
    "images/omnieval-fables/pip-and-the-brass-lantern/p06.png": "60131a3e467f22262ebb07d67b79b52601b8167a3d9154ce778c4e9056456acb",
    "metadata/omnieval-adventures/bolt-in-brick-city.json": "37a3c26f45c86cebaa5912e81628df33cd074d7513bf43cb3bf478f6b9084428",
    "metadata/omnieval-adventures/lena-and-the-northern-lights.json": "25a5f122c7425e7c7b97f662b465b8012d62e30a9c43114d86a7a8ecf62dd41f",
    "metadata/omnieval-fables/marta-of-gull-rock.json": "9e81c9880afdb450a6bd3f9af81e52abe84bce7ef1f486d32759da635747da66",
    "metadata/omnieval-fables/pip-and-the-brass-lantern.json": "66e389180d38a7c4cac2d41ceb084b6fa4cce06aff68e0967ea040b46aba8daa",
    "samples/omnieval-adventures/bolt-in-brick-city/p01__p02.json": "1ee9163675e8cf4859ae829cb7c8a30da9c7af539862b9941be8114858fddbee",
    "samples/omnieval-adventures/bolt-in-brick-city/p02__p03.json": "fa71b05bd564e45084c36b3ef4fe7b4fa0e6a800a128df20decb500b0ee4ba8b",
    "samples/omnieval-adventures/bolt-in-brick-city/p03__p04.json": "e3fc7d8be831937e85c3062e3dfcb77ff54a8283621c3e16d933bb997833e537",
    "samples/omnieval-adventures/bolt-in-brick-city/p04__p05.json": "03d93c3215414d5964bbef88b0f7e17aa128c030c8336352ced5fcbe182295e1",
    "samples/omnieval-adventures/bolt-in-brick-city/p05__p06.json": "6e4e23af19e1a5c4a68494fe6f4ef001f841d48bbff24dcf4cbe98d22f7929b1",
    "samples/omnieval-adventures/lena-and-the-northern-lights/p01__p02.json": "76cb103b5569df8e6402639d3c132177394f2a37a7ce7129882c33ebeae16a3f",
    "samples/omnieval-adventures/lena-and-the-northern-lights/p02__p03.json": "2d7ae22f1be850f09447f07db004c795f005ded64ddf0f0a7f7413c4a92121e4",
    "samples/omnieval-adventures/lena-and-the-northern-lights/p03__p04.json": "d26dbac7d9f63a4111a2a200b41c52c8e49666d28313bdacb65765146c8e1a79",
    "samples/omnieval-adventures/lena-and-the-northern-lights/p04__p05.json": "4a65d4b2e345a1aeedaabd99adf05afc097abccc04fb4f0ec08f998f9f88c5fd",
    "samples/omnieval-adventures/lena-and-the-northern-lights/p05__p06.json": "62a8cee3dad3be6caffce92736dbebb211d36b147bd89d3e994f8ddcbad6b3b5",
    "samples/omnieval-fables/marta-of-gull-rock/p01__p02.json": "31ae0f6eb7873facfb3b60586e826f318c088f4fea5085807816493fce8659c6",
    "samples/omnieval-fables/marta-of-gull-rock/p02__p03.json": "9fed940eb3afdddd72f73589db0b999d03f479aa409bf22cd3234ecf5bd5580e",
    "samples/omnieval-fables/marta-of-gull-rock/p03__p04.json": "d2b700ac68cd2103d76b95c4223733e6577ff18dbc7b0a07e2a7e0444952bc4c",
    "samples/omnieval-fables/marta-of-gull-rock/p04__p05.json": "6971977ea68bd2cd63175f7c3ea8be773bcb97ecfe590c95efc40405ab313c27",
    "samples/omnieval-fables/marta-of-gull-rock/p05__p06.json": "90c8ae1adcad642db3520cfccd0b8347193ed4f27ee3c7eddc31dddc5e15c79d",
    "samples/omnieval-fables/pip-and-the-brass-lantern/p01__p02.json": "fe869e41c81d4935ed19a231d84e69ad7581b438b9a7a1ab0f4ba2ad9fe13677",
    "samples/omnieval-fables/pip-and-the-brass-lantern/p02__p03.json": "1e919921a04e6263fbe1e6e6da9101cdaa3eafdd04b01e640e9632303243e21a",
    "samples/omnieval-fables/pip-and-the-brass-lantern/p03__p04.json": "35c082393894be97781fb8022640a08e84d67ce7af326be02d3b7857f7135b49",
    "samples/omnieval-fables/pip-and-the-brass-lantern/p04__p05.json": "d11eef2a3ccd425e5bf177fdc9a27bbe1b440cd5b0a2fe9152e6434c89c9b0be",
    "samples/omnieval-fables/pip-and-the-brass-lantern/p05__p06.json": "8b992e251ab1889bbed75993a4860b4eb3b8abbd4b40df07d8ad0e9bb430fabe",
    "texts/omnieval-adventures/bolt-in-brick-city/p01.txt": "272482b1ec85a312f6f6f0a516bfced9ef734dc2b63e896ec0c6a03b8b1d79fd",
    "texts/omnieval-adventures/bolt-in-brick-city/p02.txt": "8df974969c35fccde2c496331966046bfcf5538d532ec027e8166f7238773f6c",
    "texts/omnieval-adventures/bolt-in-brick-city/p03.txt": "a2f83f639d7157d0c95988d7b7954bcb6a0085cad9f26a139cbab1c8e40c29e3",
    "texts/omnieval-adventures/bolt-in-brick-city/p04.txt": "6a39607536f148c52aace56e03b0890431d5ab29dfa229eeb227d89fd660547e",
    "texts/omnieval-adventures/bolt-in-brick-city/p05.txt": "a13d2f1201e995cecbc2858094cfe0c29427efdaf807dca65ba8d640b47c4a68",
    "texts/omnieval-adventures/bolt-in-brick-city/p06.txt": "fabd9d003e053a3dcce4803574245474acafd318dcdfad3043d4f0867477cdbf",
    "texts/omnieval-adventures/lena-and-the-northern-lights/p01.txt": "eb570e931c5ec97f915b853f1a1ff500d9e061d4fbb7cfb2d81d6c175d2d6bf4",
    "texts/omnieval-adventures/lena-and-the-northern-lights/p02.txt": "fb7c23ed3f9628034f696bbb7047dc0dfd6f81372b9fc735c11e84ff31b5618d",
    "texts/omnieval-adventures/lena-and-the-northern-lights/p03.txt": "ba93bde874f5ae8beea5b605ef31fb7dec12ed9c47edded97328fda9eb47210d",
    "texts/omnieval-adventures/lena-and-the-northern-lights/p04.txt": "8e5b539ec9ed770eb28bd429b6ad8810e932ce1d522a6ab057394a56f4496d08",
    "texts/omnieval-adventures/lena-and-the-northern-lights/p05.txt": "dd1e3bbafa874cd6691accf59dca3c8a1387dc6c04609ad3e3ae6b60b02a7614",
    "texts/omnieval-adventures/lena-and-the-northern-lights/p06.txt": "ef18b0ba0558fb2636a1f3bfc20c8a234f12cdcd424c234d1cb6a55ce33a701d",
    "texts/omnieval-fables/marta-of-gull-rock/p01.txt": "9cabe47d64c2dbb1e3857d572f4088970ce224b82e98d080a70029e8b8d7f72c",
    "texts/omnieval-fables/marta-of-gull-rock/p02.txt": "759a7c4d100d057f3d4b43c06e853b14e3e2e68132c393590270ca4bf1138a19",
    "texts/omnieval-fables/marta-of-gull-rock/p03.txt": "d7b15c96a7b38e404f9885867e6b114d2cc604a4448bcc25607d5e36ed9b1511",
    "texts/omnieval-fables/marta-of-gull-rock/p04.txt": "0e770d3d2092ccc2288f2c0ba4cecabee5cd879c69b5af5e7441192ba3672489",
    "texts/omnieval-fables/marta-of-gull-rock/p05.txt": "36810115c380a4c1ad51aa2537a28d782047bf0766de240685befe327b3aed46",
    "texts/omnieval-fables/marta-of-gull-rock/p06.txt": "8395ea3634e799059a3f7c8feaf8689e28b50b7183f309def103108c4de2c9f2",
    "texts/omnieval-fables/pip-and-the-brass-lantern/p01.txt": "0254c7f8ec69155d23de9954a5f5f88e602dcabf45ef5efe69be444f48b4c8e4",
    "texts/omnieval-fables/pip-and-the-brass-lantern/p02.txt": "d01da56cbb83adcf8e2ae5df2949f4e352237963d6d668f957b7aec525c63212",
    "texts/omnieval-fables/pip-and-the-brass-lantern/p03.txt": "b04d0df67fd9ea8f4171190e81299fbaddf3cd3fe9ccc19c53a6324ae1c4ff95",
    "texts/omnieval-fables/pip-and-the-brass-lantern/p04.txt": "51ee72329217eba61f2a78a2e7ba06c237b3d2c22e7b4136b278d490235c8db9",
    "texts/omnieval-fables/pip-and-the-brass-lantern/p05.txt": "1ea29b1acaf9b749ad06245743fbeacc3c4329dca325ffc3145b9d52bb3ed0ea",
    "texts/omnieval-fables/pip-and-the-brass-lantern/p06.txt": "b8fd8d5c2aa2b2646e9768dfdfcb8298a7dc085e09a42f815bbb63f82679a6ea",
}


GOLDEN_DRAWN: dict[str, tuple[str, str]] = {
    "Pip the happy fox holds a glowing lantern beside the stream at night while Hazel watches": (
        "b11db98180a64185d4b14c154146b330c0d67b37b8301e758a34e4faac7c07b8",
        '{"drawn": {"book": "pip-and-the-brass-lantern", "characters": ["Pip", "Hazel"], "mood": "happy", "painter": "forest", "props": ["oak", "stream", "lantern_bright"], "time": "night"}}',
    ),
    "Marta on the rock as a storm shakes the lighthouse": (
        "935ccf2647fc670a1d41689c1bb6cd849610e9892737148dd83a796f7813aabd",
        '{"drawn": {"book": "marta-of-gull-rock", "characters": ["Marta"], "mood": "calm", "painter": "sea", "props": ["rock", "lighthouse", "waves", "boat"], "time": "storm"}}',
    ),
    "Bolt the sad robot stands in the rain under a lamp post while Nia brings an umbrella": (
        "7e74f81deedeb3a99f51d3862891abf2aa255e29e96c2816366093941260b629",
        '{"drawn": {"book": "bolt-in-brick-city", "characters": ["Bolt", "Nia"], "mood": "sad", "painter": "city", "props": ["lamp_post", "puddle", "rain", "umbrella"], "time": "rain"}}',
    ),
    "Lena and Tundra on the snowy hilltop under the northern lights": (
        "9c899e3b1ecad9ff031147c403c300d5e88a5fddf2fd0ed969063a3b853452c6",
        '{"drawn": {"book": "lena-and-the-northern-lights", "characters": ["Lena", "Tundra"], "mood": "calm", "painter": "snow", "props": ["pine", "light_snow", "hilltop", "aurora"], "time": "morning"}}',
    ),
    "a quiet page about nothing in particular": (
        "eb33383ec5916299cea94f0801164b9f1317cbb6ec1ca3844f28f59ec8f7fb32",
        '{"drawn": {"book": "lena-and-the-northern-lights", "characters": [], "mood": "calm", "painter": "snow", "props": ["pine"], "time": "morning"}}',
    ),
}
"""Prompt -> (sha256 of the ``drawn`` expert's 96-pixel PNG, its facts as sorted JSON): the expert
composes pictures from the books' characters and props."""


def test_every_rendered_prompt_and_request_key_is_unchanged() -> None:
    got = rendered_prompts()
    # The served cpu panel renders exactly the cpu panel's prompts and requests (the backend kind,
    # not the request, keeps their cache keys apart).
    served = {k: v for k, v in got.items() if k.startswith("cpu-served/")}
    as_cpu = {
        k.replace("cpu/", "cpu-served/", 1): v for k, v in GOLDEN_PROMPTS.items() if k.startswith("cpu/")
    }
    assert served and served == as_cpu
    assert {k: v for k, v in got.items() if not k.startswith("cpu-served/")} == GOLDEN_PROMPTS


def test_every_template_string_is_unchanged() -> None:
    assert template_strings() == GOLDEN_TEMPLATE_STRINGS


def test_sample_rows_are_unchanged() -> None:
    rows: list[dict[str, Any]] = build_rows()
    assert _sha(json.dumps(rows, ensure_ascii=False)) == GOLDEN_ROWS_SHA256


def test_regenerated_sample_is_unchanged(tmp_path: Path) -> None:
    write_sample(tmp_path / "sample")
    assert sample_files(tmp_path / "sample") == GOLDEN_SAMPLE_FILES


def test_drawn_pictures_are_unchanged(tmp_path: Path) -> None:
    expert = image_expert(DrawnConfig(size=96))
    drawn = {}
    for i, prompt in enumerate(GOLDEN_DRAWN):
        facts = expert.render(ImageRequest(prompt), tmp_path / f"{i}.png")
        drawn[prompt] = (
            hashlib.sha256((tmp_path / f"{i}.png").read_bytes()).hexdigest(),
            json.dumps(facts, sort_keys=True),
        )
    assert drawn == GOLDEN_DRAWN
