#!/usr/bin/env bash
# The JSON Schemas as ECMA-262 engines read them (editors, the YAML
# language server, JS tools): ajv, installed here from the lockfile, must
# compile both schemas and agree with the Go validator over the corpus
# (testdata/schema-verdicts.txt, written by go test ./serviceconfig/schema), and
# accept every example publisher config. Needs node and npm.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v npm >/dev/null; then
  echo "schema-check: npm is not installed (apt-get install nodejs npm)"; exit 1
fi
(cd tools/schema && npm ci --no-audit --no-fund --loglevel=error)
ajv=(tools/schema/node_modules/.bin/ajv --spec=draft2020 --strict-types=false -c ./tools/schema/keywords.js)
sc=serviceconfig/schema/grpc-config.schema.json
pub=model/publisher.schema.json

"${ajv[@]}" compile -s "$sc"
"${ajv[@]}" compile -s "$pub" -r "$sc"

# The corpus: one ajv run over every JSON file, its verdicts against the Go ones.
# (ajv stops at a file that is not JSON: those are checked one by one.)
args=()
while read -r file verdict; do
  case "$file" in '#'*|'') continue ;; esac
  [ "$verdict" = unparsable ] || args+=(-d "testdata/corpus/$file")
done < testdata/schema-verdicts.txt
# To a file: node drops what is still buffered for a pipe when ajv exits.
res=$(mktemp)
trap 'rm -f "$res"' EXIT
"${ajv[@]}" validate -s "$sc" "${args[@]}" --errors=no >"$res" 2>&1 || true
fail=0
n=0
while read -r file verdict; do
  case "$file" in '#'*|'') continue ;; esac
  n=$((n+1))
  if [ "$verdict" = unparsable ]; then
    got=invalid
    "${ajv[@]}" validate -s "$sc" -d "testdata/corpus/$file" --errors=no >/dev/null 2>&1 && got=valid
    [ "$got" = invalid ] && got=unparsable
  else
    got=$(awk -v f="testdata/corpus/$file" '$1 == f && ($2 == "valid" || $2 == "invalid") {print $2}' "$res")
  fi
  [ -z "$got" ] && got=missing
  if [ "$got" != "$verdict" ]; then
    echo "schema-check: testdata/corpus/$file: ajv says $got, the Go validator $verdict"; fail=1
  fi
done < testdata/schema-verdicts.txt
[ $fail = 0 ]
echo "schema-check: ajv agrees with the Go validator on $n corpus files"

# Every example publisher config is valid, the invalid example is not.
for f in testdata/publisher/*.yaml testdata/publisher/*.json model/example.yaml; do
  [ "$(basename "$f")" = invalid.yaml ] && continue
  "${ajv[@]}" validate -s "$pub" -r "$sc" -d "$f" --errors=text
done
printf 'zones:\n  - origin: example.test.\n    nameservers: [ns.example.net.]\n    services: [{name: echo, adresses: [192.0.2.1]}]\n' > "${TMPDIR:-/tmp}/schema-check-bad.yaml"
if "${ajv[@]}" validate -s "$pub" -r "$sc" -d "${TMPDIR:-/tmp}/schema-check-bad.yaml" --errors=no 2>/dev/null; then
  echo "schema-check: the publisher schema accepts a misspelt field"; exit 1
fi
echo "schema-check: ok"
