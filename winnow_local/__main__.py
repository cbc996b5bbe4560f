"""``python -m winnow_local``: the same as the ``winnow`` console script."""

import sys

from winnow_local.cli.main import main

sys.exit(main())
