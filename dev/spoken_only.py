"""shakespeare_works from the spoken lines alone: speaker headings, stage directions and short
lines removed (the same filter as shakespeare_lines), to see whether random weights win only
through the speaker names. It takes finetune.py's arguments.

    python dev/spoken_only.py --init_from=out-p1500/ckpt.pt --max_train_samples=300 \\
        --max_eval_samples=600 --epochs=10 --learning_rate=1e-3 --seeds=0,1,2 --pooling=mean
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import finetune  # noqa: E402

works_split = finetune.shakespeare_split


def spoken(sections: dict) -> dict:
    return {name: ['\n'.join(finetune.verse_lines(s)) for s in work]
            for name, work in sections.items()}


def spoken_split() -> tuple[dict, dict]:
    train, held_out = works_split()
    return spoken(train), spoken(held_out)


finetune.shakespeare_split = spoken_split
finetune.main(sys.argv[1:])
