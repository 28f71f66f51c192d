// A real `membank serve` for the tests and for `npm run generate`: a free loopback port, a
// fresh SQLite database in a temporary directory, the real embedding model (wherever the
// binary finds it: MEMBANK_MODEL_DIR or the default models directory), stopped by its own
// PID. Modelled on the web app's harness (crates/membank-server/web/e2e/harness.mjs).
//
// Environment:
//   MEMBANK_BIN     the binary (default: target/debug/membank of the repository)
//   MEMBANK_TS_TMP  where databases, logs and PID files go (default: the system temp dir);
//                   scripts/ts-client-tests.sh sets it and, on exit, kills any PID listed
//                   in `*.pid` there that is still a membank process, so a crashed test run
//                   leaves no server behind.

import { spawn, execFileSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { REPO_ROOT } from './paths.js';

export const BIN = resolve(REPO_ROOT, process.env['MEMBANK_BIN'] || 'target/debug/membank');

/** A fresh directory under MEMBANK_TS_TMP (or the system temp dir). */
export function tempDir(name: string): string {
  const base = process.env['MEMBANK_TS_TMP'] || tmpdir();
  mkdirSync(base, { recursive: true });
  return mkdtempSync(join(base, `${name}-`));
}

export function removeDir(dir: string): void {
  if (!process.env['MEMBANK_TS_KEEP']) rmSync(dir, { recursive: true, force: true });
}

/** A port nothing listens on right now (bound and released; the usual small race). */
export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

function requireBinary(): void {
  if (!existsSync(BIN)) {
    throw new Error(`no membank binary at ${BIN}: build it with \`cargo build -p membank-cli\` in the repository, or set MEMBANK_BIN`);
  }
}

/** `membank keys create`; returns the printed key. */
export function createKey(db: string, tenant: string, user?: string): string {
  requireBinary();
  const args = ['keys', 'create', '--tenant', tenant, '--db', db, '--json'];
  if (user) args.push('--user', user, '--label', `ts-client ${user}`);
  const out = execFileSync(BIN, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const key = (JSON.parse(out) as { key?: string }).key;
  if (!key) throw new Error(`membank keys create printed no key: ${out}`);
  return key;
}

export interface RunningServer {
  /** `http://127.0.0.1:PORT` */
  baseUrl: string;
  port: number;
  pid: number;
  /** The server's stdout and stderr. */
  log: string;
  /** SIGTERM to its PID, SIGKILL after 10 s; resolves once it has exited. Idempotent. */
  stop(): Promise<void>;
}

export interface ServerOptions {
  dir: string;
  db?: string;
  tenant?: string;
  /** Extra environment (e.g. MEMBANK_LLM_BASE_URL for the stub LLM). */
  env?: Record<string, string>;
  /** Extra `serve` arguments. */
  args?: string[];
}

// Servers still running when the test process exits (a failed `before`, an uncaught
// error) are killed by PID on the way out.
const running = new Set<number>();
process.on('exit', () => {
  for (const pid of running) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
});

/** Starts `membank serve` on a free loopback port and waits for `/readyz` (60 s at most). */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  requireBinary();
  const { dir, tenant = 'acme' } = options;
  const db = options.db ?? join(dir, 'membank.db');
  const port = await freePort();
  const log = join(dir, `serve-${port}.log`);
  const out = createWriteStream(log);
  const env: NodeJS.ProcessEnv = { ...process.env, RUST_LOG: process.env['RUST_LOG'] || 'warn', ...options.env };
  // The developer's own LLM or config file must not leak into a test server.
  for (const name of ['MEMBANK_LLM_BASE_URL', 'MEMBANK_LLM_MODEL', 'MEMBANK_LLM_API_KEY', 'MEMBANK_CONFIG', 'MEMBANK_DB']) {
    if (!options.env || !(name in options.env)) delete env[name];
  }
  const child = spawn(BIN, ['serve', '--db', db, '--addr', `127.0.0.1:${port}`, '--tenant', tenant, '--no-maintenance', ...(options.args ?? [])], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not start ${BIN}`);
  running.add(pid);
  const pidFile = join(dir, `serve-${port}.pid`);
  writeFileSync(pidFile, `${pid}\n`);
  child.stdout.pipe(out);
  child.stderr.pipe(out);
  let exited: { code: number | null; signal: string | null } | null = null;
  const gone = new Promise<void>((resolveGone) => {
    child.once('exit', (code, signal) => {
      exited = { code, signal };
      running.delete(pid);
      rmSync(pidFile, { force: true });
      resolveGone();
    });
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    if (!exited) {
      process.kill(pid, 'SIGTERM');
      const timer = setTimeout(() => {
        if (!exited) process.kill(pid, 'SIGKILL');
      }, 10_000);
      await gone;
      clearTimeout(timer);
    }
    await new Promise<void>((r) => out.end(r));
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited) throw new Error(`membank serve exited at start (${JSON.stringify(exited)}); log:\n${readFileSync(log, 'utf8')}`);
    try {
      const res = await fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(2_000) });
      if (res.status === 200) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`membank serve was not ready within 60 s; log:\n${readFileSync(log, 'utf8')}`);
    }
    await sleep(100);
  }
  return { baseUrl, port, pid, log, stop };
}
