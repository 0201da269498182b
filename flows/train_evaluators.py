"""Prefect entry point of the evaluator training flow (the flow: ``omnieval.flows.train_evaluators``).

python flows/train_evaluators.py pipelines/train_evaluators.yaml
"""

from omnieval.flows.train_evaluators import train_evaluators

__all__ = ["train_evaluators"]

if __name__ == "__main__":
    import sys

    train_evaluators(sys.argv[1] if len(sys.argv) > 1 else "pipelines/train_evaluators.yaml")
