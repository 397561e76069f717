#!/usr/bin/env bash
# Mutation-test one module with mutmut 3 in a scratch copy of the checkout (the checkout itself
# is never touched). See tests/MUTATION.md for the figures and the equivalent mutants.
#
#   tests/mutation/setup_scratch.sh MODULE [TEST_FILE ...]
#
# MODULE: a path under app/streamscope, e.g. core/capture/format/read.py. TEST_FILEs (paths from
# the checkout's root) narrow the tests mutmut runs; without them, the module's own list
# below is used. Environment:
#   CHECKOUT  the checkout to copy (default: this script's repository)
#   SCRATCH   the scratch directory, recreated (default: /tmp/mut-<module name>)
#   MUTMUT    the mutmut 3 executable (default: /work/mutvenv/bin/mutmut, else `mutmut`);
#             install it in a venv of its own with the app's dependencies and pytest,
#             pytest-qt, hypothesis (never into the app's .venv)
#   JOBS      mutmut's --max-children (default 2)
# Prints mutmut's results (survivors, timeouts) and the counts per status at the end.
set -euo pipefail

module=${1:?usage: $0 MODULE [TEST_FILE ...] (MODULE e.g. core/capture/format/read.py)}
shift
here=$(cd "$(dirname "$0")" && pwd)
checkout=${CHECKOUT:-$(cd "$here/../.." && pwd)}
name=$(basename "$module" .py)
scratch=${SCRATCH:-/tmp/mut-$name}
if [[ -z ${MUTMUT:-} ]]; then
    if [[ -x /work/mutvenv/bin/mutmut ]]; then MUTMUT=/work/mutvenv/bin/mutmut; else MUTMUT=mutmut; fi
fi

if [[ ! -f $checkout/app/streamscope/$module ]]; then
    echo "no such module: $checkout/app/streamscope/$module" >&2
    exit 2
fi

if (($# > 0)); then
    tests=("$@")
else
    case $module in
        core/redact.py)
            tests=(tests/core/test_redact.py tests/ui/test_hostile_echo.py
                tests/core/test_capture_recorder.py) ;;
        core/store/session.py) tests=(tests/core/test_session.py) ;;
        core/capture/format/read.py | core/capture/format/write.py | core/capture/format/model.py)
            tests=(tests/core/test_capture_format.py tests/core/test_hostile_files.py
                tests/core/test_capture.py) ;;
        core/capture/recorder.py)
            tests=(tests/core/test_capture_recorder.py tests/core/test_capture_recorder_values.py
                tests/core/test_tap_recorder.py) ;;
        core/turn/outcome.py) tests=(tests/core/test_outcome_reasons.py tests/core/test_turn.py) ;;
        core/tap/proxy.py) tests=(tests/core/test_tap_recorder.py) ;;
        core/capture/echoes.py)
            tests=(tests/core/test_tap_recorder.py tests/core/test_capture_recorder.py) ;;
        *)
            echo "no test list for $module: name the test files after it" >&2
            exit 2 ;;
    esac
fi

# The scratch copy: the package under src/ (mutmut copies and mutates source_paths), the tests,
# the resources, and the project file with mutmut's settings.
rm -rf "$scratch"
mkdir -p "$scratch/src"
cp -r "$checkout/app/streamscope" "$scratch/src/streamscope"
cp -r "$checkout/tests" "$checkout/resources" "$scratch/"
cp "$checkout/pyproject.toml" "$scratch/"
find "$scratch" -name __pycache__ -prune -exec rm -rf {} +

python3 - "$scratch/pyproject.toml" "src/streamscope/$module" "${tests[@]}" <<'EOF'
import json
import re
import sys

path, module, *tests = sys.argv[1:]
text = open(path, encoding="utf-8").read()
text = re.sub(r'(?m)^pythonpath = \["tests"\]$', 'pythonpath = ["tests", "src"]', text)
text = re.sub(r"(?ms)^\[tool\.mutmut\].*?(?=^\[|\Z)", "", text)
slow = "tests/core/test_capture.py::test_a_100_mb_capture_opens_within_a_small_multiple_of_its_size"
text += f"""
[tool.mutmut]
source_paths = ["src/streamscope"]
only_mutate = [{json.dumps(module)}]
pytest_add_cli_args_test_selection = {json.dumps(tests)}
pytest_add_cli_args = ["-p", "no:cacheprovider", "-x", "-q", "--deselect", {json.dumps(slow)}]
also_copy = ["resources"]
"""
open(path, "w", encoding="utf-8").write(text)
EOF

cd "$scratch"
echo "mutating src/streamscope/$module in $scratch with: ${tests[*]}" >&2
STREAMSCOPE_WORKER=0 QT_QPA_PLATFORM=offscreen nice -n 10 \
    "$MUTMUT" run --max-children "${JOBS:-2}" >"$scratch/run.log" 2>&1 || {
    tail -c 2000 "$scratch/run.log" >&2
    exit 1
}
"$MUTMUT" results
"$MUTMUT" export-cicd-stats >/dev/null
python3 - <<'EOF'
import json

stats = json.load(open("mutants/mutmut-cicd-stats.json"))
print(" ".join(f"{k}={v}" for k, v in stats.items()))
EOF
