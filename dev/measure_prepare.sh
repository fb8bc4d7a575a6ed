#!/usr/bin/env bash
# prepare.py's peak RSS and documents/s as the corpus grows: docs/data.md's table (bash assets/data/measure_prepare.sh)
cd "$(dirname "$0")/../.."
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
echo -e "corpus\tMB\tshard_tokens\tnum_proc\tdocuments\ttokens\tpeak_rss_mib\twall_s\ttokenize_s\tdocuments_per_s\ttokens_per_s"
for c in one_10mb.txt one_100mb.txt short_100000.jsonl short_1000000.jsonl; do
  for shard in 1073741824 2000000; do
    case $c in one_*) [ $shard = 2000000 ] && continue;; esac
    for np in 1 2; do
      log=$(/usr/bin/time -f "RSS %M WALL %e" $PY prepare.py --dataset=$T/$c --out_dir=$T/out --num_proc=$np --shard_tokens=$shard --force 2>&1 | grep -v "reading:\|tokenizing:")
      line=$(echo "$log" | grep "^tokenized")
      docs=$(echo "$line" | sed -E 's/tokenized ([0-9,]+) documents into ([0-9,]+) tokens in ([0-9.]+)s.*/\1/' | tr -d ,)
      toks=$(echo "$line" | sed -E 's/tokenized ([0-9,]+) documents into ([0-9,]+) tokens in ([0-9.]+)s.*/\2/' | tr -d ,)
      secs=$(echo "$line" | sed -E 's/tokenized ([0-9,]+) documents into ([0-9,]+) tokens in ([0-9.]+)s.*/\3/')
      rss=$(echo "$log" | grep "^RSS" | awk '{print int($2/1024)}')
      wall=$(echo "$log" | grep "^RSS" | awk '{print $4}')
      mb=$(( $(stat -c %s $T/$c) / 1000000 ))
      echo -e "$c\t$mb\t$shard\t$np\t$docs\t$toks\t$rss\t$wall\t$secs\t$(python3 -c "print(round($docs/$secs))")\t$(python3 -c "print(round($toks/$secs))")"
    done
  done
done
