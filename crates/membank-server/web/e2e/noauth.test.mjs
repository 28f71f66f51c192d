// The web app on a loopback server without API keys and without an LLM: no sign-in, the
// memory browser works, and the chat page says how to configure a model.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, cleanup, database, daysAgo, launchBrowser, openPage, shots, startServer, tempDir } from './harness.mjs';

const TIMEOUT = 15_000;

describe('membank web app (loopback, no keys, no LLM)', () => {
  let dir;
  let server;
  let browser;
  let context;

  before(async () => {
    dir = tempDir('membank-web-e2e-noauth');
    server = await startServer({ dir, db: database(dir), tenant: 'local' });
    const api = apiClient(server.base, null);
    await api('POST', '/v1/users/carol/turns', { user_text: 'I grow tomatoes on my balcony.', assistant_text: 'Fresh tomatoes are the best.', occurred_at: daysAgo(1).at, clock_from: 'event' });
    await api('POST', '/v1/users/dave/notes', { text: 'Dave is allergic to peanuts.', source: 'user' });
    browser = await launchBrowser();
  });

  after(async () => {
    await context?.close().catch(() => {});
    await browser?.close().catch(() => {});
    await server?.stop();
    cleanup(dir);
  });

  it('opens without a key, lists the users, and explains how to configure an LLM on the chat page', async () => {
    const session = await openPage(browser, server.base);
    context = session.context;
    const { page, problems } = session;
    await page.goto(`${server.base}/`);
    await page.getByTestId('page-memories').waitFor({ timeout: TIMEOUT });
    assert.equal(await page.getByTestId('signout').count(), 0, 'nothing to sign out of');
    assert.match(await page.getByTestId('session-info').textContent(), /local, no key/);
    const options = await page.getByTestId('user-select').locator('option').allTextContents();
    assert.deepEqual(options.slice(0, 2), ['carol', 'dave']);
    await page.getByTestId('timeline').getByText('I grow tomatoes on my balcony.').waitFor({ timeout: TIMEOUT });
    // A POST from the page carries its Origin, which the loopback guard accepts as its own.
    await page.getByTestId('search-input').fill('balcony tomatoes');
    await page.getByTestId('search-submit').click();
    await page.getByTestId('search-hit').first().getByText('I grow tomatoes on my balcony.').waitFor({ timeout: TIMEOUT });
    await page.getByTestId('user-select').selectOption('dave');
    await page.getByTestId('timeline').getByText('Dave is allergic to peanuts.').waitFor({ timeout: TIMEOUT });
    await page.getByTestId('nav-chat').click();
    const missing = page.getByTestId('chat-llm-missing');
    await missing.waitFor({ timeout: TIMEOUT });
    assert.match(await page.getByTestId('llm-hint').textContent(), /MEMBANK_LLM_BASE_URL|llm/i);
    assert.equal(await page.getByTestId('chat-form').count(), 0);
    await shots(page, '20-noauth-chat-without-llm');
    await page.getByTestId('nav-memories').click();
    await page.getByTestId('timeline').getByText('Dave is allergic to peanuts.').waitFor({ timeout: TIMEOUT });
    assert.deepEqual(problems, []);
  });
});
