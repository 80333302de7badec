"""`mlgrpo suites`: list the built-in task suites, print sample records, regenerate the data cards.

    mlgrpo suites                                   list suites, languages and item counts
    mlgrpo suites show NAME [--language L] [--split train|eval] [-n 5] [--prompt-style instruct]
    mlgrpo suites cards --out data_cards/           write one markdown card per suite

Parses arguments, calls mlgrpo.data.suites and mlgrpo.data.cards, and prints; no logic of its own.
"""

from __future__ import annotations

import argparse
import json

from mlgrpo.data.suites.loader import DEFAULT_EVAL_SHARE, PROMPT_STYLES, SPLITS


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "suites",
        help="built-in multilingual task suites: list them, show records, write data cards",
        description="Built-in verifiable task suites made from data that ships in installed packages.",
    )
    parser.set_defaults(handler=list_suites)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")

    listing = actions.add_parser("list", help="list suites, languages and item counts (the default)")
    listing.set_defaults(handler=list_suites)

    show = actions.add_parser("show", help="print sample records of a suite as JSON lines")
    show.add_argument("name", help="suite name, e.g. numbers")
    show.add_argument("--language", "-l", action="append", dest="languages", metavar="L",
                      help="language code; repeat for several (default: all of the suite's)")  # fmt: skip
    show.add_argument("--split", default="train", choices=SPLITS)
    show.add_argument("-n", type=int, default=5, help="records per language (a seeded sample; default 5)")
    show.add_argument("--prompt-style", default="tag", choices=PROMPT_STYLES)
    show.add_argument("--eval-share", type=float, default=DEFAULT_EVAL_SHARE)
    show.add_argument("--seed", type=int, default=0)
    show.set_defaults(handler=show_records)

    cards = actions.add_parser("cards", help="regenerate the markdown data cards")
    cards.add_argument("--out", default="data_cards", help="folder for the cards (default: data_cards)")
    cards.set_defaults(handler=write_cards)


def list_suites(args: argparse.Namespace) -> int:
    from mlgrpo.data.suites import available_suites, item_split, language_items

    for name, spec in available_suites().items():
        print(f"{name}: {spec.description}")
        print(f"  sources: {', '.join(f'{s} ({s.license})' for s in spec.sources)}")
        if spec.missing:
            print(f"  not installed; add it with: {'; '.join(spec.missing)}")
            continue
        items = {language: language_items(name, language).items for language in spec.languages}
        total = sum(map(len, items.values()))
        held_out = sum(
            item_split(name, item.key, DEFAULT_EVAL_SHARE) == "eval" for some in items.values() for item in some
        )
        print(f"  {len(items)} languages, {total} items ({total - held_out} train, {held_out} eval at "
              f"eval_share {DEFAULT_EVAL_SHARE}):")  # fmt: skip
        print("  " + ", ".join(f"{language} {len(some)}" for language, some in items.items()))
    return 0


def show_records(args: argparse.Namespace) -> int:
    from mlgrpo.data.suites import load_suite
    from mlgrpo.data.suites.loader import get_spec

    languages = args.languages or list(get_spec(args.name).languages)
    records = load_suite(
        args.name,
        languages=languages,
        split=args.split,
        per_language=dict.fromkeys(languages, args.n),
        eval_share=args.eval_share,
        prompt_style=args.prompt_style,
        seed=args.seed,
    )
    for record in records:
        print(json.dumps(record, ensure_ascii=False))
    return 0


def write_cards(args: argparse.Namespace) -> int:
    from mlgrpo.data.cards import write_cards as write

    for path in write(args.out):
        print(path)
    return 0
