"""The Prefect notification blocks of ``regression.notify`` (this module imports Prefect).

Both blocks' ``body`` is normally the JSON text of a verdict message
(:func:`omnieval.compare._notify.verdict_message`); a body that is not a JSON object is sent as
``{"text": body}``. ``notify`` is the async method Prefect's :class:`NotificationBlock` declares;
``send`` does the same synchronously (the track stage calls it from a worker thread).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio.to_thread
from prefect.blocks.abstract import NotificationBlock
from pydantic import Field, SecretStr


def _as_object(body: str) -> dict[str, Any]:
    try:
        parsed = json.loads(body)
    except ValueError:
        return {"text": body}
    return parsed if isinstance(parsed, dict) else {"text": body}


class FileNotification(NotificationBlock):
    """Append each notification as one JSON line ``{"time", "subject", ...body}`` to a local file."""

    _block_type_name = "omnieval File Notification"
    _block_type_slug = "omnieval-file-notification"

    path: str = Field(description="File the JSON lines are appended to (its folder is created).")

    def send(self, body: str, subject: str | None = None) -> None:
        """Append the line now."""
        target = Path(self.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        record: dict[str, Any] = {"time": datetime.now(UTC).isoformat(timespec="seconds"), "subject": subject}
        record.update(_as_object(body))
        with target.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")

    async def notify(self, body: str, subject: str | None = None) -> None:
        await anyio.to_thread.run_sync(self.send, body, subject)


class WebhookNotification(NotificationBlock):
    """POST each notification as the JSON object ``{"subject", ...body}`` to a URL."""

    _block_type_name = "omnieval Webhook Notification"
    _block_type_slug = "omnieval-webhook-notification"

    url: str = Field(description="Where to POST.")
    headers: dict[str, SecretStr] = Field(default_factory=dict, description="Extra request headers.")
    timeout_s: float = Field(default=10.0, description="Request timeout in seconds.")

    def send(self, body: str, subject: str | None = None) -> None:
        """POST now; raise on a transport error or a non-2xx answer."""
        import httpx

        payload = {"subject": subject, **_as_object(body)}
        headers = {k: v.get_secret_value() for k, v in self.headers.items()}
        response = httpx.post(self.url, json=payload, headers=headers, timeout=self.timeout_s)
        response.raise_for_status()

    async def notify(self, body: str, subject: str | None = None) -> None:
        await anyio.to_thread.run_sync(self.send, body, subject)
