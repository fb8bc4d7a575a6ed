"""
The pinned domain corpus of the vocabulary-extension measurements (docs/domain.md): the Python
source files of an installed package at a named version, each file one .txt document in a folder
that prepare.py reads. Files are taken in the order of the sha256 of their path inside the package
(a spread over all of it) until the corpus holds the megabytes asked for, so the same version gives
the same text anywhere.

    python dev/domain_corpus.py transformers==5.23.0 8 data/raw/transformers_src
    python prepare.py --dataset=data/raw/transformers_src --out_dir=data/code \
        --tokenizer=gpt2 --extend_tokenizer=2000
"""
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from errors import fail  # noqa: E402


def package_root(package: str, version: str) -> Path:
    """The folder of an installed package, which must be at the named version."""
    try:
        installed = importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        installed = None
    if installed != version:
        fail(f'{package} {installed or "is not installed"}{" is installed" if installed else ""}, '
             f'not {version}: pip install {package}=={version}')
    return Path(importlib.util.find_spec(package).submodule_search_locations[0])


def corpus_name(root: Path, path: Path) -> str:
    """A source file's document name in the corpus folder."""
    return str(path.relative_to(root)).replace(os.sep, '__') + '.txt'


def main() -> None:
    if len(sys.argv) != 4 or sys.argv[1].count('==') != 1:
        fail('usage: python dev/domain_corpus.py <package>==<version> <megabytes> <out folder>')
    package, version = sys.argv[1].split('==')
    megabytes, out = float(sys.argv[2]), Path(sys.argv[3])
    root = package_root(package, version)
    if out.exists():
        fail(f'{out} exists; give a new folder')
    files = sorted(root.rglob('*.py'),
                   key=lambda p: hashlib.sha256(str(p.relative_to(root)).encode()).hexdigest())
    out.mkdir(parents=True)
    taken, size = [], 0
    for path in files:
        text = path.read_text(encoding='utf-8', errors='replace')
        if not text.strip():
            continue
        (out / corpus_name(root, path)).write_text(text, encoding='utf-8')
        taken.append(path)
        size += len(text.encode())
        if size >= megabytes * 2 ** 20:
            break
    (out.parent / f'{out.name}.json').write_text(json.dumps(
        dict(package=package, version=version, files=len(taken), bytes=size), indent=1))
    print(f'{out}: {len(taken)} files of {package} {version}, {size / 2 ** 20:.1f} MiB')


if __name__ == '__main__':
    main()
