// Where things are, for the tools and tests (which run compiled, from build/tools and
// build/test). Kept apart from schema.ts so that importing a path does not load the
// TypeScript compiler that openapi-typescript brings (over a second on a busy machine).

import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package directory (`clients/typescript`). */
export const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The repository root. */
export const REPO_ROOT = resolve(PACKAGE_DIR, '..', '..');
/** The committed, generated types. */
export const SCHEMA_FILE = join(PACKAGE_DIR, 'src', 'schema.d.ts');
