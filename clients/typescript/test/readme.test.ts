// The README's quick start, run as written: its code block is copied out of README.md,
// type-checked (strict), and run with node against a real
// `membank serve` with API keys (MEMBANK_URL and MEMBANK_API_KEY, as the README says). It
// imports '@membank/client' by name, which resolves to this package's dist/ (Node's
// self-reference through "exports"), so `npm run build` must have run (npm test does).

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { PACKAGE_DIR, REPO_ROOT } from '../tools/paths.js';
import { createKey, removeDir, startServer, tempDir, type RunningServer } from '../tools/server.js';

const run = promisify(execFile);

/** The first ```ts block after the "## Quick start" heading. */
function quickStart(): string {
  const readme = readFileSync(join(PACKAGE_DIR, 'README.md'), 'utf8');
  const section = readme.split(/^## /m).find((s) => s.startsWith('Quick start'));
  assert.ok(section, 'README.md has a "## Quick start" section');
  const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block, 'the quick start has a ```ts block');
  return block;
}

let dir: string;
let server: RunningServer;
let key: string;
// Inside the package, so that '@membank/client' resolves to it.
const scratch = join(PACKAGE_DIR, 'build', 'readme');

before(async () => {
  dir = tempDir('membank-ts-readme');
  const db = join(dir, 'membank.db');
  key = createKey(db, 'acme');
  server = await startServer({ dir, db });
  mkdirSync(scratch, { recursive: true });
});

after(async () => {
  await server?.stop();
  if (dir) removeDir(dir);
});

test('the quick start is five lines', () => {
  assert.equal(quickStart().trimEnd().split('\n').length, 5);
});

test("the repository README's TypeScript section shows this same quick start", () => {
  const root = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  const section = root.split(/^### /m).find((s) => s.startsWith('TypeScript'));
  assert.ok(section, 'the repository README has a "### TypeScript" section');
  assert.equal(/```ts\n([\s\S]*?)```/.exec(section)?.[1], quickStart());
});

test('the quick start type-checks (strict, NodeNext)', async () => {
  const file = join(scratch, 'quickstart.ts');
  writeFileSync(file, quickStart());
  writeFileSync(
    join(scratch, 'tsconfig.json'),
    // A user's usual settings: strict, without this package's extra index-access rules.
    JSON.stringify({
      compilerOptions: { strict: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', lib: ['ES2022'], types: ['node'], noEmit: true, skipLibCheck: true },
      include: ['quickstart.ts'],
    }),
  );
  const tsc = join(PACKAGE_DIR, 'node_modules', 'typescript', 'bin', 'tsc');
  try {
    await run(process.execPath, [tsc, '-p', join(scratch, 'tsconfig.json')], { cwd: PACKAGE_DIR });
  } catch (err) {
    const out = err as { stdout?: string; stderr?: string };
    assert.fail(`the README's quick start does not type-check:\n${out.stdout ?? ''}${out.stderr ?? ''}`);
  }
});

test('the quick start runs as written against a keyed server and prints the memory about Miso', async () => {
  const file = join(scratch, 'quickstart.mjs');
  writeFileSync(file, quickStart());
  const env = { ...process.env, MEMBANK_URL: server.baseUrl, MEMBANK_API_KEY: key };
  const { stdout } = await run(process.execPath, [file], { cwd: scratch, env, timeout: 30_000 });
  assert.match(stdout, /Miso/);
  assert.equal(stdout.trim(), 'User: My cat is Miso');
});
