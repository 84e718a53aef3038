"""``python -m vitrine_shop``: the shop assistant on its own (see ``subject_cli``)."""

from vitrine_shop.subject_cli import main

raise SystemExit(main())
