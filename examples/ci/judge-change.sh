#!/usr/bin/env bash
# The judge-change gate of a pull request, for any CI: the base configuration's replies come from a bundle (no call
# is paid for them: cache.mode=only refuses to send one), the candidate configuration is judged (live, or from its
# own bundle), then judgebias.compare writes the paired comparison and judgebias.check fails the job when the
# candidate is worse than the base beyond the tolerances. Exit codes: 0 passes, 1 the gate failed, 2 a usage error,
# others those of `python -m judgebias.run` (docs/outputs.md).
#
#   JUDGEBIAS_BASE="judge=gpt4o rubric=default data=q1"      the base run's overrides (required)
#   JUDGEBIAS_CAND="judge=gpt4o rubric=mine data=q1"         the candidate's overrides (required)
#   JUDGEBIAS_BASE_BUNDLE=ci/base-replies.jsonl.gz           the base run's replies (python -m judgebias.cache
#                                                           export --run BASE_RUN FILE); without it the base is
#                                                           judged too, with cache.mode=use
#   JUDGEBIAS_CAND_BUNDLE=...                                optional: the candidate's replies, if recorded before
#   JUDGEBIAS_GATE="--max-drop consistency=0.01 --strict"    optional: the gate's options (defaults: docs/compare.md)
#   JUDGEBIAS_CI_OUT=judgebias-ci                            where the runs, the cache and compare/ go
set -euo pipefail

: "${JUDGEBIAS_BASE:?set JUDGEBIAS_BASE to the overrides of the base run, e.g. judge=gpt4o rubric=default data=q1}"
: "${JUDGEBIAS_CAND:?set JUDGEBIAS_CAND to the overrides of the candidate run}"
python="${PYTHON:-python}"
out="${JUDGEBIAS_CI_OUT:-judgebias-ci}"
cache="$out/cache"
read -r -a base <<< "$JUDGEBIAS_BASE"
read -r -a cand <<< "$JUDGEBIAS_CAND"
read -r -a gate <<< "${JUDGEBIAS_GATE:-}"

if [ -e "$out/base" ] || [ -e "$out/cand" ]; then
  echo "judge-change: $out/base or $out/cand exists already: remove $out or set JUDGEBIAS_CI_OUT" >&2
  exit 2
fi
mkdir -p "$out"

base_mode=use
if [ -n "${JUDGEBIAS_BASE_BUNDLE:-}" ]; then
  "$python" -m judgebias.cache import "$JUDGEBIAS_BASE_BUNDLE" --cache-dir "$cache"
  base_mode=only
fi
if [ -n "${JUDGEBIAS_CAND_BUNDLE:-}" ]; then
  "$python" -m judgebias.cache import "$JUDGEBIAS_CAND_BUNDLE" --cache-dir "$cache"
fi

"$python" -m judgebias.run "${base[@]}" "cache.dir=$cache" "cache.mode=$base_mode" "hydra.run.dir=$out/base" progress=off
"$python" -m judgebias.run "${cand[@]}" "cache.dir=$cache" "hydra.run.dir=$out/cand" progress=off
"$python" -m judgebias.compare "$out/base" "$out/cand" --out "$out/compare"
"$python" -m judgebias.check "$out/cand" --baseline "$out/base" "${gate[@]}"
