#!/usr/bin/env bash
# After the timed runs of seeds 4-6 (run.sh): the unseen-lines score, the code check of PLAN.md,
# and one folder holding all six seeds for dev/domain_arms_summary.py.
#   bash assets/domain/arms1200/seeds456/after.sh /work/runs/arms_gpt2_456 \
#       /work/runs/p3000_s1337/ckpt.pt
set -euo pipefail
out=$1 start=$2
first=assets/domain/arms1200
PY=${PY:-.venv/bin/python}
export WANDB_MODE=disabled
ckpts=()
for s in 4 5 6; do ckpts+=("$out/pieces_s$s/ckpt.pt" "$out/random_s$s/ckpt.pt"); done
[ -f "$out/unseen_lines.jsonl" ] || OMP_NUM_THREADS=2 $PY dev/domain_eval.py --unseen_lines \
    "$out/data_none" "${ckpts[@]}" > "$out/unseen_lines.jsonl"
# Seed 1's grow and first evaluation at this commit, on one thread as the runs had: on two,
# grow_kl's sums run in another order (code_check.txt, the first call's, differs by two ulp).
for arm in pieces random; do
    extra=(); [ $arm = random ] && extra=(--grow_rows=random)
    OMP_NUM_THREADS=1 $PY train.py config/domain_cpu.py --init_from="$start" \
        --dataset="$out/data_ext" --seed=1 --max_iters=1 --eval_interval=250 \
        --out_dir="$out/check_${arm}_s1" "${extra[@]}" > "$out/check_${arm}_s1.log" 2>&1
    echo "$arm seed 1 then:          $(sed -n 2,3p $first/${arm}_s1.jsonl | tr '\n' ' ')"
    echo "$arm seed 1 now, 1 thread: $(sed -n 2,3p "$out/check_${arm}_s1/metrics.jsonl" \
        | tr '\n' ' ')"
done > "$out/code_check_one_thread.txt"
all=$out/six_seeds
mkdir -p "$all"
for d in data_none data_ext data_added; do ln -sfn "$out/$d" "$all/$d"; done
for arm in pieces random; do
    for s in 1 2 3; do
        mkdir -p "$all/${arm}_s$s"
        cp "$first/${arm}_s$s.jsonl" "$all/${arm}_s$s/metrics.jsonl"
    done
    for s in 4 5 6; do ln -sfn "$out/${arm}_s$s" "$all/${arm}_s$s"; done
done
for f in loss_per_byte unseen_lines; do
    grep -h -E '/(pieces|random)_s[123]/' "$first/$f.jsonl" > "$all/$f.jsonl"
    cat "$out/$f.jsonl" >> "$all/$f.jsonl"
done
# Speed: seeds 4-6 ran fewer iterations than seeds 1-3. The same 60 iterations at this commit and at
# the first session's (6f07b3e), side by side, one thread each: is it the code or the machine?
old=/tmp/nanobert_6f07b3e
[ -d $old ] || git worktree add --detach $old 6f07b3e > /dev/null 2>&1
speed() {  # folder of train.py, output name
    (cd "$1" && OMP_NUM_THREADS=1 $OLDPWD/$PY train.py config/domain_cpu.py --init_from="$start" \
        --dataset="$out/data_ext" --seed=1 --max_iters=60 --eval_interval=1000 \
        --out_dir="$out/$2" > "$out/$2.log" 2>&1)
}
speed . speed_head & speed $old speed_6f07b3e & wait
grep -h "^iter [2-6]0:" "$out/speed_head.log" "$out/speed_6f07b3e.log" > "$out/speed.txt"
