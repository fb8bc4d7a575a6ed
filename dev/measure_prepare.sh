#!/usr/bin/env bash
# prepare.py's peak RSS and documents/s as the corpus grows: docs/data.md's table.
#   bash dev/measure_prepare.sh > assets/data/prepare_scaling.tsv
cd "$(dirname "$0")/.."
PY=.venv/bin/python
T=/tmp/corpora
mkdir -p $T
$PY - <<'PY'
import json, random
from data import shakespeare_works
t = shakespeare_works()['hamlet']
for mb in (10, 100):
    n = mb * 1_000_000
    open(f'/tmp/corpora/one_{mb}mb.txt', 'w').write((t * (n // len(t) + 1))[:n])
words = t.split()
random.seed(0)
for k in (100_000, 1_000_000):
    with open(f'/tmp/corpora/short_{k}.jsonl', 'w') as f:
        for i in range(k):
            f.write(json.dumps({'text': ' '.join(random.choices(words, k=12))}) + '\n')
PY
HEADER="corpus\tMB\tshard_tokens\tnum_proc\tdocuments\ttokens\tpeak_rss_mib\twall_s"
echo -e "$HEADER\ttokenize_s\tdocuments_per_s\ttokens_per_s"
# "tokenized D documents into N tokens in Ss ...": field 1, 2 or 3 of prepare.py's summary line
TOKENIZED='s/tokenized ([0-9,]+) documents into ([0-9,]+) tokens in ([0-9.]+)s.*/'
for c in one_10mb.txt one_100mb.txt short_100000.jsonl short_1000000.jsonl; do
  for shard in 1073741824 2000000; do
    case $c in one_*) [ $shard = 2000000 ] && continue;; esac
    for np in 1 2; do
      log=$(/usr/bin/time -f "RSS %M WALL %e" $PY prepare.py --dataset=$T/$c --out_dir=$T/out \
              --num_proc=$np --shard_tokens=$shard --force 2>&1 | grep -v "reading:\|tokenizing:")
      line=$(echo "$log" | grep "^tokenized")
      docs=$(echo "$line" | sed -E "${TOKENIZED}\1/" | tr -d ,)
      toks=$(echo "$line" | sed -E "${TOKENIZED}\2/" | tr -d ,)
      secs=$(echo "$line" | sed -E "${TOKENIZED}\3/")
      rss=$(echo "$log" | grep "^RSS" | awk '{print int($2/1024)}')
      wall=$(echo "$log" | grep "^RSS" | awk '{print $4}')
      mb=$(( $(stat -c %s $T/$c) / 1000000 ))
      docs_per_s=$(python3 -c "print(round($docs/$secs))")
      toks_per_s=$(python3 -c "print(round($toks/$secs))")
      echo -e "$c\t$mb\t$shard\t$np\t$docs\t$toks\t$rss\t$wall\t$secs\t$docs_per_s\t$toks_per_s"
    done
  done
done
