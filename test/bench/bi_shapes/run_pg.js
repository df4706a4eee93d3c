// Issue 24 shapes through node-postgres (test/bench/bi_shapes/run.sh).
// Sends each shape through node-postgres (extended protocol: $1 bound on the server).
const { Client } = require('pg');
const shapes = require(process.argv[2]);
(async () => {
  const c = new Client({ host: process.argv[3], port: +process.argv[4], user: 'bw_analyst', database: 'postgres' });
  await c.connect();
  for (const s of shapes) {
    try {
      const r = await c.query(s.sql, s.params);
      const cells = +(await c.query('SELECT count(*) AS n FROM dx.last_release()')).rows[0].n;
      let ok = true, detail = `${r.rows.length} rows, ${cells} cells`;
      if (s.cells !== undefined && cells !== s.cells) { ok = false; detail = `${cells} cells (want ${s.cells})`; }
      if (s.consistent) {
        const f = Object.keys(r.rows[0])[0], v = Object.keys(r.rows[0])[1];
        const total = r.rows.filter(x => x[f] === null).map(x => +x[v]);
        const parts = r.rows.filter(x => x[f] !== null).reduce((a, x) => a + +x[v], 0);
        if (!total.length || Math.abs(total[0] - parts) > 1e-6) { ok = false; detail = `total ${total} != parts ${parts}`; }
      }
      console.log(`${s.name}\t${ok ? 'ok' : 'wrong'}\t${detail}`);
    } catch (e) { console.log(`${s.name}\terror\t${e.code} ${e.message}`); }
  }
  await c.end();
})();
