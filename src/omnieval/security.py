"""Secrets kept out of logs and error messages, and paths kept inside their folder.

Secrets never live in omnieval's configuration: a judge backend names the *environment variable*
that holds its key (``api_key_env``). Their values can still reach text through a third party (a
server that echoes a request header in its error body, a library that logs a URL with a token),
so every log record omnieval's CLI emits goes through :func:`redact`:

- values of environment variables whose names look secret (``*_KEY``, ``*TOKEN*``, ``*SECRET*``,
  ``*PASSWORD*``, ``*CREDENTIAL*``) and of variables registered with :func:`register_secret_env`
  are replaced by ``***``;
- well-known token shapes (``Bearer ...``, ``sk-...``, ``hf_...``, ``AIza...``) are replaced too,
  whatever their source.

:func:`install_log_redaction` installs this for every logger of the process (a log-record factory,
so it also covers Prefect's and MLflow's loggers and handlers added later).

Example:
    >>> redact("401: bad key Bearer abc.def-123 for user", secrets=())
    '401: bad key Bearer *** for user'
    >>> redact("token=s3cr3t-value-1234 sent", secrets=("s3cr3t-value-1234",))
    'token=*** sent'
"""

from __future__ import annotations

import logging
import os
import re
import threading
import traceback
from collections.abc import Iterable, Mapping
from pathlib import Path

MASK = "***"
"""What a redacted secret reads as."""

MIN_SECRET_CHARS = 8
"""Shorter values are never treated as secrets: masking ``1`` or ``true`` everywhere would garble
every message, and a key that short protects nothing anyway."""

SECRET_NAME = re.compile(r"(^|_|^PG)(API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH)(_|$)", re.I)
"""Environment variable names whose values are secrets (``OPENAI_API_KEY``, ``HF_TOKEN``,
``WANDB_API_KEY``, ``AWS_SECRET_ACCESS_KEY``, ``GITHUB_TOKEN``, libpq's ``PGPASSWORD``...)."""

_NOT_SECRET = frozenset(
    {"PREFECT_API_KEY_FILE", "SSH_AUTH_SOCK", "XAUTHORITY", "OMNIEVAL_MLFLOW_CREDENTIALS"}
)
"""Names that match :data:`SECRET_NAME` but hold a path, not a secret."""

TOKEN_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?i)(?<=bearer )[A-Za-z0-9._~+/=-]{6,}"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"),
    re.compile(r"\bhf_[A-Za-z0-9]{20,}"),
    re.compile(r"\bAIza[0-9A-Za-z_-]{30,}"),
    re.compile(r"(?<=://)[^\s/:@]*:[^\s/@]+(?=@)"),
)
"""Token shapes masked wherever they appear: bearer credentials, OpenAI-style ``sk-`` keys, Hugging
Face ``hf_`` tokens, Google API keys (``AIza...``, the Gemini API's; a library may put one in a
URL's ``?key=``) and the ``user:password`` part of a URI (``postgresql://user:pw@host/db``)."""

_REGISTERED: set[str] = set()
_LOCK = threading.Lock()


def register_secret_env(*names: str | None) -> None:
    """Treat these environment variables' values as secrets, whatever their names.

    Backends call this with their ``api_key_env`` so a key held in e.g. ``$JUDGE_CRED`` is masked too.
    """
    with _LOCK:
        _REGISTERED.update(n for n in names if n)


def is_secret_name(name: str) -> bool:
    """Whether an environment variable of this name holds a secret.

    >>> is_secret_name("OPENAI_API_KEY"), is_secret_name("HF_TOKEN"), is_secret_name("PATH")
    (True, True, False)
    """
    return name in _REGISTERED or (name not in _NOT_SECRET and bool(SECRET_NAME.search(name)))


def secret_values(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Values of the secret environment variables (at least :data:`MIN_SECRET_CHARS` long),
    longest first so a key that contains another is masked whole."""
    env = os.environ if environ is None else environ
    values = {v for k, v in env.items() if v and len(v) >= MIN_SECRET_CHARS and is_secret_name(k)}
    return tuple(sorted(values, key=len, reverse=True))


def redact(text: str, secrets: Iterable[str] | None = None) -> str:
    """``text`` with every secret value and token shape replaced by :data:`MASK`.

    Args:
        text: any message.
        secrets: values to mask; None = :func:`secret_values` of the current environment.
    """
    for value in secret_values() if secrets is None else secrets:
        if value and value in text:
            text = text.replace(value, MASK)
    for pattern in TOKEN_PATTERNS:
        text = pattern.sub(MASK, text)
    return text


def scrub_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """A copy of an environment with the values of secret variables masked (for lineage dumps).

    >>> scrub_environment({"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwx", "LANG": "C"})
    {'HF_TOKEN': '***', 'LANG': 'C'}
    """
    return {k: (MASK if is_secret_name(k) and v else v) for k, v in environ.items()}


def _redact_record(record: logging.LogRecord) -> None:
    secrets = secret_values()
    try:
        message = record.getMessage()
    except Exception:  # a broken format string is logging's problem to report, not ours
        return
    clean = redact(message, secrets)
    if clean != message:
        record.msg, record.args = clean, None
    if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
        # Formatted here, once, so the handler prints the redacted text instead of re-formatting.
        text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        record.exc_text = redact(text, secrets)


_installed = False


def install_log_redaction() -> None:
    """Mask secrets in every log record created from now on, by any logger (idempotent)."""
    global _installed
    with _LOCK:
        if _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: object, **kwargs: object) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            _redact_record(record)
            return record

        logging.setLogRecordFactory(factory)
        _installed = True


def inside(root: Path, path: Path) -> bool:
    """Whether ``path``, with every symlink and ``..`` resolved, lies within ``root`` (resolved too).

    >>> inside(Path("/data"), Path("/data/a/../b.txt")), inside(Path("/data"), Path("/data/../etc"))
    (True, False)
    """
    return path.resolve().is_relative_to(root.resolve())
