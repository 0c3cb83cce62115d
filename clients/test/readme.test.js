// The README, run as a newcomer runs it. The server is a fresh `make run`: the seatflow
// binary with no SEATFLOW_* setting (embedded mode) in an empty folder, so a new
// seatflow.db and the README's ids hold. Every fenced block of the README is run as it
// reads now (with the server's address for localhost:8080, and the built binary for
// `go run ./server`), or listed in SKIPPED with the reason; a block under a heading this
// test does not know fails it. Every answer must be free of errors, and what the README
// says a command prints (the welcome banner, the hold's answer, watch.mjs's lines) must be
// what it prints.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const clientsDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const readme = readFileSync(join(clientsDir, '..', 'README.md'), 'utf8');
const bin = process.env.SEATFLOW_BIN;
if (!bin) throw new Error('SEATFLOW_BIN is not set: run the tests with scripts/clients.sh (make clients)');

// Headings whose blocks are not run, and why. Anything else must be run below.
const SKIPPED = {
  'The two commands': 'make run is the server this test starts (the same binary, embedded mode, a fresh folder); make test runs this test',
  'For front ends': 'client-side snippets (Apollo Client, urql), run by test/normalized.test.js',
  'Docker compose: from `docker compose up` to a held seat': 'docker is not installed where the tests run',
  'The on-sale queue': 'the shapes of the queue\'s operations, their ids elided (the queue opens at its opensAt, minutes ahead); the flow runs in internal/app/queue_test.go on two instances and the /demo Chromium test (internal/app/demo_queue_test.go)',
  'Tickets and the door': 'the shape of a checkIn, its code and nonce elided (a real code is a paid order\'s ticket); the door\'s flow runs in internal/app/checkin_test.go and the /demo/door Chromium test (internal/app/door_test.go)',
  'The waiting list': 'the shapes of the waiting list\'s operations, their ids elided (an entry needs a sold-out showtime, an offer seats that come back); the flow runs in internal/app/waitlist_test.go on MySQL and the embedded stores, and the /demo Chromium test (internal/app/demo_waitlist_test.go)',
};

/** blocks returns the README's fenced blocks with the heading they are under. */
function blocks(md) {
  const out = [];
  const lines = md.split('\n');
  let heading = '';
  for (let i = 0; i < lines.length; i++) {
    const h = /^#{1,6} (.*)$/.exec(lines[i]);
    if (h) {
      heading = h[1];
      continue;
    }
    const f = /^(\s*)```(\w*)\s*$/.exec(lines[i]);
    if (!f) continue;
    const [, indent, lang] = f;
    const start = i + 1;
    const body = [];
    for (i++; i < lines.length && lines[i].trim() !== '```'; i++) body.push(lines[i].slice(indent.length));
    out.push({ heading, lang, body: body.join('\n'), line: start });
  }
  return out;
}

/** commands splits a shell block into its commands (continued lines joined). */
function commands(block) {
  const out = [];
  let cur = '';
  for (const line of block.split('\n')) {
    if (!cur && (line.trim() === '' || line.trim().startsWith('#'))) continue;
    cur += (cur ? '\n' : '') + line;
    if (!line.endsWith('\\')) {
      out.push(cur);
      cur = '';
    }
  }
  if (cur) out.push(cur);
  return out;
}

async function freePort() {
  const s = net.createServer().listen(0, '127.0.0.1');
  await new Promise((r) => s.once('listening', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

/** cleanEnv is this process's environment without any SEATFLOW_* setting, plus extra. */
function cleanEnv(extra = {}) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SEATFLOW_')));
  return { ...env, ...extra };
}

/** Proc is a child process whose output is kept, with a wait for a piece of it. */
class Proc {
  constructor(child) {
    this.child = child;
    this.out = '';
    this.err = '';
    child.stdout.on('data', (d) => { this.out += d; });
    child.stderr.on('data', (d) => { this.err += d; });
    this.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  }

  async waitFor(pred, what, ms = 30000) {
    const deadline = Date.now() + ms;
    let done = false;
    this.exited.then(() => { done = true; });
    while (!pred(this)) {
      if (done) throw new Error(`${what}: the process ended; stdout:\n${this.out}\nstderr:\n${this.err}`);
      if (Date.now() > deadline) throw new Error(`${what}: not after ${ms} ms; stdout:\n${this.out}\nstderr:\n${this.err}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** Shell is one bash that keeps its variables from command to command (TOKEN=...). */
class Shell {
  constructor(env, cwd) {
    this.p = new Proc(spawn('bash', ['--noprofile', '--norc'], { env, cwd, stdio: ['pipe', 'pipe', 'pipe'] }));
    this.n = 0;
  }

  async run(cmd) {
    const mark = `__readme_${++this.n}__`;
    const [o, e] = [this.p.out.length, this.p.err.length];
    this.p.child.stdin.write(`${cmd}\nprintf '\\n${mark} %s\\n' $?; printf '${mark}\\n' >&2\n`);
    await this.p.waitFor((p) => p.out.includes(`${mark} `) && p.err.includes(mark), `the command\n${cmd}`);
    const out = this.p.out.slice(o);
    const at = out.indexOf(`\n${mark} `);
    return { out: out.slice(0, at), code: Number(out.slice(at + mark.length + 2).split('\n')[0]), err: this.p.err.slice(e).replace(`${mark}\n`, '') };
  }

  close() { this.p.child.stdin.end(); }
}

const cleanup = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});

test('the README runs as written against a fresh make run', async (t) => {
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const folder = mkdtempSync(join(tmpdir(), 'seatflow-readme-'));
  cleanup.push(() => rmSync(folder, { recursive: true, force: true }));
  const server = new Proc(spawn(bin, [], { cwd: folder, env: cleanEnv({ SEATFLOW_ADDR: host }), stdio: ['ignore', 'pipe', 'pipe'] }));
  cleanup.push(async () => { server.child.kill('SIGTERM'); await server.exited; });
  await server.waitFor((p) => p.out.includes('admin token'), 'the welcome banner');
  const adminToken = /admin token: +(\S+)/.exec(server.out)[1];

  const local = (s) => s.replaceAll('localhost:8080', host).replaceAll('go run ./server', `'${bin}'`);
  const shell = new Shell(cleanEnv(), folder);
  cleanup.push(() => shell.close());
  const gqlAdmin = async (query) => {
    const res = await fetch(`http://${host}/query`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
      body: JSON.stringify({ query }),
    });
    const body = await res.json();
    assert.equal(body.errors, undefined, `${query}\nanswered ${JSON.stringify(body.errors)}`);
    return body.data;
  };

  const all = blocks(readme);
  const holdAnswer = /The hold answers `([^`]+)`/.exec(readme);
  assert.ok(holdAnswer, 'the README no longer says what the hold answers');
  const ids = /seats `"(U2VhdDo[\w-]+)"` and\s+`"(U2VhdDo[\w-]+)"` are (\w+) and (\w+), and the first order is `"([\w-]+)"`/.exec(readme);
  assert.ok(ids, 'the README no longer names showtime 1\'s seats and the first order');
  let watcher = null;
  let firstHold = null;
  const ran = [];
  const made = {}; // what the admin block made: the movie, hall and showtime ids the next blocks use

  for (let i = 0; i < all.length; i++) {
    const b = all[i];
    const where = `README.md line ${b.line} (${b.heading}, \`\`\`${b.lang})`;
    if (SKIPPED[b.heading] !== undefined) {
      if (b.heading === 'The two commands' && b.lang === '') {
        // make run's banner: what the server printed, with its address.
        // The server names a loopback address localhost, as the README does.
        const want = b.body.replaceAll('localhost:8080', `localhost:${port}`).split('\n');
        const got = server.out.split('\n');
        want.forEach((line, n) => {
          const [prefix] = line.split('eyJ...');
          assert.ok(got[n]?.startsWith(prefix), `${where}: banner line ${n + 1} is ${JSON.stringify(got[n])}, the README shows ${JSON.stringify(line)}`);
        });
      }
      continue;
    }
    if (b.heading === 'The API by example' && b.lang === 'sh') {
      for (const cmd of commands(b.body)) {
        const { out, err, code } = await shell.run(local(cmd));
        assert.equal(code, 0, `${where}: ${cmd}\nexit status ${code}, stderr ${err}`);
        if (!cmd.trimStart().startsWith('curl')) continue;
        const answer = JSON.parse(out);
        assert.equal(answer.errors, undefined, `${where}: ${cmd}\nanswered ${out}`);
        if (cmd.includes('holdSeats') && firstHold === null) {
          firstHold = { cmd, answer };
          const want = holdAnswer[1].replace(/…\}*$/, '');
          assert.ok(out.startsWith(want), `the hold answers ${out}\nthe README says ${holdAnswer[1]}`);
          assert.equal(answer.data.holdSeats.id, ids[5]);
          assert.deepEqual(answer.data.holdSeats.seats.map((s) => s.row + s.number), [ids[3], ids[4]]);
          assert.ok(cmd.includes(ids[1]) && cmd.includes(ids[2]), 'the hold is not of the seats the README names');
          // "Sending the same idempotencyKey again returns the same order."
          const again = JSON.parse((await shell.run(local(cmd))).out);
          assert.equal(again.data.holdSeats.id, answer.data.holdSeats.id, 'the same idempotency key gave another order');
        }
      }
      ran.push(where);
      if (watcher) {
        // The changes watch.mjs must see: then its output is compared with the next block.
        const expected = all[i + 1];
        assert.equal(expected?.lang, '', `${where}: no output block follows for watch.mjs`);
        const want = expected.body.trim().split('\n');
        await watcher.waitFor((p) => p.out.trim().split('\n').length >= want.length, 'watch.mjs\'s lines');
        watcher.child.kill();
        assert.deepEqual(watcher.out.trim().split('\n'), want, `watch.mjs printed:\n${watcher.out}\nthe README (line ${expected.line}) shows:\n${expected.body}`);
        ran.push(`README.md line ${expected.line} (watch.mjs's output)`);
        watcher = null;
        i++;
      }
      continue;
    }
    if (b.heading === 'The API by example' && b.lang === 'js') {
      assert.match(b.body, /client\.iterate/, `${where}: a JavaScript block that is not watch.mjs`);
      // Saved inside clients/, so graphql-ws and ws come from its node_modules, as from
      // the README's `npm install graphql-ws@6 ws@8`.
      const dir = mkdtempSync(join(clientsDir, '.readme-'));
      cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
      writeFileSync(join(dir, 'watch.mjs'), local(b.body));
      watcher = new Proc(spawn(process.execPath, ['watch.mjs'], { cwd: dir, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] }));
      cleanup.push(() => watcher?.child.kill());
      await watcher.waitFor((p) => p.out.includes('\n'), 'watch.mjs\'s first line');
      ran.push(where);
      continue;
    }
    if (b.lang === '' && watcher) {
      assert.fail(`${where}: watch.mjs's output follows no command that changes the seat map: the README must give the changes this output shows`);
    }
    if (b.heading === 'The API by example' && b.lang === 'graphql') {
      // The admin mutations, one request each, with the ids the earlier ones returned; then
      // the sales reports of the showtime they made.
      const docs = b.body.split(/\n(?=mutation |query )/);
      const reports = !docs[0].startsWith('mutation ');
      for (let doc of docs) {
        doc = doc.replace('"<the movie\'s id>"', JSON.stringify(made.movie)).replace('"<the hall\'s id>"', JSON.stringify(made.hall))
          .replace('"<the showtime\'s id>"', JSON.stringify(made.showtime?.id));
        assert.doesNotMatch(doc, /"<[^>]+>"/, `${where}: a placeholder this test does not fill:\n${doc}`);
        const data = await gqlAdmin(doc);
        if (data.createMovie) made.movie = data.createMovie.id;
        if (data.createHall) made.hall = data.createHall.id;
        if (data.createShowtime) made.showtime = data.createShowtime;
        if (data.showtimeSales) assert.equal(data.showtimeSales.sold, 0, `${where}: a showtime just made has sold nothing`);
        if (data.salesReport) assert.ok(data.salesReport.length >= 1, `${where}: the report's range holds the showtime just made`);
      }
      if (reports) {
        ran.push(where);
        continue;
      }
      // "The new showtime is SCHEDULED; openSales(showtimeId:) with the id it returned puts it on sale."
      assert.equal(made.showtime?.status, 'SCHEDULED');
      const opened = await gqlAdmin(`mutation { openSales(showtimeId: ${JSON.stringify(made.showtime.id)}) { status } }`);
      assert.equal(opened.openSales.status, 'ON_SALE');
      ran.push(where);
      continue;
    }
    if (b.heading === 'With MySQL/MariaDB and Redis' && b.lang === 'sh') {
      await realServices(t, b, where);
      ran.push(where);
      continue;
    }
    assert.fail(`${where} is not run by this test: run it here, or add its heading to SKIPPED with the reason`);
  }
  assert.equal(watcher, null, 'watch.mjs was started but no change and output followed');
  assert.ok(firstHold, 'no holdSeats command was run');
  t.diagnostic(`ran ${ran.length} blocks: ${ran.join('; ')}`);
});

/**
 * realServices runs the README's real-services block on a database and a Redis key
 * prefix of its own (its database name replaced), until the server is ready, then stops
 * it with SIGTERM: it must start as written and end cleanly.
 */
async function realServices(t, b, where) {
  const db = `seatflow_readme_${randomUUID().slice(0, 8)}`;
  const prefix = `sfreadme${randomUUID().slice(0, 8)}`;
  const port = await freePort();
  let body = b.body.replaceAll("seatflow'", `${db}'`);
  assert.equal(body.split(db).length - 1, 2, `${where}: the block no longer names the database seatflow twice (CREATE DATABASE and the DSN):\n${b.body}`);
  body = body.replaceAll('go run ./server', `exec '${bin}'`);
  const mysql = (sql) => execFileSync('mariadb', ['-h127.0.0.1', '-uroot', '-e', sql], { stdio: 'ignore' });
  t.after(() => {
    mysql(`DROP DATABASE IF EXISTS \`${db}\``);
    execFileSync('sh', ['-c', `redis-cli -h 127.0.0.1 --scan --pattern '${prefix}:*' | xargs -r redis-cli -h 127.0.0.1 unlink >/dev/null`]);
  });
  // The address and key prefix come from the environment: the block is run as written.
  const proc = new Proc(spawn('bash', ['-c', body], {
    env: cleanEnv({ SEATFLOW_ADDR: `127.0.0.1:${port}`, SEATFLOW_REDIS_PREFIX: prefix }), stdio: ['ignore', 'pipe', 'pipe'],
  }));
  await proc.waitFor((p) => p.out.includes('SeatFlow is listening (MySQL + Redis)'), `${where}: the server's start`, 60000);
  const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
  assert.equal(ready.status, 200, `${where}: /readyz answered ${ready.status}`);
  proc.child.kill('SIGTERM');
  const { code } = await proc.exited;
  assert.equal(code, 0, `${where}: exit status ${code} after SIGTERM; stderr:\n${proc.err}`);
}
