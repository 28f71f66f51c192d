// A newcomer's first minutes in the web app, on an empty loopback server: the page says how
// to start (the curl and CLI lines to copy), a first note is added from the page, more
// notes are added on the memories page, and the user's time zone is read and set.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, cleanup, database, launchBrowser, openPage, shots, startServer, tempDir } from './harness.mjs';

const TIMEOUT = 15_000;

describe('membank web app (an empty server, first steps)', () => {
  let dir;
  let server;
  let browser;
  let context;

  before(async () => {
    dir = tempDir('membank-web-e2e-first');
    server = await startServer({ dir, db: database(dir), tenant: 'local' });
    browser = await launchBrowser();
  });

  after(async () => {
    await context?.close().catch(() => {});
    await browser?.close().catch(() => {});
    await server?.stop();
    cleanup(dir);
  });

  it('says how to start, adds a first note and more, and sets the time zone', async () => {
    const session = await openPage(browser, server.base);
    context = session.context;
    const { page, problems } = session;
    // A fresh browser asks for an icon: the page names one, and nothing it loads is a 404.
    const missing = [];
    page.on('response', (response) => { if (response.status() === 404) missing.push(response.url()); });
    await page.goto(`${server.base}/`);
    const hint = page.getByTestId('start-hint');
    await hint.waitFor({ timeout: TIMEOUT });
    const curl = await page.getByTestId('start-curl').textContent();
    assert.match(curl, new RegExp(`^curl -X POST ${server.base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/v1/users/alice/notes `));
    assert.match(await page.getByTestId('start-cli').textContent(), /^membank note --user alice --text /);
    await shots(page, '30-first-empty-server');

    // The first note, from the page: the user appears and is chosen.
    await page.getByTestId('first-note-user').fill('erin');
    await page.getByTestId('note-text').fill('Erin keeps bees on her roof.');
    await page.getByTestId('note-submit').click();
    await page.getByTestId('timeline').getByText('Erin keeps bees on her roof.').waitFor({ timeout: TIMEOUT });
    assert.equal(await page.getByTestId('user-select').inputValue(), 'erin');

    // The time zone: read, refused when unknown, set when known.
    await page.getByTestId('add-note').locator('summary').click();
    assert.equal(await page.getByTestId('tz-input').inputValue(), 'UTC');
    await page.getByTestId('tz-input').fill('Mars/Olympus');
    await page.getByTestId('tz-submit').click();
    await page.getByRole('alert').getByText(/time zone/i).first().waitFor({ timeout: TIMEOUT });
    await page.getByTestId('tz-input').fill('Asia/Shanghai');
    await page.getByTestId('tz-submit').click();
    await page.getByTestId('session-info').getByText(/days in Asia\/Shanghai/).waitFor({ timeout: TIMEOUT });
    const api = apiClient(server.base, null);
    assert.equal((await api('GET', '/v1/users/erin')).time_zone, 'Asia/Shanghai');

    // Another note with a day: that day's midnight in Shanghai.
    await page.getByTestId('note-text').fill('Erin moved to Lisbon.');
    await page.getByTestId('note-day').fill('2024-05-04');
    await page.getByTestId('note-submit').click();
    await page.getByTestId('timeline').getByText('Erin moved to Lisbon.').waitFor({ timeout: TIMEOUT });
    const listed = await api('GET', '/v1/users/erin/memories');
    const moved = listed.memories.find((m) => m.content === 'Erin moved to Lisbon.');
    assert.ok(moved, JSON.stringify(listed));
    assert.equal(moved.occurred_at, '2024-05-03T16:00:00.000Z');
    assert.equal(moved.day, '2024-05-04');
    // An empty note is not sent.
    await page.getByTestId('note-text').fill('   ');
    await page.getByTestId('note-submit').click();
    assert.equal((await api('GET', '/v1/users/erin/memories')).memories.length, 2);
    await shots(page, '31-first-notes-and-zone');
    // A confirmation does not follow to another page.
    await page.getByTestId('tz-submit').click();
    await page.getByTestId('status').getByText('erin now counts days in Asia/Shanghai.').waitFor({ timeout: TIMEOUT });
    await page.getByTestId('nav-overview').click();
    await page.getByTestId('page-overview').waitFor({ timeout: TIMEOUT });
    assert.equal(await page.getByTestId('status').textContent(), '');
    // Erin's log has events on one day (her today): the chart spans a week up to the end of the
    // last day with events, not a lone spike with its axis running into the future.
    const chart = page.getByTestId('overview-chart');
    await chart.locator('canvas').waitFor({ timeout: TIMEOUT });
    const [from, to] = [Number(await chart.getAttribute('data-x-from')), Number(await chart.getAttribute('data-x-to'))];
    // Days are Erin's: from 16:00 UTC on, today in Shanghai is tomorrow in UTC.
    const todayInShanghai = new Intl.DateTimeFormat('en-CA', { timeZone: 'Asia/Shanghai' }).format(new Date());
    const endOfToday = Date.parse(`${todayInShanghai}T00:00:00Z`) / 1000 + 86400;
    assert.ok(to <= endOfToday, `the axis ends ${new Date(to * 1000).toISOString()}, after today`);
    assert.ok(to - from >= 7 * 86400, `the axis spans ${(to - from) / 86400} days`);
    // No page error, CSP violation or console error (refused requests are shown in the page).
    assert.deepEqual(problems, []);
    assert.deepEqual(missing, []);
    const icon = await page.evaluate(async () => (await fetch('/favicon.ico')).headers.get('content-type'));
    assert.equal(icon, 'image/svg+xml');
  });
});
