// The web app's only "build" step: copy uPlot's distributed files from node_modules (pinned
// exactly in package.json and package-lock.json) into the folder the binary embeds. The app
// itself is hand-written and needs no bundler; `.ci/run` runs this after `npm ci` and fails
// when the committed copies differ from what the lock file gives.
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const from = join(here, 'node_modules', 'uplot');
const to = join(here, 'app', 'vendor');

const version = JSON.parse(readFileSync(join(from, 'package.json'), 'utf8')).version;
mkdirSync(to, { recursive: true });
for (const [source, target] of [
  ['dist/uPlot.iife.min.js', 'uPlot.iife.min.js'],
  ['dist/uPlot.min.css', 'uPlot.min.css'],
  ['LICENSE', 'LICENSE-uPlot'],
]) {
  copyFileSync(join(from, source), join(to, target));
  console.log(`vendored uplot ${version}: ${source} -> crates/membank-server/web/app/vendor/${target}`);
}
