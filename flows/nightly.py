"""Prefect entry point of the nightly evaluation flow (the flow itself: ``omnieval.flows.nightly``).

python flows/nightly.py pipelines/nightly.yaml     # one run now
omnieval serve pipelines/nightly.yaml             # the suite's schedule, on a persistent local Prefect server
"""

from omnieval.flows.nightly import nightly

__all__ = ["nightly"]

if __name__ == "__main__":
    import sys

    print(nightly(sys.argv[1] if len(sys.argv) > 1 else "pipelines/nightly.yaml"))
