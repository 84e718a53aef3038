"""``python -m vitrine.service wait URL``: block until a served assistant reports ready."""

import sys

from vitrine.service._process import main

sys.exit(main())
