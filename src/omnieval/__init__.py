"""omnieval: an experiment-tracked evaluation platform for omnimodal generation.

Importing the package is cheap: every heavy dependency (torch, mlflow, great_expectations,
transformers, llama.cpp, ...) is imported inside the component that needs it.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
