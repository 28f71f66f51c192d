// The web app end to end, in headless Chromium, against a real `membank serve` with keys
// (alice's and bob's, made with the CLI), the real embedding model, a temporary database
// and a scripted stub LLM. The tests run in order and share one server: what one test
// does (a pin, two recalls) is what the next one looks at.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  database,
  apiClient, assetsMatchDisk, cleanup, createKey, daysAgo, launchBrowser, openPage, shots, startServer, startStubLlm, tempDir, PHONE, DESKTOP,
} from './harness.mjs';

const TIMEOUT = 15_000;

// The turns alice remembers, over several days (`clock_from: event`: the forgetting clock
// starts at the day they were said, so the oldest is already past the archive threshold).
const TURNS = [
  { ago: 60, text: 'I adopted a grey cat named Miso from the shelter.', reply: 'Miso sounds lovely!', importance: 0.5 },
  { ago: 3, text: 'I started learning the cello this week.', reply: 'How exciting, the cello is beautiful.' },
  { ago: 2, text: 'My sister Lena is visiting from Berlin next month.', reply: 'You must be looking forward to it.' },
  { ago: 1, text: 'I prefer green tea over coffee in the mornings.', reply: 'Green tea is a gentle start.' },
  { ago: 1, text: 'Planning a hiking trip to the Alps in July.', reply: 'The Alps in July are wonderful.', hour: 15 },
];

/** The stub's scripted reply: cites the memory about Lena by the label the prompt gave it. */
function scriptedReply(request) {
  const prompt = request.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
  const last = request.messages[request.messages.length - 1]?.content ?? '';
  if (/model failure/.test(last)) return { status: 401, message: 'the stub refuses this key' };
  if (!request.stream) return 'They talked about their sister, their cat and their plans.';
  let label = 'M1';
  const blocks = prompt.split(/(?=\[M\d+\] )/);
  for (const block of blocks) {
    const m = block.match(/^\[(M\d+)\] /);
    if (m && /Lena/.test(block)) label = m[1];
  }
  return `From what you told me, your sister Lena is coming from Berlin next month [${label}]. I hope the two of you have a wonderful time together, and that the weather is kind.`;
}

describe('membank web app (API keys, stub LLM)', () => {
  let dir;
  let server;
  let stub;
  let browser;
  let alice;
  let bob;
  let asAlice;
  const ids = {};
  const opened = [];

  before(async () => {
    dir = tempDir('membank-web-e2e');
    const db = database(dir);
    alice = createKey(db, 'acme', 'alice');
    bob = createKey(db, 'acme', 'bob');
    stub = await startStubLlm({ reply: scriptedReply, delayMs: 90 });
    server = await startServer({ dir, db, env: { MEMBANK_LLM_BASE_URL: stub.baseUrl, MEMBANK_LLM_MODEL: 'stub' } });
    // A binary built before the last change to the app would test old files: say so at once.
    const stale = await assetsMatchDisk(server.base);
    if (stale.length) throw new Error(`${server.base} serves other files than crates/membank-server/web/app has (${stale.join(', ')}): the binary is stale; rebuild it with cargo build -p membank-cli (or set MEMBANK_E2E_ASSETS=disk while working on the app)`);
    asAlice = apiClient(server.base, alice);
    for (const t of TURNS) {
      const { at } = daysAgo(t.ago, t.hour ?? 12);
      const body = { user_text: t.text, assistant_text: t.reply, occurred_at: at, clock_from: 'event' };
      if (t.importance !== undefined) body.importance = t.importance;
      const m = await asAlice('POST', '/v1/users/alice/turns', body);
      ids[t.text] = m.id;
    }
    // bob exists too, so the tenant has two users.
    await apiClient(server.base, bob)('POST', '/v1/users/bob/turns', { user_text: 'Bob likes chess.', clock_from: 'event' });
    browser = await launchBrowser();
  });

  after(async () => {
    for (const { context } of opened) await context.close().catch(() => {});
    await browser?.close().catch(() => {});
    await server?.stop();
    await stub?.stop();
    cleanup(dir);
  });

  async function fresh(viewport = DESKTOP) {
    const session = await openPage(browser, server.base, { viewport });
    opened.push(session);
    return session;
  }

  async function signIn(page, key) {
    await page.goto(`${server.base}/`);
    await page.getByTestId('signin-key').fill(key);
    await page.getByTestId('signin-submit').click();
    await page.getByTestId('page-memories').waitFor({ timeout: TIMEOUT });
  }

  const card = (page, id) => page.locator(`[data-testid="timeline"] [data-testid="memory-card"][data-id="${id}"]`);

  it('serves the page with a strict Content-Security-Policy', async () => {
    const res = await fetch(`${server.base}/`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /text\/html/);
    assert.match(res.headers.get('content-security-policy') ?? '', /script-src 'self'/);
  });

  it('refuses a bad key with the API error message, in an alert', async () => {
    const { page, problems } = await fresh();
    // A fresh browser's first load asks for a key before any request that needs one.
    const refused = [];
    page.on('response', (response) => { if (response.status() === 401) refused.push(response.url()); });
    await page.goto(`${server.base}/`);
    await page.getByTestId('page-signin').waitFor({ timeout: TIMEOUT });
    assert.deepEqual(refused, [], 'no 401 before sign-in');
    await page.getByTestId('signin-key').fill('mbk_not_a_real_key');
    await page.getByTestId('signin-submit').click();
    const alert = page.getByRole('alert');
    await alert.filter({ hasText: 'unknown or revoked API key' }).waitFor({ timeout: TIMEOUT });
    assert.equal(await page.getByTestId('alert-code').textContent(), 'unauthorized');
    assert.equal(await page.getByTestId('page-signin').count(), 1, 'still on the sign-in page');
    await shots(page, '01-signin-error');
    assert.deepEqual(problems, []);
  });

  it('signs in with alice\'s key and shows her turns in a timeline by day', async () => {
    const { page, problems } = await fresh();
    await signIn(page, alice);
    const select = page.getByTestId('user-select');
    assert.equal(await select.inputValue(), 'alice');
    assert.deepEqual(await select.locator('option').allTextContents(), ['alice'], 'a key bound to alice lists only alice');
    // The page is up before its list has loaded (on PostgreSQL it once was not there yet).
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="timeline"] [data-testid="memory-card"]').length >= n, TURNS.length, { timeout: TIMEOUT });
    const days = await page.getByTestId('day-group').evaluateAll((els) => els.map((e) => [e.dataset.day, e.querySelectorAll('[data-testid="memory-card"]').length]));
    const expected = new Map();
    for (const t of TURNS) expected.set(daysAgo(t.ago).day, (expected.get(daysAgo(t.ago).day) ?? 0) + 1);
    assert.deepEqual(days, [...expected.entries()].sort((a, b) => (a[0] < b[0] ? 1 : -1)), 'one group per day, newest first, with its memories');
    for (const t of TURNS) {
      const c = card(page, ids[t.text]);
      assert.equal(await c.count(), 1);
      assert.match(await c.getByTestId('memory-text').textContent(), new RegExp(t.text.slice(0, 20)));
      assert.equal(await c.locator('xpath=ancestor::*[@data-testid="day-group"]').getAttribute('data-day'), daysAgo(t.ago).day);
    }
    // S and R are the API's numbers.
    const shown = await asAlice('GET', `/v1/users/alice/memories/${ids[TURNS[1].text]}`);
    const r = await card(page, ids[TURNS[1].text]).getByTestId('memory-retention').textContent();
    assert.ok(Math.abs(Number(r.trim()) - shown.retention) < 0.01, `R shown ${r} vs API ${shown.retention}`);
    assert.equal((await card(page, ids[TURNS[1].text]).getByTestId('memory-strength').textContent()).trim(), '1.00');
    // The oldest is past the archive threshold already: its clock started 60 days ago, longer than
    // the importance it was given buys under the default (.5: ln 20 · (1 + .5/.5)³ ≈ 24 days
    // unrecalled; the probe's own .88 would keep it for years).
    assert.equal(await card(page, ids[TURNS[0].text]).getByTestId('memory-past-threshold').count(), 1);
    // Filters: only one day.
    const day = daysAgo(1).day;
    await page.getByTestId('filter-from').fill(day);
    await page.getByTestId('filter-from').dispatchEvent('change');
    await page.waitForFunction((d) => [...document.querySelectorAll('[data-testid="day-group"]')].every((g) => g.dataset.day >= d) && document.querySelectorAll('[data-testid="day-group"]').length === 1, day, { timeout: TIMEOUT });
    await page.getByTestId('filter-reset').click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="day-group"]').length === 4, null, { timeout: TIMEOUT });
    await shots(page, '02-memories');
    assert.deepEqual(problems, []);
  });

  it('does not show alice to bob: not in his user list, and her memories answer with the API error', async () => {
    const { page, problems } = await fresh();
    await signIn(page, bob);
    const options = await page.getByTestId('user-select').locator('option').allTextContents();
    assert.deepEqual(options, ['bob']);
    // The page is up before its list has loaded (on PostgreSQL it once was not there yet).
    await page.getByTestId('timeline').getByText('Bob likes chess.').first().waitFor({ timeout: TIMEOUT });
    assert.equal(await page.getByTestId('timeline').getByText('Bob likes chess.').count(), 1);
    assert.equal(await page.getByText('Miso').count(), 0);
    await page.goto(`${server.base}/#/memories?user=alice`);
    await page.getByRole('alert').filter({ hasText: 'this key may only act for its own user' }).waitFor({ timeout: TIMEOUT });
    assert.equal(await page.getByTestId('memory-card').count(), 0, 'nothing of alice is shown');
    await page.goto(`${server.base}/#/memory/${ids[TURNS[0].text]}?user=alice`);
    await page.getByTestId('memory-error').waitFor({ timeout: TIMEOUT });
    assert.equal(await page.getByText('Miso').count(), 0);
    await shots(page, '03-forbidden');
    assert.deepEqual(problems, []);
  });

  it('searches with a recall that strengthens nothing and shows dense, lexical and fused scores', async () => {
    const { page, problems } = await fresh();
    await signIn(page, alice);
    await page.getByTestId('search-input').fill('learning the cello');
    await page.getByTestId('search-submit').click();
    const first = page.getByTestId('search-hit').first();
    await first.waitFor({ timeout: TIMEOUT });
    assert.equal(await first.getAttribute('data-id'), ids[TURNS[1].text], 'the cello turn comes first');
    const number = async (testid) => Number((await first.getByTestId(testid).locator('.score-value').textContent()).trim());
    const [fused, dense, lexical] = [await number('score-fused'), await number('score-dense'), await number('score-lexical')];
    assert.ok(dense > 0 && lexical > 0, `both rankings found it (dense ${dense}, lexical ${lexical})`);
    assert.ok(Math.abs(fused - (dense + lexical)) < 0.0002, `fused ${fused} = dense ${dense} + lexical ${lexical}`);
    assert.match(await first.getByTestId('score-dense').textContent(), /rank 1, cosine 0\.\d+/);
    const after = await asAlice('GET', `/v1/users/alice/memories/${ids[TURNS[1].text]}`);
    assert.equal(after.recall_count, 0, 'the search did not count as a recall');
    assert.equal(after.strength, 1);
    // Hits below the relevance cut-off are hidden, said so, and shown on request: the same
    // ones the API's cosines put there.
    const out = await asAlice('POST', '/v1/users/alice/recall', { query: 'learning the cello', k: 20, strengthen: false });
    const weak = out.results.filter((hit, i) => i > 0 && hit.dense_score < 0.25).length;
    assert.ok(weak > 0, `some hits of ${out.results.length} are weak: ${out.results.map((r) => r.dense_score)}`);
    assert.equal(await page.locator('[data-testid="search-hit"]:visible').count(), out.results.length - weak);
    assert.match(await page.getByTestId('search-cutoff').textContent(), new RegExp(`^${weak} results? below the relevance cut-off`));
    await page.getByTestId('search-show-all').click();
    assert.equal(await page.locator('[data-testid="search-hit"]:visible').count(), out.results.length);
    assert.equal(await page.getByTestId('search-cutoff').count(), 0);
    await shots(page, '04-search');
    assert.deepEqual(problems, []);
  });

  it('pins, forgets with a reason and restores from the page, updating in place', async () => {
    const { page, problems } = await fresh();
    await signIn(page, alice);
    const id = ids[TURNS[3].text];
    // A reload would lose this.
    await page.evaluate(() => { window.__noReload = 'still here'; });
    await card(page, id).getByTestId('action-pin').click();
    await page.locator(`[data-testid="memory-card"][data-id="${id}"][data-pinned="true"]`).waitFor({ timeout: TIMEOUT });
    assert.equal(await card(page, id).getByTestId('memory-pinned').count(), 1);
    assert.equal((await asAlice('GET', `/v1/users/alice/memories/${id}`)).pinned, true);
    await card(page, id).getByTestId('action-unpin').click();
    await page.locator(`[data-testid="memory-card"][data-id="${id}"][data-pinned="false"]`).waitFor({ timeout: TIMEOUT });

    await card(page, id).getByTestId('action-forget').click();
    const dialog = page.getByTestId('forget-dialog');
    await dialog.waitFor();
    await page.getByTestId('forget-reason').fill('I switched to coffee');
    await shots(page, '05-forget-dialog');
    await page.getByTestId('forget-dialog-confirm').click();
    await page.locator(`[data-testid="memory-card"][data-id="${id}"][data-status="archived"]`).waitFor({ timeout: TIMEOUT });
    assert.equal((await card(page, id).getByTestId('memory-status').textContent()).trim(), 'archived');
    assert.equal(await card(page, id).getByTestId('action-restore').count(), 1);
    assert.equal(await dialog.count(), 0, 'the dialog is gone');
    // The counts line follows the action.
    const archivedBefore = (await asAlice('GET', '/v1/users/alice/memories?limit=1')).counts.archived;
    await page.getByTestId('counts').filter({ hasText: `${archivedBefore} archived` }).waitFor({ timeout: TIMEOUT });
    assert.ok(archivedBefore >= 1);
    const events = await asAlice('GET', `/v1/users/alice/events?memory=${id}`);
    const archived = events.events.find((e) => e.kind === 'archived');
    assert.equal(archived?.data?.reason, 'I switched to coffee');

    await card(page, id).getByTestId('action-restore').click();
    await page.locator(`[data-testid="memory-card"][data-id="${id}"][data-status="active"]`).waitFor({ timeout: TIMEOUT });
    assert.equal((await asAlice('GET', `/v1/users/alice/memories/${id}`)).status, 'active');
    await page.getByTestId('counts').filter({ hasText: `${archivedBefore - 1} archived` }).waitFor({ timeout: TIMEOUT });
    assert.equal(await page.evaluate(() => window.__noReload), 'still here', 'no page reload');
    assert.match(await page.getByTestId('status').textContent(), /Restored/);
    assert.deepEqual(problems, []);
  });

  it('works by keyboard: the forget dialog takes focus, Escape cancels, Enter confirms, focus follows the card', async () => {
    const { page, problems } = await fresh();
    await signIn(page, alice);
    const id = ids[TURNS[4].text];
    const active = () => page.evaluate(() => document.activeElement?.dataset?.testid ?? document.activeElement?.tagName);
    await card(page, id).getByTestId('action-forget').focus();
    await page.keyboard.press('Enter');
    await page.getByTestId('forget-dialog').waitFor();
    assert.equal(await active(), 'forget-reason', 'the reason field has focus');
    await page.keyboard.press('Escape');
    await page.getByTestId('forget-dialog').waitFor({ state: 'detached' });
    assert.equal(await active(), 'action-forget', 'focus returns to the button that opened it');
    await page.keyboard.press('Enter');
    await page.keyboard.type('changed my plans');
    await page.keyboard.press('Enter');
    await page.locator(`[data-testid="memory-card"][data-id="${id}"][data-status="archived"]`).waitFor({ timeout: TIMEOUT });
    assert.equal(await active(), 'action-restore', 'focus moves to the restore button of the updated card');
    await page.keyboard.press('Enter');
    await page.locator(`[data-testid="memory-card"][data-id="${id}"][data-status="active"]`).waitFor({ timeout: TIMEOUT });
    // The focused control is visibly marked.
    await card(page, id).getByTestId('action-pin').focus();
    await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Tab');
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
    assert.equal(outline, 'solid', 'a visible focus ring');
    assert.deepEqual(problems, []);
  });

  it('edits a memory and erases one after a confirmation that says it cannot be undone', async () => {
    const { page, problems } = await fresh();
    const note = await asAlice('POST', '/v1/users/alice/notes', { text: 'Temporary note: the wifi password is hunter2.', source: 'user' });
    const typo = await asAlice('POST', '/v1/users/alice/notes', { text: 'My favourite colour is bleu.', source: 'user' });
    const markup = '<img src=x onerror="window.__xss=1"><b>not bold</b>';
    const html = await asAlice('POST', '/v1/users/alice/notes', { text: markup, source: 'user' });
    // Controls and bidirectional overrides are shown written out, not acted on.
    const hostile = 'clear \u001b[2J done, file \u202egnp.exe';
    const controls = await asAlice('POST', '/v1/users/alice/notes', { text: hostile, source: 'user' });
    await signIn(page, alice);
    await page.evaluate(() => { window.__noReload = 'yes'; });
    // Memory text is shown as text, never as markup.
    const htmlText = card(page, html.id).getByTestId('memory-text');
    assert.equal((await htmlText.textContent()).trim(), markup);
    assert.equal(await htmlText.locator('img, b').count(), 0);
    assert.equal(await page.evaluate(() => window.__xss), undefined);
    assert.equal((await card(page, controls.id).getByTestId('memory-text').textContent()).trim(), 'clear \\u{1b}[2J done, file \\u{202e}gnp.exe');
    assert.equal((await asAlice('GET', `/v1/users/alice/memories/${controls.id}`)).content, hostile, 'the stored text is exact');

    await card(page, typo.id).getByTestId('action-edit').click();
    await page.getByTestId('edit-text').fill('My favourite colour is blue.');
    await page.getByTestId('edit-dialog-confirm').click();
    await page.locator(`[data-testid="memory-card"][data-id="${typo.id}"][data-status="superseded"]`).waitFor({ timeout: TIMEOUT });
    await page.getByTestId('timeline').getByText('My favourite colour is blue.').waitFor({ timeout: TIMEOUT });
    // The old version's history links to the new one.
    const superseded = (await asAlice('GET', `/v1/users/alice/events?memory=${typo.id}`)).events.find((e) => e.kind === 'superseded');
    assert.ok(superseded?.data?.by, 'the API logged who superseded it');
    await card(page, typo.id).getByTestId('action-open').click();
    await page.locator(`[data-testid="event"][data-kind="superseded"] a[href="#/memory/${superseded.data.by}"]`).first().waitFor({ timeout: TIMEOUT });
    await page.goBack();
    await page.getByTestId('timeline').waitFor({ timeout: TIMEOUT });

    await card(page, note.id).getByTestId('action-erase').click();
    const dialog = page.getByTestId('erase-dialog');
    await dialog.waitFor();
    assert.match(await dialog.textContent(), /cannot be undone/);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    assert.equal((await asAlice('GET', `/v1/users/alice/memories/${note.id}`)).status, 'active', 'cancelling erased nothing');
    await card(page, note.id).getByTestId('action-erase').click();
    await page.getByTestId('erase-dialog-confirm').click();
    await page.locator(`[data-testid="memory-card"][data-id="${note.id}"][data-status="erased"]`).waitFor({ timeout: TIMEOUT });
    assert.equal(await page.getByText('hunter2').count(), 0, 'the erased text is gone from the page');
    assert.equal((await asAlice('GET', `/v1/users/alice/memories/${note.id}`)).content, null);
    assert.equal(await page.evaluate(() => window.__noReload), 'yes');
    assert.deepEqual(problems, []);
  });

  it('shows a memory\'s history and a forgetting curve with a jump at each recall', async () => {
    const id = ids[TURNS[2].text];
    // Two strengthening recalls, a day apart (the turn was said two days ago at noon), so
    // each jump is visible: yesterday at midnight and today at midnight (UTC).
    for (const when of [daysAgo(1, 0).at, daysAgo(0, 0).at]) {
      const out = await asAlice('POST', '/v1/users/alice/recall', { query: 'sister Lena visiting from Berlin', k: 1, strengthen: true, now: when });
      assert.equal(out.results[0]?.id, id);
      assert.equal(out.strengthened, true);
    }
    // The route's data: two jumps up, each at a recall (retention rises nowhere else; how far
    // it rises depends on how much it had fallen, which importance slows down).
    const curve = await asAlice('GET', `/v1/users/alice/memories/${id}/curve`);
    const recalls = curve.events.filter((e) => e.kind === 'strengthened');
    assert.equal(recalls.length, 2);
    const jumps = [];
    for (let i = 1; i < curve.points.length; i += 1) {
      if (curve.points[i].retention > curve.points[i - 1].retention + 1e-6) jumps.push(curve.points[i].t);
    }
    assert.equal(jumps.length, 2, `two jumps in ${JSON.stringify(curve.points.map((p) => [p.t, p.retention]))}`);
    for (const t of jumps) assert.ok(recalls.some((e) => Math.abs(e.t - t) < 0.01), `the jump at ${t} is a recall`);

    const { page, problems } = await fresh();
    await signIn(page, alice);
    await card(page, id).getByTestId('action-open').click();
    await page.getByTestId('page-memory').waitFor();
    const chart = page.getByTestId('curve-chart');
    await chart.locator('canvas').waitFor({ timeout: TIMEOUT });
    assert.equal(await chart.getAttribute('data-recall-markers'), '2');
    assert.equal(await chart.getAttribute('data-points'), String(curve.points.length));
    const box = await chart.locator('canvas').boundingBox();
    assert.ok(box.width > 300 && box.height > 150, `the chart is drawn (${box.width}×${box.height})`);
    assert.match(await page.getByTestId('curve-projected').textContent(), /archived around|archive/);
    // The note under the chart says what the headline does not, instead of repeating it.
    const note = await page.getByTestId('curve-note').textContent();
    assert.doesNotMatch(note, /never recalled again/i);
    assert.match(note, /restarts its clock/);
    const kinds = await page.getByTestId('event').evaluateAll((els) => els.map((e) => e.dataset.kind));
    assert.equal(kinds.filter((k) => k === 'recalled').length, 2);
    assert.equal(kinds.filter((k) => k === 'strengthened').length, 2);
    assert.equal(kinds.filter((k) => k === 'created').length, 1);
    const recalled = page.locator('[data-testid="event"][data-kind="recalled"]').first();
    assert.match(await recalled.textContent(), /query_id/);
    assert.match(await page.locator('[data-testid="event"][data-kind="strengthened"]').first().textContent(), /1\.00 → 2\.00/);
    assert.equal((await page.getByTestId('detail-recalls').textContent()).trim(), '2');
    // Under the MemoryBank curve the details show importance (it slows the curve) but none
    // of FadeMem's own fields, and a long metadata key wraps only after a dot or underscore.
    assert.equal(await page.getByTestId('detail-importance').count(), 1);
    assert.equal(await page.getByTestId('detail-layer').count(), 0);
    assert.equal(await page.getByTestId('memory-details').getByText('Effective age (days)').count(), 0);
    const key = page.getByTestId('memory-details').locator('dt', { hasText: 'importance_source' });
    assert.equal(await key.locator('wbr').count(), 2);
    await shots(page, '06-memory-curve');
    await page.getByTestId('curve-view-recent').click();
    assert.equal(await page.getByTestId('curve-view-recent').getAttribute('aria-pressed'), 'true');
    await shots(page, '06b-memory-curve-around-now');
    assert.deepEqual(problems, []);
  });

  it('lists what the next sweep and maintenance would archive, and pins one', async () => {
    const { page, problems } = await fresh();
    await signIn(page, alice);
    await page.getByTestId('nav-next').click();
    const id = ids[TURNS[0].text];
    const item = page.locator(`[data-testid="next-sweep"] [data-testid="next-item"][data-id="${id}"]`);
    await item.waitFor({ timeout: TIMEOUT });
    await item.getByText('Miso').waitFor({ timeout: TIMEOUT });
    assert.match(await item.textContent(), /R = 0\.\d+ < θ = /);
    // t is given in the policy's unit, by name (the default curve counts in days).
    assert.match(await item.textContent(), /t = [\d.]+ days, S = /);
    assert.ok(await page.locator(`[data-testid="next-maintain"] [data-testid="next-item"][data-id="${id}"]`).count() === 1, 'maintenance would archive it too');
    await shots(page, '07-next');
    await item.getByTestId('next-pin').click();
    await page.locator(`[data-testid="next-sweep"] [data-testid="next-item"][data-id="${id}"][data-pinned="true"]`).waitFor({ timeout: TIMEOUT });
    assert.equal((await asAlice('GET', `/v1/users/alice/memories/${id}`)).pinned, true);
    await page.getByTestId('next-refresh').click();
    await page.getByTestId('sweep-summary').waitFor({ timeout: TIMEOUT });
    assert.equal(await page.locator(`[data-testid="next-sweep"] [data-testid="next-item"][data-id="${id}"]`).count(), 0, 'a pinned memory is not archived');
    assert.deepEqual(problems, []);
  });

  it('charts the store over time', async () => {
    const { page, problems } = await fresh();
    await signIn(page, alice);
    await page.getByTestId('nav-overview').click();
    const chart = page.getByTestId('overview-chart');
    await chart.locator('canvas').waitFor({ timeout: TIMEOUT });
    const overview = await asAlice('GET', '/v1/users/alice/overview');
    assert.equal(await chart.getAttribute('data-days'), String(overview.days.length));
    assert.equal((await page.getByTestId('current-active').textContent()).trim(), String(overview.current.active));
    assert.equal((await page.getByTestId('current-erased').textContent()).trim(), '1');
    assert.equal((await page.getByTestId('current-superseded').textContent()).trim(), '1');
    await shots(page, '08-overview');
    assert.deepEqual(problems, []);
  });

  it('chats: the reply streams in and cites the memory it used, as a chip with its date', async () => {
    const { page, problems } = await fresh();
    await signIn(page, alice);
    await page.getByTestId('nav-chat').click();
    await page.getByTestId('chat-input').fill('When is my sister coming?');
    await page.getByTestId('chat-send').click();
    const reply = page.getByTestId('chat-reply').last();
    const message = page.getByTestId('chat-message').last();
    // Mid-stream: some words are there, the reply is not finished.
    await page.waitForFunction(() => {
      const m = [...document.querySelectorAll('[data-testid="chat-message"]')].pop();
      return m && m.dataset.state === 'streaming' && m.querySelector('[data-testid="chat-reply"]').textContent.split(' ').length >= 3;
    }, null, { timeout: TIMEOUT });
    const partial = await reply.textContent();
    await shots(page, '09-chat-streaming');
    await message.and(page.locator('[data-state="done"]')).waitFor({ timeout: TIMEOUT });
    const full = await reply.textContent();
    assert.ok(full.length > partial.length && full.startsWith(partial.trim().split(' ').slice(0, 2).join(' ')), `the reply grew: ${JSON.stringify(partial)} → ${JSON.stringify(full)}`);
    assert.match(full, /your sister Lena is coming from Berlin next month \[M\d+\]/);
    const chips = message.getByTestId('cited-chip');
    assert.equal(await chips.count(), 1);
    const lena = ids[TURNS[2].text];
    assert.equal(await chips.first().getAttribute('href'), `#/memory/${lena}`);
    assert.match(await chips.first().textContent(), new RegExp(daysAgo(2).day));
    assert.ok(stub.requests.some((r) => r.stream === true), 'the server streamed from the model');
    await shots(page, '10-chat');
    await chips.first().click();
    await page.getByTestId('page-memory').waitFor();
    await page.getByTestId('memory-text').getByText('Lena').waitFor();
    assert.deepEqual(problems, []);
  });

  it('shows a model failure during a streamed reply as a message', async () => {
    const { page, problems } = await fresh();
    await signIn(page, alice);
    await page.getByTestId('nav-chat').click();
    await page.getByTestId('chat-input').fill('Please cause a model failure.');
    await page.getByTestId('chat-input').press('Enter');
    const alert = page.getByRole('alert');
    await alert.filter({ hasText: 'Chat failed' }).waitFor({ timeout: TIMEOUT });
    assert.match(await page.getByTestId('alert-message').textContent(), /LLM|model/i);
    assert.equal(await page.getByTestId('chat-message').last().getAttribute('data-state'), 'done');
    assert.equal(await page.getByTestId('chat-send').isEnabled(), true, 'one can try again');
    await shots(page, '10b-chat-model-failure');
    assert.deepEqual(problems, []);
  });

  it('shows day summaries and portraits with links to their turns', async () => {
    const { page, problems } = await fresh();
    await signIn(page, alice);
    await page.getByTestId('nav-summaries').click();
    await page.getByTestId('summarize').click();
    const day = page.locator(`[data-testid="day-summary"][data-day="${daysAgo(2).day}"]`);
    await day.waitFor({ timeout: 30_000 });
    assert.match(await day.getByTestId('day-summary-card').textContent(), /They talked about/);
    const links = day.getByTestId('day-summary-card').getByTestId('source-link');
    assert.ok(await links.count() >= 1);
    const hrefs = await links.evaluateAll((els) => els.map((e) => e.getAttribute('href')));
    assert.ok(hrefs.includes(`#/memory/${ids[TURNS[2].text]}`), `links to the Lena turn: ${hrefs}`);
    await day.getByText('Lena', { exact: false }).first().waitFor({ timeout: TIMEOUT });
    await page.getByTestId('global-summary').waitFor();
    await shots(page, '11-summaries');
    assert.deepEqual(problems, []);
  });

  it('shows an API error as a message: an unknown memory', async () => {
    const { page, problems } = await fresh(PHONE);
    await signIn(page, alice);
    await page.goto(`${server.base}/#/memory/01890000-0000-7000-8000-000000000000`);
    await page.getByRole('alert').filter({ hasText: 'not found' }).waitFor({ timeout: TIMEOUT });
    assert.equal(await page.getByTestId('alert-code').textContent(), 'not_found');
    assert.equal(await page.getByTestId('page-memory').count(), 1, 'the page stays, with the message');
    await shots(page, '12-error');
    assert.deepEqual(problems, []);
  });

  it('signs out', async () => {
    const { page, problems } = await fresh();
    await signIn(page, alice);
    await page.getByTestId('signout').click();
    await page.getByTestId('page-signin').waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('membank.key')), null);
    await page.reload();
    await page.getByTestId('page-signin').waitFor();
    assert.deepEqual(problems, []);
  });
});
