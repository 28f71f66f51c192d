// tsc emits no .d.ts for a .d.ts input, so the generated schema is copied into dist/ beside
// the index.d.ts that imports it.
import { copyFileSync } from 'node:fs';
copyFileSync(new URL('../src/schema.d.ts', import.meta.url), new URL('../dist/schema.d.ts', import.meta.url));
