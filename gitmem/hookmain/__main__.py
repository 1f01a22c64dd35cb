"""Run the hook process (:func:`gitmem.agents.claude.entry.main`) for settings files that name the old module."""

import sys

from gitmem.agents.claude.entry import main

sys.exit(main())
