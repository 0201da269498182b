"""Prefect entry point of the dataset audit flow (the flow itself: ``omnieval.flows.audit``).

python flows/audit.py data/storybench-sample      # same as `omnieval audit data/storybench-sample`
"""

from omnieval.flows.audit import audit

__all__ = ["audit"]

if __name__ == "__main__":
    import sys

    print(audit(sys.argv[1] if len(sys.argv) > 1 else "data/storybench-sample"))
