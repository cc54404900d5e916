import sys

from suite.driver import main

sys.exit(main(sys.argv[1:]))
