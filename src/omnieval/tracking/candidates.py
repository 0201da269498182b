"""A run's candidates on the tracking server, so another machine can re-judge them.

``regression.rejudge`` judges run A's candidates again with run B's panels. On a team server run A
may come from another machine (``omnieval.compare._mlflow.previous_run_on_server``); its folder is
fetched from the ``run/`` artifacts, which hold the candidates the track stage copied into it, but
an ``import`` system's candidates stay where they were imported from, on the machine that ran it
(the run folder keeps only its ``IMPORTED.json`` pointer). With a tracking server configured, the
track stage therefore logs, on the parent run:

``candidates/manifest.json``
    :class:`CandidateManifest`: per system, where its candidates were read from and every file's
    relative path, size and SHA-256, so a copy fetched on another machine is verified;
``candidates/blobs/<sha256>``
    the imported systems' files, content-addressed: a file that several systems, instances or
    conditions share is uploaded once. Copied systems are not uploaded again (they are under
    ``run/candidates/<system>`` already): every candidate is logged once per run.

The manifest is uploaded last, so a run whose manifest is there has all its blobs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, Field, field_validator

CANDIDATES_ARTIFACTS = "candidates"
"""Artifact folder of the parent run holding the manifest and the blobs."""
MANIFEST_NAME = "manifest.json"
BLOBS = "blobs"
MANIFEST_FORMAT = 1


class CandidateFile(BaseModel):
    """One candidate file: its path below the system's candidate folder, size and content hash."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    bytes: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")

    @field_validator("path")
    @classmethod
    def _inside(cls, value: str) -> str:
        # A fetched manifest decides where files are written: nothing may land outside the folder.
        parts = PurePosixPath(value).parts
        if not parts or value.startswith("/") or "\\" in value or any(p in ("..", ".") for p in parts):
            raise ValueError(f"{value!r} is not a relative path inside the candidate folder")
        return value

    @property
    def blob_path(self) -> str:
        """The artifact path of this file's content (an imported system's files are blobs)."""
        return f"{CANDIDATES_ARTIFACTS}/{BLOBS}/{self.sha256}"


class SystemCandidates(BaseModel):
    """One system's candidates as the run read them.

    Attributes:
        imported_from: The folder an ``import`` system pointed at (its files are under
            ``candidates/blobs``); None when they were copied into the run folder (``run/candidates/<system>``).
        tree_sha256: SHA-256 over each relative path and file hash in path order
            (:func:`omnieval.tracking.candidate_table`'s digest).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    imported_from: str | None = None
    tree_sha256: str
    files: tuple[CandidateFile, ...]


class CandidateManifest(BaseModel):
    """``candidates/manifest.json`` of a parent run (module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: int = MANIFEST_FORMAT
    run_id: str
    systems: dict[str, SystemCandidates]


def build_manifest(run_id: str, folder: Path, roots: Mapping[str, Path]) -> CandidateManifest:
    """The manifest of the run folder ``folder``: one entry per system of ``roots``.

    Args:
        run_id: The parent run.
        folder: The run folder (its ``candidates/<system>`` folders).
        roots: Per system, the folder its candidates are read from: ``folder/candidates/<system>``
            when copied, the imported folder for an ``import`` system.
    """
    from omnieval.tracking._mlflow import candidate_table

    systems: dict[str, SystemCandidates] = {}
    for system, root in sorted(roots.items()):
        copied = Path(root).resolve() == (folder / "candidates" / system).resolve()
        table = candidate_table(Path(root))
        systems[system] = SystemCandidates(
            imported_from=None if copied else str(Path(root).resolve()),
            tree_sha256=table.digest,
            files=tuple(
                CandidateFile(path=str(row.path), bytes=int(row.bytes), sha256=str(row.sha256))
                for row in table.frame.itertuples(index=False)
            ),
        )
    return CandidateManifest(run_id=run_id, systems=systems)


def log_run_candidates(run_id: str, folder: Path, roots: Mapping[str, Path]) -> CandidateManifest:
    """Log the run's candidate manifest and its imported systems' files on the parent run ``run_id``.

    Imported files are uploaded once per content (``candidates/blobs/<sha256>``), then the manifest.

    Raises whatever MLflow raises when the server refuses or cannot be reached (the caller notes it).
    """
    from mlflow.tracking import MlflowClient

    from omnieval.tracking._store import tracking_uri

    manifest = build_manifest(run_id, folder, roots)
    client = MlflowClient(tracking_uri())
    with tempfile.TemporaryDirectory(prefix="omnieval-candidates-") as scratch:
        blobs = Path(scratch) / BLOBS
        blobs.mkdir()
        for system, entry in manifest.systems.items():
            if entry.imported_from is None:
                continue
            for file in entry.files:
                target = blobs / file.sha256
                if target.exists():  # the same bytes elsewhere in the run: stored once
                    continue
                source = Path(roots[system]) / file.path
                try:
                    os.link(source, target)
                except OSError:  # another file system
                    shutil.copyfile(source, target)
        if any(blobs.iterdir()):
            client.log_artifacts(run_id, str(blobs), artifact_path=f"{CANDIDATES_ARTIFACTS}/{BLOBS}")
        path = Path(scratch) / MANIFEST_NAME
        path.write_text(manifest.model_dump_json(indent=1), encoding="utf-8")
        client.log_artifact(run_id, str(path), artifact_path=CANDIDATES_ARTIFACTS)
    return manifest


__all__ = [
    "BLOBS",
    "CANDIDATES_ARTIFACTS",
    "MANIFEST_NAME",
    "CandidateFile",
    "CandidateManifest",
    "SystemCandidates",
    "build_manifest",
    "log_run_candidates",
]
