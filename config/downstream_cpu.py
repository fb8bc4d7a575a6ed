# The demo model pre-trained five times longer (1,500 iterations, 3.1M tokens, about two passes over the corpus;
# about 30 minutes on one CPU core): the smallest CPU setting where pre-training beats random weights downstream
# (docs/finetune.md). The 5-minute demo stops while the model has barely left the unigram stage.
#   python train.py config/downstream_cpu.py
#   python finetune.py --init_from=out-downstream/ckpt.pt --task=shakespeare_lines --max_train_samples=10000 \
#       --epochs=2 --pooling=mean --learning_rate=1e-3,3e-3 --seeds=0,1,2      # and again with --from_scratch
exec(open('config/demo_cpu.py').read())
out_dir = 'out-downstream'
max_iters = 1500
eval_interval = 250
