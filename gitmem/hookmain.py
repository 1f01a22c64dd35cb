"""``python -m gitmem.hookmain <event>``: the hook entry's path before the subpackages (legacy-path), kept so that
settings files written by older versions still run. The hook process is :mod:`gitmem.agents.claude.entry`."""

import sys

from gitmem.agents.claude.entry import main

if __name__ == "__main__":
    sys.exit(main())
