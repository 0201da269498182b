"""Prefect entry point of the nightly evaluation flow (the flow itself: ``omnieval.flows.nightly``).

python flows/nightly.py pipelines/nightly.yaml
"""

from omnieval.flows.nightly import nightly, serve

__all__ = ["nightly", "serve"]

if __name__ == "__main__":
    import sys

    print(nightly(sys.argv[1] if len(sys.argv) > 1 else "pipelines/nightly.yaml"))
