"""How each arm's readings move with the iterations its session's pace gave it (post hoc).

The budget is wall-clock and the schedule follows it by fraction, so a faster session trains the
same config for more iterations of about the same shape; no seed ran at two paces, so run length
is confounded with the session (host, time order; two seeds share one) and the seed. For each arm,
and for the difference, the least-squares slope per 1,000 iterations with its 95% t-interval, over
the seeds and over the sessions' means; then where the lines gap's fitted line reaches 0.

    python assets/curriculum_budget/staged_vs_full/pace.py [readings.txt] > pace.txt
"""
import re
import sys

import numpy as np
from scipy import stats

path = sys.argv[1] if len(sys.argv) > 1 else 'assets/curriculum_budget/staged_vs_full/readings.txt'
text = open(path).read()
runs = {int(s): (session, int(a), int(b)) for s, session, a, b in re.findall(
    r'^seed (\d+) \(session (\S+)\): valid; \w+ (\d+) iterations, [\d,]+ tokens, full (\d+) '
    r'iterations', text, re.M)}
rows = {}
for line in text.splitlines():
    m = re.match(r'seed (\d+): (.*)', line)
    if not m:
        continue
    for name, a, b in re.findall(r'([\w -]+?) (-?[\d.]+) - (-?[\d.]+) = [-+][\d.]+', m.group(2)):
        rows.setdefault(name.strip(' ;'), {})[int(m.group(1))] = (float(a), float(b))
seeds = sorted(runs)
sessions = sorted({runs[s][0] for s in seeds})


def slope(x: np.ndarray, y: np.ndarray) -> str:
    fit = stats.linregress(x / 1000, y)
    half = stats.t.ppf(0.975, len(x) - 2) * fit.stderr
    low, high = fit.slope - half, fit.slope + half
    return f'{fit.slope:+.4f} ({low:+.4f} to {high:+.4f}), r {fit.rvalue:+.2f}'


def by_session(values: np.ndarray) -> np.ndarray:
    return np.array([values[[runs[s][0] == k for s in seeds]].mean() for k in sessions])


def crossing(x: np.ndarray, y: np.ndarray) -> str:
    """Where the fitted line reaches 0, with Fieller's 95% interval (the x at which 0 lies
    inside the fit's pointwise interval); an extrapolation when it lies past the data."""
    n, xm = len(x), x.mean()
    fit = stats.linregress(x, y)
    resid = y - (fit.intercept + fit.slope * x)
    s2, sxx = resid @ resid / (n - 2), ((x - xm) ** 2).sum()
    t2 = stats.t.ppf(0.975, n - 2) ** 2
    # (a + b x)^2 = t^2 s^2 (1/n + (x - xm)^2 / sxx), a quadratic in x
    a, b = fit.intercept, fit.slope
    qa = b * b - t2 * s2 / sxx
    qb = 2 * a * b + 2 * t2 * s2 * xm / sxx
    qc = a * a - t2 * s2 * (1 / n + xm * xm / sxx)
    disc = qb * qb - 4 * qa * qc
    if qa <= 0 or disc < 0:
        return f'{-a / b:,.0f} (the interval is unbounded)'
    low, high = sorted(((-qb - disc ** 0.5) / (2 * qa), (-qb + disc ** 0.5) / (2 * qa)))
    return f'{-a / b:,.0f} ({low:,.0f} to {high:,.0f})'


it_cur = np.array([runs[s][1] for s in seeds], dtype=float)
it_full = np.array([runs[s][2] for s in seeds], dtype=float)
print(f'{len(seeds)} seeds over {len(sessions)} sessions; slope per 1,000 iterations of the arm')
for name in ('shakespeare_lines', 'shakespeare_works', 'val loss'):
    cur = np.array([rows[name][s][0] for s in seeds])
    full = np.array([rows[name][s][1] for s in seeds])
    for label, x, y in (('curriculum arm', it_cur, cur), ('full arm', it_full, full),
                        ('curriculum - full, on the curriculum\'s iterations', it_cur, cur - full)):
        sessions_fit = slope(by_session(x), by_session(y))
        print(f'{name}, {label}: seeds {slope(x, y)}; sessions {sessions_fit}')

gap = np.array([rows['shakespeare_lines'][s][0] - rows['shakespeare_lines'][s][1] for s in seeds])
seeds_x, sessions_x = crossing(it_cur, gap), crossing(by_session(it_cur), by_session(gap))
print(f'the lines gap reaches 0 at iterations: seeds {seeds_x}; sessions {sessions_x}')
