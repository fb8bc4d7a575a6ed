"""
The vocabulary curriculum's machinery that outlives one optimizer: schedule operations rebuild the optimizer over a
changed set of parameters, and its state must follow each parameter by name.
"""
import torch


def load_state_by_name(opt: torch.optim.Optimizer, named_state: dict) -> dict:
    """Give each parameter of `opt` the state of the same name in named_state (AdamW's moments and step); return
    the entries no parameter of `opt` takes (parameters frozen now), to be kept until they train again.

    The state goes in through opt.load_state_dict, so torch places each tensor as it does for a resumed optimizer:
    moments on the parameter's device and dtype, the step count on the device too where fused or capturable AdamW
    needs it. (State parked on the CPU and unfrozen on CUDA would otherwise crash fused AdamW.)"""
    saved = opt.state_dict()
    ids = {name: i for group in saved['param_groups'] for i, name in zip(group['params'], group['param_names'])}
    saved['state'] = {ids[name]: state for name, state in named_state.items() if name in ids}
    opt.load_state_dict(saved)
    return {name: state for name, state in named_state.items() if name not in ids}
