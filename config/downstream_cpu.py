# The demo model pre-trained ten times longer (3,000 iterations, 6.1M tokens, about four passes over
# the corpus; about 45 minutes on one CPU core): the smallest CPU setting where pre-training beats
# random weights on both built-in tasks (docs/finetune.md). The 5-minute demo stops while the model
# has barely left the unigram stage.
#   python train.py config/downstream_cpu.py
#   python finetune.py --init_from=out-downstream/ckpt.pt --max_train_samples=300 \
#       --max_eval_samples=600 --epochs=10 --pooling=mean --learning_rate=1e-3,3e-3 \
#       --seeds=0,1,2      # and again with --from_scratch
exec(open('config/demo_cpu.py').read())
out_dir = 'out-downstream'
max_iters = 3000
eval_interval = 500
