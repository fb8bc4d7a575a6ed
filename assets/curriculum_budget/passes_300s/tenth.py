"""PLAN.md's smaller corpus: data/shakespeare_tenth, every tenth document of data/shakespeare's
train.bin (in the works' order, so most works keep a section), its val.bin as
it is, counts.npy recounted over the new train.bin. meta.json keeps the source's fingerprint, so
the source's remapping files (vocab_4096.pt, vocab_18752.pt: the most frequent tokens of the whole
train) load unchanged and both corpora train the same vocabularies.

    python assets/curriculum_budget/passes_300s/tenth.py
"""
import json
import os
import shutil

import numpy as np

SRC, DST, EVERY = 'data/shakespeare', 'data/shakespeare_tenth', 10

meta = json.load(open(os.path.join(SRC, 'meta.json')))
train = np.fromfile(os.path.join(SRC, 'train.bin'), dtype=meta['dtype'])
starts = np.flatnonzero(train == meta['cls_token_id'])  # every document starts with [CLS]
assert starts[0] == 0 and len(starts) == meta['train_documents']
docs = np.split(train, starts[1:])
kept_docs = docs[::EVERY]
kept = np.concatenate(kept_docs)
os.makedirs(DST, exist_ok=True)
kept.tofile(os.path.join(DST, 'train.bin'))
shutil.copy(os.path.join(SRC, 'val.bin'), os.path.join(DST, 'val.bin'))
np.save(os.path.join(DST, 'counts.npy'),
        np.bincount(kept, minlength=meta['vocab_size']).astype(np.int64))
meta.update(dataset='shakespeare_tenth', train_documents=len(kept_docs),
            documents=len(kept_docs) + meta['val_documents'], train_tokens=len(kept),
            train_shards=[len(kept)],
            derived_from=f'every {EVERY}th train document of {SRC} (its fingerprint kept)')
json.dump(meta, open(os.path.join(DST, 'meta.json'), 'w'), indent=2)
print(f"{DST}: {len(kept_docs)} of {len(docs)} documents, {len(kept)} of {len(train)} tokens")
