"""
A downstream task on the pinned code corpus (docs/domain.md): which model family a function of
transformers comes from. The functions come from the package's modeling files that the corpus does
not hold, so neither the start model nor continued pre-training on the corpus read them; a function
whose lines (indentation aside) occur in a corpus file is dropped (transformers copies code between
models), as is one found in two families. The FAMILIES families with the most such functions are
the classes, PER_FAMILY functions each, chosen and split into train, dev and test by the sha256 of
their text. Writes train.jsonl, dev.jsonl and test.jsonl for finetune.py --task=files.
--cut=N cuts every function to the text gpt2's first N tokens hold: a model with gpt2 and one with a
tokenizer extended from it (which reads that text in N tokens or fewer) then see the same text at a
context of N tokens, where uncut the extended one sees more of each function.

    python dev/domain_task.py data/raw/code tasks/code_family
    python dev/domain_task.py data/raw/code tasks/code_family_cut --cut=126
    python finetune.py --init_from=out-code/ckpt.pt --task=files --pooling=mean \\
        --train_file=tasks/code_family/train.jsonl --validation_file=tasks/code_family/dev.jsonl \\
        --test_file=tasks/code_family/test.jsonl --baseline=scratch
"""
import ast
import hashlib
import json
import os
import re
import sys
import textwrap
from collections import Counter
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from domain_corpus import corpus_name, package_root  # noqa: E402
from errors import fail  # noqa: E402
from tokenizer import load_tokenizer  # noqa: E402

FAMILIES, PER_FAMILY, MIN_LINES = 24, 40, 3
SPLITS = (('train', 0.6), ('dev', 0.8), ('test', 1.0))  # by the hash's position in [0, 1)


def functions(text: str) -> list[str]:
    """A module's functions and methods, dedented; nested ones stay inside their parents."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    nodes = [n for top in tree.body
             for n in [top] + (top.body if isinstance(top, ast.ClassDef) else [])]
    # what ast.get_source_segment gives, from one split of the file: it splits the whole file
    # again on every call, which made this script minutes long. Offsets are in UTF-8 bytes.
    lines = [line.encode() for line in re.findall(r'.*?(?:\r\n|\r|\n)|.+', text, flags=re.S)]

    def source(n: ast.AST) -> str:
        *whole, last = lines[n.lineno - 1:n.end_lineno]
        return (b''.join(whole) + last[:n.end_col_offset])[n.col_offset:].decode()

    found = [textwrap.dedent(' ' * n.col_offset + source(n))
             for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return [f for f in found if f.count('\n') + 1 >= MIN_LINES]


def lines_of(text: str) -> str:
    return '\n'.join(line.strip() for line in text.splitlines() if line.strip())


def occurs(function: str, read: str, read_lines: set[str]) -> bool:
    """Whether the function's lines occur in a row in read (lines_of a corpus). A match may start
    inside a line and end inside another, but every line between them is a whole line of read: a
    set lookup rules most functions out before the slow substring search."""
    lines = lines_of(function)
    return all(line in read_lines for line in lines.split('\n')[1:-1]) and lines in read


def digest(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 16 ** 8


def cut_to_tokens(text: str, tok, n: int) -> str:
    """The text the tokenizer's first n tokens hold (a character cut in two is left out)."""
    return tok.decode(tok.encode_ordinary(text)[:n]).rstrip('\ufffd')


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith('--cut=')]
    cuts = [a.removeprefix('--cut=') for a in sys.argv[1:] if a.startswith('--cut=')]
    positive = all(c.isdigit() and int(c) > 0 for c in cuts)
    if len(args) != 2 or len(cuts) > 1 or not positive:
        fail('usage: python dev/domain_task.py <corpus folder of dev/domain_corpus.py> '
             '<out folder> [--cut=<a positive number of gpt2 tokens>]')
    corpus, out = Path(args[0]), args[1]
    cut = int(cuts[0]) if cuts else None
    gpt2 = load_tokenizer('gpt2') if cut else None
    try:
        manifest = json.loads(corpus.with_name(f'{corpus.name}.json').read_text())
    except (OSError, ValueError):
        fail(f'{corpus}.json is missing: give a folder dev/domain_corpus.py wrote')
    if os.path.exists(out):
        fail(f'{out} exists: name a new folder')
    root = package_root(manifest['package'], manifest['version'])
    in_corpus = {p.name for p in corpus.iterdir()}
    read = '\n'.join(lines_of(p.read_text(encoding='utf-8')) for p in corpus.iterdir())
    read_lines = set(read.split('\n'))
    family = {}
    for path in sorted(root.glob('models/*/modeling_*.py')):
        if corpus_name(root, path) not in in_corpus:
            family.setdefault(path.parent.name, set()).update(
                functions(path.read_text(encoding='utf-8')))
    seen = Counter(f for fs in family.values() for f in fs)
    fresh = {name: sorted((f for f in fs if seen[f] == 1 and not occurs(f, read, read_lines)),
                         key=digest)
             for name, fs in family.items()}
    classes = sorted(sorted(fresh, key=lambda n: (-len(fresh[n]), n))[:FAMILIES])
    if len(fresh[classes[-1]]) < PER_FAMILY:
        fail(f'only {len(classes)} families hold {PER_FAMILY} functions outside the corpus')
    rows = {name: [] for name, _ in SPLITS}
    for name in classes:
        for f in fresh[name][:PER_FAMILY]:
            # the split reads other digits of the hash than the choice did
            split = next(s for s, upto in SPLITS if digest(f[::-1]) < upto)
            rows[split].append({'text': cut_to_tokens(f, gpt2, cut) if cut else f, 'label': name})
    os.makedirs(out)
    for split, examples in rows.items():
        with open(os.path.join(out, f'{split}.jsonl'), 'w') as f:
            f.writelines(json.dumps(e) + '\n' for e in examples)
    print(f"{out}: {len(classes)} families ({', '.join(classes)}), {PER_FAMILY} functions each: "
          + ', '.join(f'{len(v)} {k}' for k, v in rows.items()))


if __name__ == '__main__':
    main()
