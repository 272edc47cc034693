"""``python -m tritium`` is the ``tritium`` command."""
import sys

from .cli import main

sys.exit(main())
