// The committed src/schema.d.ts must be exactly what `npm run generate` makes from the
// OpenAPI document the binary under test serves; when the REST API changes, this fails
// and says how to regenerate.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { after, before, test } from 'node:test';
import { PACKAGE_DIR, REPO_ROOT, SCHEMA_FILE } from '../tools/paths.js';
import { schemaSource } from '../tools/schema.js';
import { BIN, removeDir, startServer, tempDir, type RunningServer } from '../tools/server.js';

let dir: string;
let server: RunningServer;

before(async () => {
  dir = tempDir('membank-ts-schema');
  server = await startServer({ dir });
});

after(async () => {
  await server?.stop();
  if (dir) removeDir(dir);
});

/** Where two texts first differ, as a few lines of each. */
function firstDifference(committed: string, served: string): string {
  const a = committed.split('\n');
  const b = served.split('\n');
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const show = (lines: string[]): string => lines.slice(Math.max(0, i - 2), i + 4).map((l, n) => `    ${Math.max(0, i - 2) + n + 1}: ${l}`).join('\n');
  return `first difference at line ${i + 1}:\n  committed:\n${show(a)}\n  generated from the server:\n${show(b)}`;
}

test('src/schema.d.ts is what the binary serves at /openapi.json', async () => {
  const res = await fetch(`${server.baseUrl}/openapi.json`);
  assert.equal(res.status, 200);
  const document = (await res.json()) as { openapi?: string; paths?: Record<string, unknown> };
  assert.match(document.openapi ?? '', /^3\./);
  assert.ok(document.paths?.['/v1/users/{user}/recall'], 'the document describes recall');

  const served = await schemaSource(document);
  const committed = readFileSync(SCHEMA_FILE, 'utf8');
  if (committed !== served) {
    const bin = BIN.startsWith(`${REPO_ROOT}/`) ? relative(REPO_ROOT, BIN) : BIN;
    const pkg = relative(REPO_ROOT, PACKAGE_DIR);
    assert.fail(
      `${relative(REPO_ROOT, SCHEMA_FILE)} is out of date: the REST API that ${bin} serves has changed.\n` +
        `Regenerate it and commit the result:\n\n    cd ${pkg} && MEMBANK_BIN=${BIN} npm run generate && npm run build\n\n` +
        `then fix what no longer compiles in src/ (the client's methods are typed by it).\n${firstDifference(committed, served)}`,
    );
  }
});
