from syncfree_lint.cli import main

raise SystemExit(main())
