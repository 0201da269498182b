"""The ``command`` system kind: an external generator in its own environment (FORMATS.md section 9).

A lab adds a checkpoint as one suite entry; omnieval runs ``argv`` once per example with
``{input_dir}/task.json`` (the visible inputs, never a target) and collects ``text.txt``,
``image.png``, ``speech.wav`` or ``video.mp4`` from ``{output_dir}``. docs/generation.md has the
protocol and a worked example.
"""

from omnieval.systems._command_config import CommandConfig, ContainerConfig
from omnieval.systems._protocol import TASK_FILE, crash_cause, timeout_cause, write_task
from omnieval.systems.command._system import CommandSystem

__all__ = [
    "TASK_FILE",
    "CommandConfig",
    "CommandSystem",
    "ContainerConfig",
    "crash_cause",
    "timeout_cause",
    "write_task",
]
