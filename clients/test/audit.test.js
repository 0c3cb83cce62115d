// graphql-http's audit of GraphQL over HTTP (https://graphql.github.io/graphql-over-http/):
// every MUST and every SHOULD must pass. The MAYs must pass too: the server implements
// each of them, so one failing is a regression.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { serverAudits } from 'graphql-http';
import { httpURL } from '../lib/server.js';

const audits = serverAudits({ url: httpURL });
const passed = { MUST: 0, SHOULD: 0, MAY: 0 };
const total = { MUST: 0, SHOULD: 0, MAY: 0 };
const level = (audit) => audit.name.split(' ')[0];

after(() => {
  console.log(`graphql-http ${Object.keys(total).map((l) => `${l} ${passed[l]}/${total[l]}`).join(', ')}`);
});

test('the audit has MUST, SHOULD and MAY requirements', () => {
  for (const a of audits) total[level(a)]++;
  assert.ok(total.MUST > 0 && total.SHOULD > 0 && total.MAY > 0, JSON.stringify(total));
  assert.equal(audits.length, total.MUST + total.SHOULD + total.MAY);
});

for (const audit of audits) {
  test(`${audit.id} ${audit.name}`, async () => {
    const result = await audit.fn();
    if (result.status === 'ok') {
      passed[level(audit)]++;
      return;
    }
    let body = '';
    try {
      body = await result.response.text();
    } catch {
      // the audit read the body already
    }
    assert.fail(`${result.reason}: ${result.response.status} ${result.response.headers.get('content-type')} ${body.slice(0, 400)}`);
  });
}
