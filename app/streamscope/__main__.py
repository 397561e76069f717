"""`python -m streamscope` is the same as the `streamscope` command."""

import sys

from streamscope.cli import main

sys.exit(main())
