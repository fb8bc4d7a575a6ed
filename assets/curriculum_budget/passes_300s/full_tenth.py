# PLAN.md: the full vocabulary (config/demo_cpu.py) on data/shakespeare_tenth (tenth.py)
exec(open('config/demo_cpu.py').read())
dataset = 'shakespeare_tenth'
