"""`python -m judgebias.devserver`: serve the stand-in judge on 127.0.0.1."""

import sys

from judgebias.devserver.server import main

sys.exit(main())
