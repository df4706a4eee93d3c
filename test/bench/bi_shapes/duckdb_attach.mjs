// DuckDB's postgres attach as an analyst (issue 24), through @duckdb/node-api from npm:
//   npm install --prefix build/duckdb @duckdb/node-api
//   NODE_PATH=build/duckdb/node_modules node test/bench/bi_shapes/duckdb_attach.mjs HOST PORT
// against the fixture of fixture.sql. DuckDB loads its postgres extension (postgres_scanner) from
// DuckDB's own extension server at INSTALL/ATTACH time; where that server cannot be reached the
// attach fails before any SQL is sent to PostgreSQL, and this script prints that error.
import { createRequire } from 'module';
const require = createRequire(process.env.NODE_PATH ? process.env.NODE_PATH + '/' : import.meta.url);
const { DuckDBInstance } = require('@duckdb/node-api');
const [host, port] = process.argv.slice(2);
const inst = await DuckDBInstance.create(':memory:');
const con = await inst.connect();
console.log('duckdb', (await con.runAndReadAll('SELECT version()')).getRows()[0][0]);
for (const sql of [
  'INSTALL postgres',
  'LOAD postgres',
  `ATTACH 'host=${host} port=${port} user=bw_analyst dbname=postgres' AS pg (TYPE postgres, READ_ONLY)`,
  'SELECT city, count(*) AS n FROM pg.public.bw GROUP BY city ORDER BY city',
  'SELECT z.zone, count(*) AS n FROM pg.public.bw b JOIN pg.public.cz z ON z.city = b.city GROUP BY ROLLUP (z.zone)',
]) {
  try {
    const r = await con.runAndReadAll(sql);
    console.log('ok\t' + sql + '\t' + JSON.stringify(r.getRows(), (k, x) => (typeof x === 'bigint' ? Number(x) : x)));
  } catch (e) {
    console.log('error\t' + sql + '\t' + e.message.split('\n')[0]);
  }
}
