"""Fixtures of the judge tests (helpers live in ``judge_fixtures``)."""

from judge_fixtures import story, write_panel

__all__ = ["story", "write_panel"]
