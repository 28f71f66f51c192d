// What the browser tests share: a real `membank serve` on a free loopback port with a
// temporary database and the real embedding model, a scripted OpenAI-compatible stub LLM,
// headless Chromium through playwright-core, and the screenshot directory.
//
// Environment:
//   MEMBANK_BIN         the binary (default: target/debug/membank from the repository root)
//   MEMBANK_E2E_TMP     a directory for databases and logs (default: a fresh temp dir)
//   MEMBANK_E2E_SHOTS   where screenshots go (default: target/web-e2e-shots)
//   MEMBANK_E2E_ASSETS  `disk` serves `/` and `/assets/…` from crates/membank-server/web/app
//                       instead of the binary's embedded copies (for working on the app
//                       without rebuilding; the API is still the real server's)
//   CHROMIUM            the browser (default /usr/bin/chromium)
//   MEMBANK_E2E_PG_URL  run the servers on PostgreSQL: each suite gets a new database on
//                       the server this URL names (made and dropped with psql) instead of a
//                       SQLite file (scripts/postgres-dev.sh start prints such a URL). It may
//                       name a Citus coordinator (scripts/citus-dev.sh start prints one):
//                       the new database is then made on the coordinator and on every
//                       worker, with citus in each and the workers added, a cluster of its
//                       own where membank creates its schema distributed

import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, existsSync, createWriteStream } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { chromium } from 'playwright-core';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
export const WEB_DIR = join(ROOT, 'crates', 'membank-server', 'web', 'app');
export const BIN = resolve(ROOT, process.env.MEMBANK_BIN || 'target/debug/membank');
export const SHOTS = resolve(ROOT, process.env.MEMBANK_E2E_SHOTS || 'target/web-e2e-shots');
const ASSETS_FROM_DISK = process.env.MEMBANK_E2E_ASSETS === 'disk';

export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

/** A fresh directory under MEMBANK_E2E_TMP (or the system temp dir); removed by `cleanup`. */
export function tempDir(name) {
  const base = process.env.MEMBANK_E2E_TMP || tmpdir();
  mkdirSync(base, { recursive: true });
  return mkdtempSync(join(base, `${name}-`));
}

const PG_URL = process.env.MEMBANK_E2E_PG_URL || '';
/** The databases made, each with the URLs of its copies (Citus: the coordinator's first). */
const madeDatabases = [];

function psql(url, sql) {
  return execFileSync('psql', [url, '-qAtc', sql], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** `url` with database `name`. */
function withDatabase(url, name) {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** With MEMBANK_E2E_PG_URL on a Citus coordinator: its active workers' `postgres`
 * databases (the URL's user and password, the node's host and port); otherwise null. */
let citusWorkers;
function workersOfCitus() {
  if (citusWorkers !== undefined) return citusWorkers;
  const citus = psql(PG_URL, "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')") === 't';
  citusWorkers = null;
  if (citus) {
    const rows = psql(PG_URL, "SELECT nodename || ' ' || nodeport FROM pg_dist_node WHERE noderole = 'primary' AND isactive AND groupid <> 0 ORDER BY groupid");
    citusWorkers = rows.split('\n').filter(Boolean).map((line) => {
      const [host, port] = line.split(' ');
      const u = new URL(PG_URL);
      u.hostname = host;
      u.port = port;
      u.pathname = '/postgres';
      return { host, port, url: u.toString() };
    });
  }
  return citusWorkers;
}

/** The database a suite's server uses: `m.db` in `dir`, or with MEMBANK_E2E_PG_URL a new
 * PostgreSQL database on that server (dropped by `cleanup`). On a Citus coordinator, Citus
 * 12.1 does not propagate CREATE DATABASE: the database is made on the coordinator and on
 * every worker, with citus in each, the coordinator told its own address and the workers
 * added, as the store's tests make theirs (membank_store::postgres::testing). */
export function database(dir) {
  if (!PG_URL) return join(dir, 'm.db');
  const name = `e2e_${process.pid}_${madeDatabases.length}_${Date.now()}`;
  const workers = workersOfCitus();
  const made = { name, urls: [PG_URL] };
  // Recorded before it exists, so a failure half way still drops what was made.
  madeDatabases.push(made);
  psql(PG_URL, `CREATE DATABASE ${name}`);
  const url = withDatabase(PG_URL, name);
  if (workers) {
    for (const worker of workers) {
      made.urls.push(worker.url);
      psql(worker.url, `CREATE DATABASE ${name}`);
      psql(withDatabase(worker.url, name), 'CREATE EXTENSION citus');
    }
    psql(url, 'CREATE EXTENSION citus');
    const coordinator = psql(PG_URL, 'SELECT nodename || \' \' || nodeport FROM pg_dist_node WHERE groupid = 0');
    if (coordinator) {
      const [host, port] = coordinator.split(' ');
      psql(url, `SELECT citus_set_coordinator_host('${host}', ${Number(port)})`);
    }
    for (const worker of workers) {
      // A worker's maintenance daemon, just started in the new database, may update the
      // row citus_add_node does ("tuple concurrently updated"): try again a few times.
      for (let attempt = 0; ; attempt++) {
        try {
          psql(url, `SELECT citus_add_node('${worker.host}', ${Number(worker.port)})`);
          break;
        } catch (err) {
          if (attempt >= 10) throw err;
          execFileSync('sleep', [String(0.1 * (attempt + 1))]);
        }
      }
    }
  }
  return url;
}

export async function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createNetServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

/** `membank keys create`; returns the key. */
export function createKey(db, tenant, user) {
  const args = ['keys', 'create', '--tenant', tenant, '--db', db, '--json'];
  if (user) args.push('--user', user, '--label', `e2e ${user}`);
  const out = execFileSync(BIN, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const key = JSON.parse(out).key;
  if (!key) throw new Error(`keys create printed no key: ${out}`);
  return key;
}

/** Starts `membank serve` and waits for `/readyz`. */
export async function startServer({ dir, db, tenant = 'acme', env = {} }) {
  if (!existsSync(BIN)) throw new Error(`no membank binary at ${BIN}: build it with cargo build -p membank-cli, or set MEMBANK_BIN`);
  const port = await freePort();
  const log = join(dir, `serve-${port}.log`);
  const out = createWriteStream(log);
  const childEnv = { ...process.env, RUST_LOG: process.env.RUST_LOG || 'warn', ...env };
  for (const name of ['MEMBANK_LLM_BASE_URL', 'MEMBANK_LLM_MODEL', 'MEMBANK_LLM_API_KEY', 'MEMBANK_CONFIG']) {
    if (!(name in env)) delete childEnv[name];
  }
  const child = spawn(BIN, ['serve', '--db', db, '--addr', `127.0.0.1:${port}`, '--tenant', tenant, '--no-maintenance'], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.pipe(out);
  child.stderr.pipe(out);
  let exited = null;
  child.on('exit', (code, signal) => { exited = { code, signal }; });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited) throw new Error(`membank serve exited (${JSON.stringify(exited)}); log:\n${readFileSync(log, 'utf8')}`);
    try {
      const res = await fetch(`${base}/readyz`);
      if (res.status === 200) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`membank serve was not ready within 60 s; log:\n${readFileSync(log, 'utf8')}`);
    await sleep(150);
  }
  return {
    base,
    port,
    log,
    async stop() {
      if (exited) return;
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => { if (!exited) child.kill('SIGKILL'); }, 10_000);
      await gone;
      clearTimeout(timer);
    },
  };
}

/** A tiny JSON client of the REST API for setting up and checking tests. */
export function apiClient(base, key) {
  return async function call(method, path, body) {
    const headers = { Accept: 'application/json' };
    if (key) headers.Authorization = `Bearer ${key}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(`${base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    const json = text ? JSON.parse(text) : null;
    if (!res.ok) {
      const err = new Error(`${method} ${path}: ${res.status} ${text}`);
      err.status = res.status;
      err.body = json;
      throw err;
    }
    return json;
  };
}

/**
 * A scripted OpenAI-compatible chat endpoint. Streaming requests (`"stream": true`) get the
 * reply word by word as server-sent events with `delayMs` between chunks; others get one
 * JSON completion. `reply(request)` chooses the text, or returns `{status, message}` for an
 * error answer; every request is recorded.
 */
export async function startStubLlm({ reply, delayMs = 120 } = {}) {
  const requests = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => { raw += chunk; });
    req.on('end', async () => {
      if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
        res.writeHead(404, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `the stub has no ${req.method} ${req.url}` } }));
        return;
      }
      let body;
      try {
        body = JSON.parse(raw);
      } catch {
        res.writeHead(400, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'not JSON' } }));
        return;
      }
      requests.push(body);
      const text = reply(body);
      if (text && typeof text === 'object') {
        // A scripted failure: `{status, message}`.
        res.writeHead(text.status, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ error: { message: text.message } }));
        return;
      }
      if (body.stream) {
        res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
        const words = text.split(/(?<= )/);
        for (const word of words) {
          res.write(`data: ${JSON.stringify({ id: 'stub', object: 'chat.completion.chunk', model: body.model, choices: [{ index: 0, delta: { content: word }, finish_reason: null }] })}\n\n`);
          await sleep(delayMs);
        }
        res.write(`data: ${JSON.stringify({ id: 'stub', object: 'chat.completion.chunk', model: body.model, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
        res.end('data: [DONE]\n\n');
      } else {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ id: 'stub', object: 'chat.completion', model: body.model, choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage: { prompt_tokens: 10, completion_tokens: 10 } }));
      }
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    stop: () => new Promise((r) => { server.closeAllConnections?.(); server.close(r); }),
  };
}

// The policy the server sends with the page (crates/membank-server/src/web.rs); used when
// the assets come from disk so the app is held to the same rules.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'";
const TYPES = { html: 'text/html; charset=utf-8', js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8' };

export async function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'],
  });
}

/**
 * A fresh browser context (its own session storage) and page on `base`. Every console
 * error, page error and CSP violation is collected in `problems`, which the tests assert
 * empty: a violation of the policy is a failure, not noise.
 */
export async function openPage(browser, base, { viewport = DESKTOP } = {}) {
  const context = await browser.newContext({ viewport, deviceScaleFactor: 1, reducedMotion: 'reduce' });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') {
      const text = msg.text();
      // Failed API calls the app shows in its alert are expected in some tests; the
      // browser logs each non-2xx fetch as "Failed to load resource".
      if (/Failed to load resource: the server responded with a status of (4\d\d|503)/.test(text)) return;
      problems.push(`console error: ${text}`);
    }
  });
  if (ASSETS_FROM_DISK) {
    await context.route(`${base}/`, (route) => route.fulfill({ status: 200, headers: { 'Content-Type': TYPES.html, 'Content-Security-Policy': CSP }, body: readFileSync(join(WEB_DIR, 'index.html')) }));
    await context.route(`${base}/assets/**`, (route) => {
      const path = new URL(route.request().url()).pathname.replace(/^\/assets\//, '');
      const file = join(WEB_DIR, path);
      if (!file.startsWith(WEB_DIR) || !existsSync(file)) return route.fulfill({ status: 404, body: 'not found' });
      const ext = path.split('.').pop();
      return route.fulfill({ status: 200, headers: { 'Content-Type': TYPES[ext] || 'text/plain', 'Content-Security-Policy': CSP }, body: readFileSync(file) });
    });
  }
  return { context, page, problems };
}

/** Whether the binary serves the same app files as the working tree (a stale build does not). */
export async function assetsMatchDisk(base) {
  if (ASSETS_FROM_DISK) return [];
  const stale = [];
  for (const name of ['app.js', 'app.css', 'vendor/uPlot.iife.min.js', 'vendor/uPlot.min.css']) {
    const res = await fetch(`${base}/assets/${name}`);
    const served = Buffer.from(await res.arrayBuffer());
    if (res.status !== 200 || !served.equals(readFileSync(join(WEB_DIR, name)))) stale.push(name);
  }
  return stale;
}

export async function shot(page, name) {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** Screenshots of the current page at desktop and phone widths. */
export async function shots(page, name) {
  const before = page.viewportSize();
  await page.setViewportSize(DESKTOP);
  await sleep(250);
  await shot(page, `${name}-desktop`);
  await page.setViewportSize(PHONE);
  await sleep(350);
  await shot(page, `${name}-phone`);
  await page.setViewportSize(before);
  await sleep(150);
}

export function cleanup(dir) {
  while (madeDatabases.length) {
    const { name, urls } = madeDatabases.pop();
    // The coordinator's copy first: its connections to the workers' copies close with it.
    for (const url of urls) {
      try {
        psql(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } catch (err) {
        console.error(`could not drop the test database ${name} on ${new URL(url).host}: ${err.message}`);
      }
    }
  }
  if (dir && !process.env.MEMBANK_E2E_KEEP) rmSync(dir, { recursive: true, force: true });
}

/** `YYYY-MM-DD` of `days` days before today (UTC), and an instant at `hour` on it. */
export function daysAgo(days, hour = 12) {
  const d = new Date();
  d.setUTCHours(hour, 0, 0, 0);
  d.setUTCDate(d.getUTCDate() - days);
  return { day: d.toISOString().slice(0, 10), at: d.toISOString() };
}
