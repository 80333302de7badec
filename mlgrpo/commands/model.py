"""`mlgrpo model`: build the embedded tiny base model, and describe a saved model folder.

    mlgrpo model build-tiny [--suite numbers] [--languages en,ru,ja,sw] [--seed 0] [--out DIR] [--force]
    mlgrpo model info PATH       (a folder, or gemma-3-270m / a .gguf file: converted once, then described)

Parses arguments, calls mlgrpo.models, prints. Progress goes to stderr, results to stdout.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser("model", help="build the tiny base model; describe a model folder")
    sub = parser.add_subparsers(dest="model_command", metavar="ACTION")
    sub.required = True

    build = sub.add_parser(
        "build-tiny",
        help="build (or re-use) the tiny multilingual base model, offline",
        description="Train a byte-level BPE tokenizer and a small Qwen2 model on a built-in suite, warm-start "
        "it with SFT until held-out exact match reaches the target, and cache it under a folder named by "
        "a hash of all settings. A complete cached folder is re-used.",
    )
    build.add_argument("--suite", help="built-in task suite (default: numbers)")
    build.add_argument("--languages", help="comma-separated language codes (default: en,es,ru,ar,ja,sw)")
    build.add_argument("--seed", type=int, help="seed for weights, data order and held-out sample (default: 0)")
    build.add_argument("--options", default="", metavar="K=V,...",
                       help="any other setting, as in 'tiny:<options>', e.g. hidden_size=128,num_layers=2")
    build.add_argument("--out", metavar="DIR", help="folder holding built models (default: $MLGRPO_CACHE/models "
                       "or ~/.cache/mlgrpo/models)")
    build.add_argument("--force", action="store_true", help="rebuild even if a complete build is cached")
    build.add_argument("--json", action="store_true", help="print the build facts as JSON")
    build.set_defaults(handler=run_build)

    info = sub.add_parser("info", help="describe a saved model folder (architecture, size, build facts)")
    info.add_argument("path", help="model folder, or gemma-3-270m / a .gguf file (converted first if need be)")
    info.add_argument("--json", action="store_true", help="print as JSON")
    info.set_defaults(handler=run_info)


def _settings(args: argparse.Namespace):
    from mlgrpo.models.settings import parse_options

    settings = parse_options(args.options)
    explicit = {"suite": args.suite, "seed": args.seed}
    if args.languages:
        explicit["languages"] = tuple(code.strip() for code in args.languages.split(",") if code.strip())
    return dataclasses.replace(settings, **{k: v for k, v in explicit.items() if v is not None})


def run_build(args: argparse.Namespace) -> int:
    from mlgrpo.models.info import describe
    from mlgrpo.models.tiny import build_tiny

    folder = build_tiny(_settings(args), models_dir=args.out, force=args.force,
                        progress=lambda line: print(line, file=sys.stderr, flush=True))
    _print(describe(folder), as_json=args.json)
    return 0


def run_info(args: argparse.Namespace) -> int:
    from mlgrpo.models.info import describe
    from mlgrpo.models.loading import classify_spec, resolve

    path = args.path
    if classify_spec(path)[0] in ("packaged", "gguf"):  # converted once, then described like any folder
        path = resolve(path)
    _print(describe(path), as_json=args.json)
    return 0


def _print(summary: dict, *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return
    params = summary["parameters"]
    print(f"{summary['path']}\n  {summary['architecture']}: {summary['layers']} layers, hidden "
          f"{summary['hidden_size']}, vocab {summary['vocab_size']}, "
          f"{f'{params:,}' if params else '?'} parameters")
    build = summary.get("build")
    if not build:
        return
    if "gguf_sha256" in build:  # a GGUF conversion (mlgrpo.models.gguf), not a tiny build
        source = build["source"]
        origin = source.get("upstream", source.get("path"))
        print(f"  converted from GGUF (sha256 {build['gguf_sha256'][:16]}...): {origin}; "
              f"conversion {build['wall_seconds']} s")
        if "license" in source:
            print(f"  license: {source['license']}")
        return
    settings, warm = build["settings"], build["warm_start"]
    print(f"  suite {settings['suite']}, languages {','.join(settings['languages'])}, seed {settings['seed']}")
    print(f"  warm start: {warm['steps']} SFT steps ({warm['seconds']} s), stopped by {warm['stopped_by']}"
          f"{'' if warm['in_target_window'] else ' (outside the target window!)'}; build {build['wall_seconds']} s")
    final = build["final_exact_match"]
    langs = " ".join(f"{lang} {em:.2f}" for lang, em in final["by_language"].items())
    print(f"  starting exact match {final['macro']:.3f} (eval split, {final['per_language']}/language): {langs}")
    for language, samples in build.get("samples", {}).items():
        for sample in samples:
            mark = "=" if sample["exact_match"] else "x"
            print(f"    {mark} {sample['prompt']} {sample['output']!r} (reference {sample['reference']!r})")
