// The one function that turns membank's OpenAPI document into `src/schema.d.ts`: used by
// `npm run generate` to write the file and by the schema test to check the committed copy,
// so both make byte-for-byte the same text from the same document.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import { PACKAGE_DIR } from './paths.js';

export { SCHEMA_FILE } from './paths.js';

function generatorVersion(): string {
  const manifest = JSON.parse(readFileSync(join(PACKAGE_DIR, 'node_modules', 'openapi-typescript', 'package.json'), 'utf8')) as { version: string };
  return manifest.version;
}

/** The text of `src/schema.d.ts` for an OpenAPI document (as parsed JSON). */
export async function schemaSource(document: object): Promise<string> {
  // openapi-typescript reads the document it is given and never fetches (no external refs).
  // emptyObjectsUnknown: a free-form object (an event's `data`) is Record<string, unknown>,
  // not Record<string, never>, which no value could satisfy.
  const ast = await openapiTS(structuredClone(document) as Parameters<typeof openapiTS>[0], { silent: true, emptyObjectsUnknown: true });
  const header = [
    '// Generated from the OpenAPI document `membank serve` serves at /openapi.json, by',
    `// openapi-typescript ${generatorVersion()} (\`npm run generate\` in clients/typescript). Do not edit:`,
    '// test/schema.test.ts fails when this file differs from what the binary serves.',
    '',
  ].join('\n');
  return `${header}\n${astToString(ast)}`;
}
