#!/usr/bin/env bash
# Mutation testing of robofollow_ros/safety/ with mutmut (issue 29, docs/mutation.md); not part of scripts/test.sh.
# Installs requirements-mutation.txt into .venv if needed, runs mutmut at nice 19 in a scratch copy of the package
# and its tests ($MUTATION_DIR, default $TMPDIR/robofollow-mutation, emptied first: the checkout gets no mutants/
# folder), then prints the counts, the score and every surviving mutant. Exits 1 below $MUTATION_MIN_SCORE (95) %.
# Inspect a mutant afterwards with: cd "$MUTATION_DIR" && <checkout>/.venv/bin/mutmut show <name>
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
venv="$repo/.venv"
work="${MUTATION_DIR:-${TMPDIR:-/tmp}/robofollow-mutation}"
min_score="${MUTATION_MIN_SCORE:-95}"

[ -x "$venv/bin/python" ] || bash scripts/setup.sh
wanted=$(grep -v '^#' requirements-mutation.txt | head -n 1)
if [ "$("$venv/bin/python" -m pip freeze 2>/dev/null | grep -i '^mutmut==')" != "$wanted" ]; then
    "$venv/bin/python" -m pip install -q -r requirements-mutation.txt
fi

case "$work" in
    "$repo" | "$repo"/*) echo "mutation: MUTATION_DIR must lie outside the checkout" >&2 && exit 2 ;;
esac
if [ -d "$work" ] && [ ! -f "$work/run.log" ] && [ -n "$(ls -A "$work")" ]; then
    echo "mutation: $work holds files of no earlier run: not emptying it" >&2 && exit 2
fi
rm -rf "$work"
mkdir -p "$work"
tar -C "$repo" --exclude=__pycache__ --exclude=.hypothesis -cf - robofollow_ros test pyproject.toml setup.cfg |
    tar -C "$work" -xf -
cd "$work"

# The copied package finds config/ and urdf/ in the checkout; the tests render nothing but import MuJoCo.
export ROBOFOLLOW_SHARE="$repo" MUJOCO_GL="${MUJOCO_GL:-egl}" PYTHONDONTWRITEBYTECODE=1
started=$(date +%s)
status=0
nice -n 19 "$venv/bin/mutmut" run >run.log 2>&1 || status=$?
seconds=$(($(date +%s) - started))
if [ "$status" != 0 ]; then
    tail -n 40 run.log >&2
    echo "mutation: mutmut run failed (exit $status); the whole log is $work/run.log" >&2
    exit "$status"
fi
"$venv/bin/mutmut" export-cicd-stats >/dev/null
"$venv/bin/mutmut" results >survivors.txt

"$venv/bin/python" - "$seconds" "$min_score" <<'PY'
import json
import sys
from pathlib import Path

seconds, min_score = int(sys.argv[1]), float(sys.argv[2])
stats = json.loads(Path('mutants/mutmut-cicd-stats.json').read_text())
total, killed = stats['total'], stats['killed']
score = 100.0 * killed / total if total else 0.0
others = ', '.join(f'{key} {value}' for key, value in stats.items() if key not in ('total', 'killed', 'survived') and value)
print(f'mutation: {total} mutants, {killed} killed, {stats["survived"]} survived' + (f', {others}' if others else ''))
print(f'mutation: score {score:.1f} % (killed / total), wall time {seconds // 60} min {seconds % 60} s')
survivors = [line.strip() for line in Path('survivors.txt').read_text().splitlines() if line.strip()]
if survivors:
    print(f'mutation: not killed (the diff: cd {Path.cwd()} && mutmut show <name>):')
    print('\n'.join(f'    {line}' for line in survivors))
if score < min_score:
    print(f'mutation: below {min_score:g} %', file=sys.stderr)
    sys.exit(1)
PY
