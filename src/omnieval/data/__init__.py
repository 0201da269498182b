"""Dataset loaders, strict validation and fingerprints."""

from omnieval.data._records import (
    BookMetadata,
    Character,
    NextPageCondition,
    TargetSpeech,
    TaskInputs,
    Transition,
)

__all__ = ["BookMetadata", "Character", "NextPageCondition", "TargetSpeech", "TaskInputs", "Transition"]
