"""``python -m organs.cli``: the ``ichor`` command."""

import sys

from organs.cli import main

sys.exit(main())
