"""The `mlgrpo` command: one entry point, one sub-command per capability.

Each sub-command lives in `mlgrpo/commands/<name>.py` with `register(subparsers)`; this module only
wires them, sets thread counts, and turns a UserError into one line on stderr and a non-zero exit.
Heavy libraries are imported by the command that needs them, so `mlgrpo --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from mlgrpo import __version__
from mlgrpo.errors import UserError

# In data-flow order; `mlgrpo --help` lists them this way.
COMMAND_MODULES = ("data", "suites", "langid", "model", "validate", "run", "eval", "report", "ui", "server")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every sub-command, or of `only` (start-up cost: each module imports what its
    options need; `mlgrpo langid` on a large file is measured end to end, start-up included)."""
    parser = argparse.ArgumentParser(
        prog="mlgrpo",
        description="Multilingual GRPO vs PPO experiments: prepare data, identify languages, "
        "run comparisons, and report per-language results.",
    )
    parser.add_argument("--version", action="version", version=f"mlgrpo {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES if only is None else (only,):
        importlib.import_module(f"mlgrpo.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from mlgrpo.runtime import configure_threads

    configure_threads()
    words = sys.argv[1:] if argv is None else argv
    first = next((word for word in words if not word.startswith("-")), None)
    parser = build_parser(first if first in COMMAND_MODULES else None)
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except UserError as exc:
        print(f"mlgrpo {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"mlgrpo {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `mlgrpo data inspect x | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
