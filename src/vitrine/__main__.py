"""``python -m vitrine`` runs the command-line interface."""

from vitrine._cli import main

raise SystemExit(main())
