"""Connections to coding agents: what each agent's hooks call and how gitmem is installed into it."""
