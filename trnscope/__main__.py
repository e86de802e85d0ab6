import sys

from trnscope.cli import main

sys.exit(main())
