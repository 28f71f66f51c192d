// `npm run generate`: regenerates src/schema.d.ts from the OpenAPI document a membank server
// serves at /openapi.json.
//
//   npm run generate                                  # starts MEMBANK_BIN (default: the repo's
//                                                     # target/debug/membank) on a temp database
//   npm run generate -- --url http://127.0.0.1:8787   # or MEMBANK_URL: a server already running
//
// The document needs no key, so any server will do; it is the same for every configuration.

import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { SCHEMA_FILE, schemaSource } from './schema.js';
import { removeDir, startServer, tempDir } from './server.js';

async function fetchDocument(baseUrl: string): Promise<object> {
  const url = new URL('/openapi.json', baseUrl);
  const res = await fetch(url, { signal: AbortSignal.timeout(30_000) });
  if (!res.ok) throw new Error(`GET ${url} answered ${res.status}`);
  return (await res.json()) as object;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const urlFlag = args.indexOf('--url');
  const url = urlFlag >= 0 ? args[urlFlag + 1] : process.env['MEMBANK_URL'];
  let document: object;
  if (url) {
    document = await fetchDocument(url);
  } else {
    const dir = tempDir('membank-ts-generate');
    const server = await startServer({ dir });
    try {
      document = await fetchDocument(server.baseUrl);
    } finally {
      await server.stop();
      removeDir(dir);
    }
  }
  const text = await schemaSource(document);
  let before = '';
  try {
    before = readFileSync(SCHEMA_FILE, 'utf8');
  } catch {
    // First generation.
  }
  const name = relative(process.cwd(), SCHEMA_FILE) || SCHEMA_FILE;
  if (before === text) {
    console.log(`${name} is up to date`);
  } else {
    writeFileSync(SCHEMA_FILE, text);
    console.log(`wrote ${name}; rebuild (npm run build) and commit it`);
  }
}

main().catch((err: unknown) => {
  console.error(`generate: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
