"""toy_caption: the smallest complete benchmark, the worked example of docs/benchmarks.md.

``benchmark.yaml`` beside this file declares what is data; this module holds what is code: the
loader with strict validation, the dataset gate, the one automatic metric (token F1 of the
candidate caption against the reference), the aggregate and its terminal and HTML views. It
registers in :data:`TOY_BENCHMARKS`, never in the production registry, so ``omnieval benchmarks``
and suites cannot see it.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from omnieval.benchmarks import (
    Benchmark,
    DatasetReport,
    GenerateJob,
    Leaderboard,
    MetricsJob,
    MetricsOutput,
    ReportJob,
    RunFacts,
    benchmark,
)
from omnieval.candidates import Modality, read_candidate
from omnieval.data import Manifest, file_entry, manifest_digest
from omnieval.registry import Registry
from omnieval.scores import ScoreRow, Status, scores_frame

if TYPE_CHECKING:
    import pandas as pd

    from omnieval.gates import GateResult

TOY_BENCHMARKS: Registry[Benchmark] = Registry("benchmark")
FIELDS = ("id", "prompt", "reference")


@dataclass(frozen=True)
class Caption:
    """One instance: what to caption and the reference caption (a target, never shown)."""

    index: int
    id: str
    prompt: str
    reference: str


@dataclass(frozen=True)
class CaptionSet:
    """A validated dataset folder and its instances in line order."""

    root: Path
    captions: tuple[Caption, ...]


class ToyMetricsConfig(BaseModel):
    """The suite's ``metrics:`` block: whether token F1 ignores case."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    casefold: bool = True


def token_f1(candidate: str, reference: str, *, casefold: bool = True) -> float:
    """Harmonic mean of token precision and recall over the two bags of words.

    >>> token_f1("a red fox", "The red fox")
    0.6666666666666666
    """
    fold = str.casefold if casefold else str
    cand, ref = Counter(fold(candidate).split()), Counter(fold(reference).split())
    common = sum((cand & ref).values())
    return 0.0 if common == 0 else 2 * common / (sum(cand.values()) + sum(ref.values()))


def _check_lines(path: Path) -> tuple[list[Caption], list[str], list[dict[str, Any]]]:
    """Instances, problems (``line N (id): field: why``) and one gate row per non-blank line."""
    if not path.is_file():
        return [], [f"{path}: not found"], []
    captions: list[Caption] = []
    problems: list[str] = []
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            problems.append(f"line {number}: record: not a JSON object")
            rows.append({"record__parses": False, **dict.fromkeys(FIELDS)})
            continue
        rows.append({"record__parses": True, **{f: record.get(f) for f in FIELDS}})
        where = f"line {number} ({record.get('id')})"
        bad = [f for f in FIELDS if not isinstance(record.get(f), str) or not record[f].strip()]
        problems += [f"{where}: {f}: must be a non-empty string" for f in bad]
        if record.get("id") in seen:
            problems.append(f"{where}: id: repeats an earlier line")
        if not bad and record["id"] not in seen:
            captions.append(Caption(len(captions), record["id"], record["prompt"], record["reference"]))
        seen.add(str(record.get("id")))
    return captions, problems, rows


class SystemBoard(BaseModel):
    """One system's leaderboard entry: the valid-only mean and how many rows it covers."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    token_f1: float | None
    n_valid: int
    n_missing: int


class ToyLeaderboard(BaseModel):
    """The ``leaderboard.json`` document of toy_caption."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    benchmark: str
    systems: dict[str, SystemBoard]


@benchmark(registry=TOY_BENCHMARKS)
class ToyCaption(Benchmark):
    """Hooks of toy_caption; its name, dataset marker, systems and headline are in benchmark.yaml."""

    metrics_config = ToyMetricsConfig
    score_range: ClassVar[Mapping[str, tuple[float, float]]] = {"token_f1": (0.0, 1.0)}

    def validate(self, root: Path) -> DatasetReport:
        captions, problems, _ = _check_lines(Path(root) / self.dataset_marker)
        ok = not problems
        dataset = CaptionSet(Path(root), tuple(captions)) if ok else None
        return DatasetReport(ok, problems, len(captions), dataset)

    def gate(self, root: Path, out_json: Path | None) -> GateResult:
        import pandas as pd

        from omnieval.gates import validate_frame

        frame = pd.DataFrame(
            _check_lines(Path(root) / self.dataset_marker)[2], columns=["record__parses", *FIELDS]
        )
        suite = Path(__file__).with_name("expectations.json")
        return validate_frame(frame, suite, artifact=str(root), out_json=out_json, id_column="id")

    def instances(self, dataset: Any) -> tuple[Any, ...]:
        return dataset.captions  # type: ignore[no-any-return]

    def fingerprint(self, dataset: Any) -> Manifest:
        # The captions file holds every text a score depends on: its hash is the fingerprint.
        n, table = len(dataset.captions), file_entry(dataset.root, dataset.root / self.dataset_marker)
        return Manifest(n, table, (), (), manifest_digest(n, table, (), ()))

    def dataset_frame(self, root: Path) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame([vars(c) for c in _check_lines(Path(root) / self.dataset_marker)[0]])

    def generate(self, job: GenerateJob) -> Any:
        return job.system.generate(job.instances, job.out_root, progress=job.progress)

    def compute_metrics(self, job: MetricsJob) -> MetricsOutput:
        assert isinstance(job.config, ToyMetricsConfig)
        rows = []
        for caption in job.instances:
            found = read_candidate(job.candidates[""], Modality.TEXT, caption.index)
            value = None
            if found.path is not None:
                text = found.path.read_text(encoding="utf-8")
                value = token_f1(text, caption.reference, casefold=job.config.casefold)
            status = Status.OK if value is not None else Status.MISSING_OUTPUT
            rows.append(
                ScoreRow(
                    self.name,
                    job.system,
                    caption.id,
                    caption.index,
                    "text",
                    "token_f1",
                    "",
                    "value",
                    value,
                    status,
                )
            )
        lineage = {"metric": "token_f1", "config": job.config.model_dump(mode="json")}
        return MetricsOutput(scores_frame(rows), lineage, computed=len(rows), cache_hits=0)

    def leaderboard(self, scores: pd.DataFrame, facts: RunFacts | None = None) -> Leaderboard:
        systems: dict[str, SystemBoard] = {}
        for system, rows in scores.groupby("system", sort=True):
            valid = rows[rows["status"] == Status.OK.value]["value"]
            mean = float(valid.mean()) if len(valid) else None
            systems[str(system)] = SystemBoard(
                token_f1=mean, n_valid=len(valid), n_missing=len(rows) - len(valid)
            )
        metrics = {
            s: {f"{self.name}.valid_only.token_f1": b.token_f1}
            for s, b in systems.items()
            if b.token_f1 is not None
        }
        return Leaderboard.typed(ToyLeaderboard(benchmark=self.name, systems=systems), metrics)

    def instance_components(self, scores: pd.DataFrame) -> pd.DataFrame:
        valid = scores[scores["status"] == Status.OK.value]
        return valid.assign(component="token_f1")[["system", "instance_id", "component", "value"]]

    def leaderboard_text(self, document: Mapping[str, Any]) -> str:
        lines = [f"{'system':<16} {'token_f1':>8} {'missing':>7}"]
        for system, board in document["systems"].items():
            f1 = "-" if board["token_f1"] is None else f"{board['token_f1']:.3f}"
            lines.append(f"{system:<16} {f1:>8} {board['n_missing']:>7}")
        return "\n".join(lines)

    def write_report(self, job: ReportJob) -> None:
        table = html.escape(self.leaderboard_text(job.document))
        job.path.write_text(
            f"<!doctype html><title>{self.title}</title><pre>{table}</pre>\n", encoding="utf-8"
        )
