"""A/B candidates: has a system's candidate for an instance changed since the compared run?

The instance viewer shows the compared run's candidate beside this run's only where the two differ,
and "differ" means their bytes: each modality's output file is content-addressed (SHA-256), so a
rewritten but identical file is unchanged and a re-encoded image with the same pixels is changed.
An output written in one run and missing in the other is a change too.

``omnieval view`` serves the compared run's ``candidates/`` folder (and nothing else of it) under
:data:`COMPARED_ROUTE`; opened as a file, the page links it relative to the run folder instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from omnieval.candidates import OUTPUT_FILES, Modality
from omnieval.hashing import sha256_file

COMPARED_ROUTE = "_compared"
"""URL prefix under which ``omnieval view`` serves the compared run folder's ``candidates/``."""


def candidate_root(folder: Path, system: str, condition: str = "") -> Path:
    """One system's candidate folder (one condition) in a run folder (FORMATS.md section 4)."""
    root = folder / "candidates" / system
    return root / condition if condition else root


def output_digests(root: Path, index: int) -> dict[str, str | None]:
    """SHA-256 (hex) of each modality's output of instance ``index`` in a candidate folder.

    Only the modalities the folder has a sub-folder for appear; an output that was not written
    (a ``missing.txt`` or nothing) is None.

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> (root / "text" / "0").mkdir(parents=True)
        >>> _ = (root / "text" / "0" / "generated.txt").write_text("abc")
        >>> (root / "speech").mkdir()
        >>> digests = output_digests(root, 0)
        >>> digests["text"][:12], digests["speech"]
        ('ba7816bf8f01', None)
    """
    digests: dict[str, str | None] = {}
    for modality in Modality:
        if not (root / modality.value).is_dir():
            continue
        produced = root / modality.value / str(index) / OUTPUT_FILES[modality]
        digests[modality.value] = sha256_file(produced) if produced.is_file() else None
    return digests


def changed_modalities(
    today: Mapping[str, str | None], compared: Mapping[str, str | None]
) -> tuple[str, ...]:
    """The modalities whose output differs between two runs, in a stable (sorted) order.

    A modality absent from one side counts as "no output" there, so an output that appeared or
    vanished is a change and two missing outputs are not.

    Example:
        >>> changed_modalities({"text": "a1", "image": "b2"}, {"text": "a1", "image": "c3"})
        ('image',)
        >>> changed_modalities({"speech": None}, {})
        ()
        >>> changed_modalities({"speech": "d4"}, {"speech": None})
        ('speech',)
    """
    return tuple(m for m in sorted({*today, *compared}) if today.get(m) != compared.get(m))


def changed_outputs(
    folder: Path,
    compared_folder: Path,
    system: str,
    *,
    index: int,
    compared_index: int | None = None,
    condition: str = "",
) -> tuple[str, ...]:
    """Which of ``system``'s outputs for one instance changed between ``compared_folder`` and ``folder``.

    Args:
        folder: this run's folder.
        compared_folder: the compared run's folder.
        system: the system id.
        index: the instance's index in this run (its candidate slot).
        compared_index: its index in the compared run (the dataset may have moved); default ``index``.
        condition: the input condition ('' where the benchmark has none).

    Returns:
        The changed modalities (empty when every output has the same SHA-256 in both runs).
    """
    return changed_modalities(
        output_digests(candidate_root(folder, system, condition), index),
        output_digests(
            candidate_root(compared_folder, system, condition),
            index if compared_index is None else compared_index,
        ),
    )
