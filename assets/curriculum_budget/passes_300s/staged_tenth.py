# PLAN.md: `make demo`'s staged config (config/demo_staged_cpu.py) on data/shakespeare_tenth
# (tenth.py), with the whole train's remapping files
exec(open('config/demo_staged_cpu.py').read())
dataset = 'shakespeare_tenth'
