"""The file the Flex Template launcher runs (FLEX_TEMPLATE_PYTHON_PY_FILE in the Dockerfile).

It lives outside the packages so that the launcher's ``python <file>`` puts only this folder on
``sys.path`` (a script inside ``pipeline/`` would put that folder's modules there as top-level
names). The work is in ``pipeline/flex_entry.py``.
"""

import sys

from pipeline.flex_entry import main

if __name__ == "__main__":
    sys.exit(main())
