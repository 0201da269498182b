"""The typed suite entry of a ``command`` system (FORMATS.md section 9)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from omnieval.systems._spec import SystemSpec

#: ``{input_dir}`` and ``{output_dir}``: the placeholders ``argv`` may hold.
PLACEHOLDERS: tuple[str, ...] = ("{input_dir}", "{output_dir}")

#: ``${NAME}`` in an ``env`` value: taken from the caller's environment when the command runs.
ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ContainerConfig(BaseModel):
    """Run the command inside a container image (``docker run --rm ...`` or podman).

    The input and output folders are mounted at the same absolute paths inside the container, so
    ``{input_dir}`` and ``{output_dir}`` mean the same thing on both sides; ``env`` variables are
    passed by name (``-e NAME``), so their values never appear on a command line.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    image: str = Field(min_length=1)
    """Image reference, e.g. ``ghcr.io/lab/t2av:2025-06`` (pin a digest for reproducible runs)."""
    engine: Literal["docker", "podman"] = "docker"
    """The container client on ``PATH``."""
    gpus: str | None = None
    """Passed as ``--gpus`` (``all``, ``device=0``); None = no GPU."""
    mounts: tuple[str, ...] = ()
    """Extra ``-v`` mounts (``/models:/models:ro``), e.g. model weights kept outside the image."""
    extra_args: tuple[str, ...] = ()
    """Further ``run`` options placed before the image (``--shm-size=8g``)."""


class CommandConfig(SystemSpec):
    """An external program that generates one example per call (FORMATS.md section 9).

    Example (suite YAML)::

        systems:
          my-model:
            kind: command
            argv: ["/opt/envs/mymodel/bin/python", "generate.py", "{input_dir}", "{output_dir}"]
            timeout_s: 600
            env: {HF_HOME: /data/hf, API_TOKEN: "${MY_TOKEN}"}
    """

    kind: Literal["command"] = "command"
    argv: tuple[str, ...] = Field(min_length=1)
    """Program and arguments; ``{input_dir}`` and ``{output_dir}`` anywhere in an argument are
    replaced by absolute paths. The program is the first item: an interpreter of its own environment
    (``/opt/envs/x/bin/python``), a script, or a name looked up on ``PATH``."""
    timeout_s: float = Field(default=600.0, gt=0)
    """Wall-clock seconds one example may take; then the command's whole process group is killed
    and the example's outputs are missing with ``timeout after Ns``."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment variables. A value may refer to the caller's environment as ``${NAME}``
    (expanded when the command runs; such values are never recorded, only the names)."""
    inherit_env: bool = True
    """Start from the caller's environment (False: only ``PATH``, ``HOME``, ``LANG``, ``TMPDIR``
    and ``env``). omnieval's own ``PYTHONPATH``, ``PYTHONHOME`` and ``VIRTUAL_ENV`` are never
    passed on: they would point another interpreter at omnieval's packages."""
    cwd: str | None = None
    """Working directory of the command (and base of relative paths in ``argv``); default: the
    directory omnieval runs in."""
    conda_env: str | None = None
    """Run through ``conda run --no-capture-output -n <conda_env>`` (conda must be on ``PATH``)."""
    container: ContainerConfig | None = None
    """Run inside a container image instead (see :class:`ContainerConfig`)."""
    stderr_tail_lines: int = Field(default=20, ge=1, le=1000)
    """Lines of the command's stderr (and stdout) kept per example in ``raw/<index>/generated_raw.json``."""

    @field_validator("argv")
    @classmethod
    def _program_given(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value[0].strip():
            raise ValueError("argv[0] (the program) is empty")
        return value

    @field_validator("env")
    @classmethod
    def _names(cls, value: dict[str, str]) -> dict[str, str]:
        bad = [name for name in value if not _ENV_NAME.fullmatch(name)]
        if bad:
            raise ValueError(f"not valid environment variable names: {', '.join(map(repr, bad))}")
        return value

    @model_validator(mode="after")
    def _one_launcher(self) -> CommandConfig:
        if self.conda_env is not None and self.container is not None:
            raise ValueError("give conda_env or container, not both")
        return self

    def env_references(self) -> dict[str, tuple[str, ...]]:
        """``env`` name -> the caller's variables its value refers to (``${NAME}``), for names that refer.

        >>> CommandConfig(argv=("x",), env={"A": "${TOKEN}", "B": "1"}).env_references()
        {'A': ('TOKEN',)}
        """
        refs = {name: tuple(ENV_REFERENCE.findall(value)) for name, value in self.env.items()}
        return {name: found for name, found in refs.items() if found}


__all__ = ["ENV_REFERENCE", "PLACEHOLDERS", "CommandConfig", "ContainerConfig"]
