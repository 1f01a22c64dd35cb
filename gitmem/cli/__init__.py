"""The gitmem command: the click group, environment and the one place errors become one line (app), one module
per command family that decorates the group, and main, which imports them all.

May import: everything; nothing in the library imports it."""
