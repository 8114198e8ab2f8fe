"""`python -m relay_import ...` is the `relay` command."""

import sys

from .cli import main

sys.exit(main())
