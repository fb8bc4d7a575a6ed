# The one-grow curriculum with its learning-rate decay started at half the budget instead of at the
# grow (70%): the decay then covers about a third of its iterations, as the full vocabulary's 30%
# covers a third of its own, instead of a tenth. PLAN.md says why.
exec(open('config/demo_curriculum_cpu.py').read())
decay_fraction = 0.5
