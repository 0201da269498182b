"""Stage ``generate``: one system under test writes its candidate layout, then the candidates gate.

python -m omnieval.stages.generate --suite pipelines/nightly.yaml --system oracle
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from omnieval.config import SuiteConfig
from omnieval.data import Transition
from omnieval.errors import ConfigError
from omnieval.progress import note, progress_bar
from omnieval.stages._common import (
    code_digest,
    content_key,
    is_fresh,
    read_json,
    state_paths,
    write_json,
    write_stamp,
)
from omnieval.stages._main import stage_main


@dataclass(frozen=True)
class GenerateOutcome:
    system: str
    candidates_root: Path
    skipped: bool


def _build_system(config: SuiteConfig, system_id: str) -> object:
    from omnieval.systems import SYSTEMS

    try:
        spec = config.systems[system_id]
    except KeyError:
        raise ConfigError(f"system {system_id!r} is not in suite {config.suite!r}") from None
    factory = SYSTEMS.get(spec.kind)
    kwargs: dict[str, object] = {}
    if spec.seed is not None:
        kwargs["seed"] = spec.seed
    if spec.path is not None:
        kwargs["path"] = spec.path
    return factory(**kwargs)


def run(
    config: SuiteConfig, system_id: str, transitions: Sequence[Transition], dataset_digest: str
) -> GenerateOutcome:
    from omnieval.gates import enforce, gate_candidates
    from omnieval.systems import resolve_candidates_root

    paths = state_paths(config)
    out = paths.candidates(system_id)
    spec = config.systems.get(system_id)
    extra = ""
    if spec is not None and spec.kind == "import" and spec.path:
        from omnieval.stages._common import tree_digest

        extra = tree_digest(Path(spec.path))
    key = content_key(
        stage="generate",
        dataset=dataset_digest,
        rows=[t.id for t in transitions],
        system=spec.model_dump() if spec else None,
        imported=extra,
        code=code_digest(),
    )
    stage = f"generate@{system_id}"
    if is_fresh(paths, stage, key, [out]):
        note(f"[generate] {system_id}: unchanged, reusing {out}")
        return GenerateOutcome(system_id, resolve_candidates_root(out), True)
    system = _build_system(config, system_id)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    with progress_bar(f"generate {system_id}", len(transitions)) as update:
        summary = system.generate(transitions, out, progress=update)  # type: ignore[attr-defined]
    write_json(
        out.parent / f"{system_id}.summary.json",
        {
            "system": system_id,
            "kind": summary.kind,
            "written": summary.written,
            "missing": summary.missing,
            "lineage": summary.lineage,
        },
    )
    root = resolve_candidates_root(out)
    # Valid index folders are those of the whole dataset, even when the suite evaluates a prefix.
    n_rows = int(read_json(paths.dataset_manifest).get("n_rows", len(transitions)))
    gate = gate_candidates(root, n_rows, paths.gates / f"candidates-{system_id}.json")
    enforce(gate)
    write_stamp(paths, stage, key)
    return GenerateOutcome(system_id, root, False)


def main(argv: list[str] | None = None) -> int:
    def body(cfg: SuiteConfig, args: object) -> None:
        from omnieval.stages.validate import dataset_digest, load_transitions

        run(cfg, args.system, load_transitions(cfg), dataset_digest(state_paths(cfg)))  # type: ignore[attr-defined]

    return stage_main("generate", body, argv, needs_system=True)


if __name__ == "__main__":
    raise SystemExit(main())
