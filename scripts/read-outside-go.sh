#!/usr/bin/env bash
# read-outside-go.sh RUN-DIR: opens every Parquet file of a run directory
# with DuckDB and every Arrow IPC file with Apache Arrow's JavaScript
# reader — neither shares code with memo's Go writers — and prints each
# file's rows and columns. A file either library refuses fails the script,
# and so do two faults those readers let pass but stricter ones (polars,
# pandas; hyparquet, Impala) refuse: a string that is not valid UTF-8, and a
# Parquet schema whose root is repeated.
#
# Debian has no pyarrow, so both readers come from npm (DuckDB's Node
# package ships its Linux binary as an npm package). Installed once into
# ${MEMO_CACHE:-~/.cache/memo}/npm-readers. Not part of the test suite.
set -euo pipefail
run=${1:?usage: scripts/read-outside-go.sh RUN-DIR}
[ -d "$run" ] || { echo "read-outside-go: $run is not a directory" >&2; exit 2; }
dir=${MEMO_CACHE:-$HOME/.cache/memo}/npm-readers
if [ ! -d "$dir/node_modules/@duckdb/node-api" ] || [ ! -d "$dir/node_modules/apache-arrow" ]; then
	mkdir -p "$dir"
	(cd "$dir" && { [ -f package.json ] || npm init -y >/dev/null; } &&
		npm install --no-audit --no-fund @duckdb/node-api@1.5.6-r.1 apache-arrow@21.2.0 >/dev/null)
fi
cat > "$dir/read.mjs" <<'JS'
import { readFileSync } from 'fs';
import { DuckDBInstance } from '@duckdb/node-api';
import { tableFromIPC } from 'apache-arrow';
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
const utf8 = new TextDecoder('utf-8', { fatal: true });
let faults = 0;
for (const f of process.argv.slice(2)) {
  if (f.endsWith('.parquet')) {
    const lit = `'${f.replaceAll("'", "''")}'`;
    const r = await con.runAndReadAll(`select * from read_parquet(${lit})`);
    console.log(`${f}: ${r.getRows().length} rows, ${r.columnNames().length} columns (DuckDB)`);
    const root = await con.runAndReadAll(`select repetition_type from parquet_schema(${lit}) limit 1`);
    if (String(root.getRows()[0][0]) === 'REPEATED') {
      console.log(`${f}: the schema's root is REPEATED, which the Parquet format forbids`);
      faults++;
    }
  } else {
    const t = tableFromIPC(readFileSync(f));
    console.log(`${f}: ${t.numRows} rows, ${t.schema.fields.length} columns (apache-arrow)`);
    for (const field of t.schema.fields) {
      if (!/Utf8/.test(String(field.type))) continue;
      let bad = 0;
      for (const d of t.getChild(field.name).data) {
        for (let i = 0; i < d.length; i++) {
          try { utf8.decode(d.values.subarray(Number(d.valueOffsets[i]), Number(d.valueOffsets[i + 1]))); } catch { bad++; }
        }
      }
      if (bad > 0) {
        console.log(`${f}: column ${field.name}: ${bad} of ${t.numRows} values are not valid UTF-8`);
        faults++;
      }
    }
  }
}
if (faults > 0) { console.log(`${faults} fault(s)`); process.exit(1); }
JS
mapfile -t files < <(find "$(realpath "$run")" \( -name '*.parquet' -o -name '*.arrow' \) -type f | sort)
[ ${#files[@]} -gt 0 ] || { echo "read-outside-go: no .parquet or .arrow file under $run" >&2; exit 2; }
root=$(realpath "$run")
cd "$root" && node "$dir/read.mjs" "${files[@]#$root/}"
