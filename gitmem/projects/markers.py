"""Whether a folder is a project's although git does not know it: the files whose presence says so. Light (``os``
only): the session start's hook asks it before it decides to scan a folder."""

from __future__ import annotations

import os

#: files whose presence makes a folder a project's even outside git (what a session start may scan)
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile", "package.json",
                   "Cargo.toml", "go.mod", "Gemfile", "pom.xml", "build.gradle", "build.gradle.kts", "composer.json",
                   "Makefile", "justfile", "CMakeLists.txt", "mix.exs", "pubspec.yaml", "deno.json")


def is_project_folder(folder: str) -> bool:
    """Whether ``folder`` holds a file of :data:`PROJECT_MARKERS` (a project kept outside git)."""
    return any(os.path.isfile(os.path.join(folder, name)) for name in PROJECT_MARKERS)
