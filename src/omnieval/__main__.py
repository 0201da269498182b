from omnieval.cli import main

raise SystemExit(main())
