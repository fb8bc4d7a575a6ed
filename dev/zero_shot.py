"""
The MLM's zero-shot scores on the held-out Shakespeare text (finetune.zero_shot: each token masked
alone in turn, 16,384 tokens shared by every work), for each checkpoint given, one JSON line each:
masked-token accuracy and pseudo-log-likelihood with their 95% intervals (resampling the works).

    python dev/zero_shot.py out-a/ckpt.pt out-b/ckpt.pt > zero_shot.jsonl
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from checkpoint import load_model  # noqa: E402
from finetune import zero_shot  # noqa: E402
from tokenizer import load_recorded_tokenizer  # noqa: E402

device = 'cuda' if torch.cuda.is_available() else 'cpu'
for source in sys.argv[1:]:
    loaded = load_model(source)
    tok = load_recorded_tokenizer(loaded.tokenizer, source)
    scores = zero_shot([loaded.model], tok, 16384, 128, device)
    print(json.dumps(dict(init_from=source, **scores)), flush=True)
