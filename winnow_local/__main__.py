"""``python -m winnow``: the same as the ``winnow`` console script."""

import sys

from winnow.cli import main

sys.exit(main())
