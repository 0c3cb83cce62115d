// The Node.js the suite runs on. scripts/clients.sh --without-system-node (make test
// NODE_PINNED=1, as .ci/run does) hides every node but the pinned one from PATH and sets
// SEATFLOW_EXPECT_NODE to it: the test runner and the processes it starts (npm, the
// codegen CLI, the README's watch.mjs) must all be that one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';

test('Node.js is 20.19 or newer', () => {
  const [major, minor] = process.versions.node.split('.').map(Number);
  assert.ok(major > 20 || (major === 20 && minor >= 19), `Node.js ${process.version}`);
});

test('the pinned Node.js runs the suite and its child processes', { skip: !process.env.SEATFLOW_EXPECT_NODE && 'the system Node.js runs the suite (no --without-system-node)' }, () => {
  const want = process.env.SEATFLOW_EXPECT_NODE;
  assert.equal(process.execPath, want);
  // A child started by name, as npm scripts and #!/usr/bin/env node start theirs.
  assert.equal(execFileSync('node', ['-p', 'process.execPath'], { encoding: 'utf8' }).trim(), want);
  assert.equal(execFileSync('sh', ['-c', 'command -v nodejs || echo none'], { encoding: 'utf8' }).trim(), 'none');
});
