# The full vocabulary with the early decay of config.py here (from half the budget): the factorial's
# fourth arm, so that what the decay does to the full vocabulary is measured beside what it does to
# the curriculum. PLAN.md's amendment says why.
exec(open('config/demo_cpu.py').read())
decay_fraction = 0.5
