"""``python -m vitrine`` runs the command-line interface."""

from vitrine.cli import main

raise SystemExit(main())
