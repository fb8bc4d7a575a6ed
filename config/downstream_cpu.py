# The demo model pre-trained ten times longer (3,000 iterations, 6.1M tokens, about four passes over
# the corpus; about 38 minutes on one CPU core), against random weights on held-out text in
# docs/finetune.md. The 5-minute demo stops while the model has barely left the unigram stage.
#   python train.py config/downstream_cpu.py --seed=1337 --out_dir=out-downstream-1337  # 1338, 1339
#   python finetune.py --init_from=out-downstream-1337/ckpt.pt,out-downstream-1338/ckpt.pt,... \
#       --task=shakespeare_lines --max_train_samples=5000 --epochs=2 --pooling=mean \
#       --learning_rate=1e-3,3e-3 --seeds=0,1,2 --baseline=scratch
exec(open('config/demo_cpu.py').read())
out_dir = 'out-downstream'
max_iters = 3000
eval_interval = 500
