// graphql-codegen's CLI loads the schema from the server's URL (introspection) and
// generates TypeScript types, as a front end's build does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { httpURL } from '../lib/server.js';

const clientsDir = fileURLToPath(new URL('..', import.meta.url));
const cli = join(clientsDir, 'node_modules', '.bin', 'graphql-codegen');

test('graphql-codegen: TypeScript types from the server\'s introspection', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'seatflow-codegen-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const out = join(dir, 'graphql.ts');
  const config = join(dir, 'codegen.json');
  await writeFile(config, JSON.stringify({
    overwrite: true,
    schema: httpURL,
    generates: { [out]: { plugins: ['typescript'], config: { scalars: { Time: 'string', Date: 'string' } } } },
  }));
  // Plugins are resolved from the working directory: the clients' packages.
  await promisify(execFile)(cli, ['--config', config, '--silent'], { cwd: clientsDir, timeout: 60_000 });

  const ts = await readFile(out, 'utf8');
  assert.match(ts, /export type Query = \{/);
  assert.match(ts, /export type Subscription = \{/);
  assert.match(ts, /seatMap: SeatMapEvent;/);
  // Enum values carry their descriptions as doc comments.
  assert.match(ts, /export enum SeatMapEventKind \{\s*(\/\*\*[^*]*\*\/\s*)?Delta = 'DELTA',\s*(\/\*\*[^*]*\*\/\s*)?Snapshot = 'SNAPSHOT'\s*\}/);
  assert.match(ts, /export type HoldSeatsInput = \{[^}]*idempotencyKey: Scalars\['String'\]\['input'\];/);
});
