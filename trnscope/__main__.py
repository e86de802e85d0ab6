import sys

from trnscope.cli.main import main

sys.exit(main())
