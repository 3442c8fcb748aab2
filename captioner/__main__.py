from captioner.cli import main

raise SystemExit(main())
