"""Coding agents gitmem serves through their hooks."""
