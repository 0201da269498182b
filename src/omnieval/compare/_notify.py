"""Tell someone the nightly verdict: Prefect notification blocks configured in ``regression.notify``.

Both blocks are :class:`prefect.blocks.abstract.NotificationBlock` subclasses, so they can also be
saved and used by Prefect automations. Their ``body`` is the JSON text of a verdict message
(:func:`verdict_message`); a body that is not a JSON object is sent as ``{"text": body}``.

- :class:`FileNotification` appends one JSON line ``{"time", "subject", ...message}`` to a file.
- :class:`WebhookNotification` POSTs ``{"subject", ...message}`` as JSON; the message's ``text`` key
  makes it readable by Slack-style incoming webhooks as is.

Prefect imports happen on first use, so ``import omnieval.compare`` stays light.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from omnieval.compare._blocks import FileNotification, WebhookNotification
    from omnieval.config import NotifierConfig


@dataclass(frozen=True)
class SendOutcome:
    """What happened to one notifier: ``target`` is the file path or URL."""

    kind: str
    target: str
    ok: bool
    error: str | None = None


def verdict_message(
    document: Mapping[str, Any], *, suite: str, report: Path | None
) -> tuple[str, dict[str, Any]]:
    """``(subject, message)`` for a ``regression.json`` document.

    The message holds ``suite, verdict, reasons, run_id, run_folder, report, baseline, text`` where
    ``text`` is a short human-readable summary.
    """
    verdict = str(document.get("verdict"))
    reasons = [str(r) for r in document.get("reasons", [])]
    run_b = document.get("run_b") or {}
    baseline = document.get("baseline") or document.get("run_a")
    subject = f"omnieval {suite}: {verdict}"
    text = "\n".join(
        [f"{subject} (run {run_b.get('run_id')})", *(f"- {r}" for r in reasons[:10])]
        + ([f"report: {report}"] if report is not None else [])
    )
    message = {
        "suite": suite,
        "verdict": verdict,
        "reasons": reasons,
        "run_id": run_b.get("run_id"),
        "run_folder": run_b.get("folder"),
        "report": None if report is None else str(report),
        "baseline": None if not baseline else baseline.get("run_id"),
        "text": text,
    }
    return subject, message


def build_block(config: NotifierConfig) -> FileNotification | WebhookNotification:
    """The notification block a ``regression.notify`` entry describes."""
    from omnieval.compare._blocks import FileNotification, WebhookNotification

    if config.kind == "file":
        return FileNotification(path=str(config.path))
    return WebhookNotification(
        url=config.resolved_url(), headers=dict(config.headers), timeout_s=config.timeout_s
    )


def send_notifications(
    notifiers: Sequence[NotifierConfig], subject: str, message: Mapping[str, Any]
) -> list[SendOutcome]:
    """Send one message through every configured notifier; a failing notifier never raises.

    Returns:
        One :class:`SendOutcome` per notifier, in configuration order.
    """
    body = json.dumps(dict(message))
    outcomes: list[SendOutcome] = []
    for notifier in notifiers:
        target = str(notifier.path) if notifier.kind == "file" else notifier.display_target
        try:
            build_block(notifier).send(body, subject)
        except Exception as exc:  # a notification must not fail a finished run
            outcomes.append(SendOutcome(notifier.kind, target, False, f"{type(exc).__name__}: {exc}"))
        else:
            outcomes.append(SendOutcome(notifier.kind, target, True))
    return outcomes
