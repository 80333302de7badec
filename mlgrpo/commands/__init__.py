"""CLI sub-commands. Each module: `register(subparsers)` adds its parser and sets `handler`.

Commands parse arguments, call the library, and print; they hold no logic of their own.
"""
