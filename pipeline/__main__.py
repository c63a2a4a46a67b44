"""``python -m pipeline`` runs the same command line as the ``zitadel-beam`` script."""

import sys

from pipeline.cli import main

if __name__ == "__main__":
    sys.exit(main())
