"""Whether a process still runs: the one check every watchdog, server manager and run marker uses."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True when a process with this pid exists and is not a zombie.

    A process owned by another user counts as alive (``kill(pid, 0)`` is refused, but it exists);
    a zombie (exited, not yet reaped by its parent) counts as gone: its work is over. Without
    ``/proc`` (not Linux) the existence check alone decides.

    Example:
        >>> pid_alive(os.getpid())
        True
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            # The state letter follows the parenthesised command name.
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


__all__ = ["pid_alive"]
