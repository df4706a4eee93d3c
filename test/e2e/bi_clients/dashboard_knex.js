// The dashboard through knex's query builder on node-postgres (pg), as an analyst.
// Driven by test_bi_clients.py: env PGPORT, DB, DBUSER; NODE_PATH points at build/node/node_modules.
// knex sends every value as a $n parameter (node-postgres: extended protocol, bound on the server).
// Prints one line per shape (see test_bi_clients.py).
'use strict';
const knex = require('knex')({
  client: 'pg',
  connection: { host: '127.0.0.1', port: Number(process.env.PGPORT), user: process.env.DBUSER,
                database: process.env.DB },
  pool: { min: 1, max: 1 },
});

const clean = (s) => String(s).replace(/[\t\n]/g, ' ');

async function spent() {
  const r = await knex.raw('select spent from dx.budgets where "table" = ?::regclass', ['visits']);
  return Number(r.rows[0].spent);
}

async function shape(name, builder, pick) {
  const before = await spent();
  try {
    const rows = await builder;
    const charged = (await spent()) - before;
    const keys = rows.map((r) => clean(pick(r)[0] instanceof Date ? pick(r)[0].toISOString() : pick(r)[0]));
    const values = rows.map((r) => clean(pick(r)[1]));
    console.log(['shape', name, 'ok', charged, rows.length, keys.join(';'), values.join(';')].join('\t'));
  } catch (e) {
    const charged = (await spent()) - before;
    const sql = builder.toSQL ? builder.toSQL().toNative().sql : '';
    console.log(['shape', name, 'error', charged, e.code || 'none', clean(e.message), clean(sql)].join('\t'));
  }
}

async function main() {
  // column list, as knex-based admin UIs ask for it
  await shape('columnInfo', knex('visits').columnInfo().then((info) => Object.keys(info).map((k) => ({ k }))),
              (r) => [r.k, '']);

  const month = knex.raw("date_trunc('month', ??)", ['day']);
  await shape('monthly',
    knex('visits')
      .select({ month })
      .count({ n: '*' })
      .avg({ avg_amount: 'amount' })
      .whereBetween('day', [new Date(Date.UTC(2024, 0, 1)), new Date(Date.UTC(2024, 11, 31))])
      .groupBy(month)
      .orderBy('month'),
    (r) => [r.month, r.n]);

  await shape('count_filtered', knex('visits').where('age', '>=', 40).count({ n: '*' }), (r) => ['all', r.n]);

  const byChannel = knex('visits').select('channel').count({ n: '*' }).groupBy('channel').as('s');
  await shape('pct_of_total',
    knex.select('channel', knex.raw('n * 100.0 / sum(n) over () as pct')).from(byChannel),
    (r) => [r.channel, r.pct]);

  await shape('top10',
    knex('visits').select('channel').count({ n: '*' }).groupBy('channel').orderBy('n', 'desc').limit(10),
    (r) => [r.channel, r.n]);

  // a filter drop-down (the declared values, no charge) and "the last 30 days"
  await shape('dropdown', knex('visits').distinct('channel'), (r) => [r.channel, '']);
  await shape('last_30_days',
    knex('visits').select('channel').count({ n: '*' }).where('day', '>=', knex.raw('current_date - ?::int', [30]))
      .groupBy('channel'),
    (r) => [r.channel, r.n]);

  await shape('attack_raw', knex('visits').select('*').where('channel', 'web'), (r) => [r.id, r.day]);
}

main().catch((e) => { console.error(e); process.exitCode = 1; }).finally(() => knex.destroy());
