import sys

from perfpost.cli import main

sys.exit(main())
