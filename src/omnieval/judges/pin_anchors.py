"""(Re)pin the judge-drift anchors: judge them now and write ``<drift.anchors>/pinned.json``.

python -m omnieval.judges.pin_anchors --suite pipelines/nightly.yaml

Run it after a deliberate judge change (model, prompt, settings) and commit the new file; the
nightly drift check (docs/judges.md) compares against it.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    from omnieval.config import load_suite
    from omnieval.errors import ConfigError, DataError
    from omnieval.judges._drift import pin_anchors, pinned_path
    from omnieval.stages.validate import load_instances

    parser = argparse.ArgumentParser(prog="python -m omnieval.judges.pin_anchors", description=__doc__)
    parser.add_argument("--suite", required=True, help="suite YAML whose drift block names the anchors")
    args = parser.parse_args(argv)
    try:
        config = load_suite(args.suite)
        document = pin_anchors(config, load_instances(config))
    except (ConfigError, DataError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    n = sum(len(per) for per in document["anchors"].values())
    print(f"pinned {n} anchor verdicts of panel {document['panel']} to {pinned_path(config)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
