"""
Config files and --key=value overrides for train.py, nanoGPT style:

    python train.py config/demo_cpu.py --batch_size=32 --compile=False

train.py defines its defaults as module-level globals, then runs
exec(open('configurator.py').read()), which applies this file's `configure` to them.
Config files are Python; overrides are Python literals (true/false accepted for bools, a bare --flag
is --flag=true, a list key takes a comma list: --sizes=512,1024).
Unknown keys and wrong types stop the run with one line naming the key and the fix.
"""
import ast
import builtins
import difflib
import json
import os
import re
import sys
import types
from typing import Any, NoReturn

from errors import fail


def _fail(message: str) -> NoReturn:
    fail(f'config error: {message}')


def _unknown(key: str, known: dict, where: str) -> None:
    close = difflib.get_close_matches(key, list(known), n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ''
    _fail(f"unknown key '{key}' in {where}{hint}")


def _check_type(key: str, value: Any, default: Any, where: str) -> Any:
    """Return value converted to the default's type, or stop with a clear message."""
    if default is None or value is None:
        return value  # None defaults take any type; any key may be set to None
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
    elif isinstance(default, float):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(value, type(default)):
        return value
    _fail(f'{key}={value!r} in {where} is {type(value).__name__}, '
          f'expected {type(default).__name__} like the default {default!r}')


def _literal_or_word(raw: str) -> Any:
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return raw  # a bare word such as --init_from=resume


def _parse_literal(key: str, raw: str, default: Any) -> Any:
    if isinstance(default, bool) and raw.lower() in ('true', 'false'):
        return raw.lower() == 'true'
    if isinstance(default, list) and not raw.startswith('[') and not raw.endswith('.json'):
        # --sizes=512,1024
        return [_literal_or_word(item.strip()) for item in raw.split(',') if item.strip()]
    if isinstance(default, (list, dict)) and raw.endswith('.json'):
        if not os.path.isfile(raw):
            _fail(f'--{key}={raw}: no such JSON file')
        with open(raw) as f:
            try:
                return json.load(f)
            except json.JSONDecodeError as e:
                _fail(f'--{key}={raw}: invalid JSON ({e})')
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        if isinstance(default, str) or default is None:
            return raw  # a bare word such as --init_from=resume
        _fail(f'--{key}={raw} is not a valid Python literal of type {type(default).__name__}')


def _read_config_file(path: str, config: dict) -> dict:
    if not os.path.isfile(path):
        _fail(f"config file '{path}' not found (give a path such as config/demo_cpu.py)")
    scope: dict = {}
    with open(path) as f:
        source = f.read()
    try:
        # train.py has a global named compile
        exec(builtins.compile(source, path, 'exec'), scope)
    except Exception as e:  # a config file is user code: report where it broke
        _fail(f"config file '{path}' failed: {type(e).__name__}: {e}")
    updates = {}
    for key, value in scope.items():
        if key.startswith('_') or isinstance(value, (types.ModuleType, types.FunctionType, type)):
            continue
        if key not in config:
            _unknown(key, config, path)
        updates[key] = _check_type(key, value, config[key], path)
    return updates


def knob_comments(source: str) -> tuple[dict, dict]:
    """What a script's source says of each knob: the comment beside its `key = value` (or
    `key=value,`) line, with a comment block of two or more lines right above it, and the comment
    lines right below it that continue it (their text indented); and the one-line headers above
    knobs ("# data"), which start a section."""
    comments, headers, block, last = {}, {}, [], None
    for line in source.splitlines():
        stripped = line.strip()
        if not stripped or re.fullmatch(r'#\s*-{3,}.*', stripped):
            block, last = [], None
        elif stripped.startswith('#'):
            # continues the comment beside the knob
            if last is not None and re.match(r'#\s{2,}\S', stripped):
                comments[last] += ' ' + stripped.lstrip('#').strip()
            else:
                block.append(stripped.lstrip('#').strip())
                last = None
        elif ((knob := re.match(r'(\w+)\s*=([^#]*)(#\s?(.*))?$', stripped))
              and knob.group(1) not in comments):
            last = knob.group(1)
            above = ' '.join(block) + ' ' if len(block) > 1 else ''
            comments[last] = (above + (knob.group(4) or '')).strip()
            if len(block) == 1:
                headers[last] = block[0]
            block = []
        else:
            block, last = [], None
    return comments, headers


def print_help(config: dict, script: str) -> None:
    """The script's docstring, then every knob with its default and the comment beside it in the
    script."""
    with open(script) as f:
        source = f.read()
    print((ast.get_docstring(ast.parse(source)) or '').strip() + '\n')
    print('Settings: --key=value on the command line, or key = value in a config file; '
          'the defaults:')
    comments, headers = knob_comments(source)
    for key, default in config.items():
        if key in headers:
            print(f'\n  # {headers[key]}')
        print(f'  --{key}={default!r}'
              + (f'  # {comments[key]}' if comments.get(key) else ''))


def configure(config: dict, argv: list[str]) -> dict:
    """Apply config files and --key=value overrides in argv to a copy of config; return it. --help
    (or -h) prints the settings with their defaults and exits."""
    if '--help' in argv or '-h' in argv:
        print_help(config, sys.argv[0])
        raise SystemExit(0)
    config = dict(config)
    for arg in argv:
        if not arg.startswith('--'):
            config.update(_read_config_file(arg, config))
            continue
        key, sep, raw = arg[2:].partition('=')
        if key not in config:
            _unknown(key, config, 'the command line')
        if not sep and isinstance(config[key], bool):
            raw = 'true'  # a bare --flag switches a boolean on
        elif not sep:
            _fail(f"'{arg}' has no value; write --{key}=VALUE")
        value = _parse_literal(key, raw, config[key])
        config[key] = _check_type(key, value, config[key], 'the command line')
    return config


def check_choices(config: dict, choices: dict) -> None:
    """Stop with one line when a setting is not one of its allowed values (choices: name -> the
    values)."""
    for name, allowed in choices.items():
        if config[name] not in allowed:
            fail(f"{name}={config[name]!r} is not one of {', '.join(map(str, allowed))}")


def check_at_least(config: dict, minimums: dict) -> None:
    """Stop with one line when a setting is below its minimum (minimums: name -> the least
    value)."""
    for name, least in minimums.items():
        if config[name] < least:
            fail(f'{name}={config[name]} must be at least {least}')


if __name__ != 'configurator':  # exec'd by train.py: update its config globals
    globals().update(configure({k: globals()[k] for k in config_keys},  # noqa: F821
                               sys.argv[1:]))
