// The inspector in a real browser: Chromium (the @sparticuz/chromium package's, or CHROMIUM_PATH's)
// driven by playwright-core, against a real Node server on 127.0.0.1. Screenshots go to
// test/.artifacts/ (gitignored) for people to look at.
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium as playwright, type BrowserContext } from 'playwright-core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RunningServer } from '../../../src/node/serve.js';
import { startBackfill } from '../../../src/core/backfill/start-backfill.js';
import { failHandler, handlers, recordedCalls, resetRecording } from '../../fixtures/recording-handlers.js';
import { historyDeliveries } from '../../helpers/seed-history.js';
import { captureLogger } from '../../helpers/capture-logger.js';
import { findChromium } from '../../helpers/chromium.js';
import { signDelivery, TEST_SECRET } from '../../helpers/sign.js';
import { runCli } from '../../helpers/spawn-podhook.js';
import { useTempDir } from '../../helpers/temp-dir.js';
import { startAdminServer } from './admin-server.js';
import { generatePayloadModule, inferShapes } from '../../../src/core/shapes/index.js';
import { fittingPayload, learnedSamples } from '../../fixtures/shapes/learned-samples.js';

const ARTIFACTS = join(import.meta.dirname, '..', '..', '.artifacts');
const TOKEN = 'inspector-test-token-0123456789abcdef';
// As root in a container: no sandbox; nothing that phones home.
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const tempDir = useTempDir();
let server: RunningServer | undefined;
let browser: BrowserContext | undefined;
let profile: string | undefined;
afterEach(async () => {
  await browser?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  await server?.close(100);
});

const nowS = () => Math.floor(Date.now() / 1000);

describe('inspector in Chromium', () => {
  it('logs in, opens a delivery, redelivers a dead letter and sees it processed, draws the chart, shows and cancels a backfill', async () => {
    // No browser fails the run with how to get one: a skip would hide the missing install step.
    const chromium = await findChromium();
    resetRecording();
    failHandler('recordBackups');
    const log = captureLogger();
    // A learned shape for pod.status.changed only (the types the rest of this test sends stay any JSON object).
    const shapes = inferShapes(learnedSamples().map((sample) => ({ ...sample, eventType: 'pod.status.changed' })));
    server = await startAdminServer(tempDir(), { token: TOKEN, logger: log.logger, payloads: { shapes } });
    const deliver = async (eventType: string, body?: object) => {
      const d = signDelivery({ t: nowS(), eventType, body });
      expect((await fetch(`${server!.url}/webhooks`, { method: 'POST', headers: d.headers, body: d.body })).status).toBe(200);
      return d;
    };
    // A delivery sent the way a developer triggers one: `podhook trigger`, signed, over HTTP.
    const created = { eventId: randomUUID() };
    // Its default payload: podhook's tests do not read the team's handlers/_payloads.ts.
    const nothingLearned = join(tempDir(), '_payloads.ts');
    writeFileSync(nothingLearned, generatePayloadModule(inferShapes([])));
    const triggered = await runCli(['trigger', 'pod.created', '--to', `${server.url}/webhooks`, '--secret', TEST_SECRET, '--id', created.eventId, '--payloads', nothingLearned]);
    expect(triggered.code, triggered.stderr).toBe(0);
    const dead = await deliver('pod.backup.failed', { pod: { id: 'pod_7' }, error: 'disk full' });
    const drifted = await deliver('pod.status.changed', { ...fittingPayload(1), pod: { ...fittingPayload(1).pod, region: 'eu-west' }, previous_status: 'provisioning' });
    const store = server.runtime.store;
    await vi.waitFor(async () => expect(await (async () => (await store.get(dead.eventId))?.status === 'dead' && (await store.get(created.eventId))?.status === 'processed')(), 'settled').toBe(true), { timeout: 5000 });
    await vi.waitFor(async () => expect((await store.get(drifted.eventId))?.drift, 'drift recorded').toHaveLength(2), { timeout: 5000 });

    profile = mkdtempSync(join(tmpdir(), 'podhook-chromium-'));
    browser = await playwright.launchPersistentContext(profile, { executablePath: chromium.executablePath, env: chromium.env, args: ARGS, headless: true, viewport: { width: 1100, height: 900 } });
    const page = browser.pages()[0] ?? (await browser.newPage());
    const cspErrors: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) cspErrors.push(m.text());
    });

    await page.goto(`${server.url}/_podhook/`);
    expect(new URL(page.url()).pathname).toBe('/_podhook/login');
    await page.fill('input[name=token]', 'wrong-token');
    await page.click('button[type=submit]');
    await expect.poll(() => page.textContent('body')).toContain('That is not the admin token');
    await page.fill('input[name=token]', TOKEN);
    await page.click('button[type=submit]');
    await page.waitForURL(`${server.url}/_podhook/`);

    // The chart has a bar for this hour, and the banner counts the dead letter.
    expect(await page.locator('figure.chart svg rect.bar').count()).toBeGreaterThan(0);
    expect(await page.textContent('.banner.dead')).toContain('1 dead letter');
    // The drifted delivery wears a drift badge in the list; only its row does.
    expect(await page.locator('ul.deliveries .badge.drift').count()).toBe(1);
    expect(await page.locator(`a[data-event-id="${drifted.eventId}"] .badge.drift`).textContent()).toBe('drift');
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'inspector-list.png'), fullPage: true });

    // The drift filter finds it; its page says where the payload changed and the way back.
    await page.selectOption('select[name=drift]', 'true');
    await page.click('form.filters button[type=submit]');
    expect(await page.$$eval('ul.deliveries a', (as) => as.map((a) => a.getAttribute('data-event-id')))).toEqual([drifted.eventId]);
    await page.click(`a[data-event-id="${drifted.eventId}"]`);
    expect(await page.textContent('h1 .badge.drift')).toBe('drift');
    const driftRows = await page.$$eval('table.drift tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent!.trim()).join(' | ')));
    expect(driftRows).toEqual(['$.pod.region | new_field | new field: string', '$.previous_status | new_field | new field: string']);
    expect(await page.textContent('section.drift')).toContain('podhook replay --status dead --type pod.status.changed');
    await page.screenshot({ path: join(ARTIFACTS, 'inspector-drift.png'), fullPage: true });
    await page.goto(`${server.url}/_podhook/`);

    // The delivery the sender sent: its page shows the ledger, headers and pretty body.
    await page.click(`a[data-event-id="${created.eventId}"]`);
    await page.waitForURL(`**/_podhook/deliveries/${created.eventId}`);
    const text = await page.textContent('main');
    expect(text).toContain(created.eventId);
    expect(text).toContain('recordAll');
    expect(text).toContain('First try');
    expect(await page.textContent('pre.body')).toMatch(/"pod": \{\n {4}"id": /);

    // Find the dead letter through the filters, open it, fix the handler, redeliver.
    await page.goto(`${server.url}/_podhook/`);
    await page.selectOption('select[name=status]', 'dead');
    await page.click('form.filters button[type=submit]');
    await page.click(`a[data-event-id="${dead.eventId}"]`);
    expect(await page.textContent('table.runs')).toContain('recordBackups is broken');
    await page.screenshot({ path: join(ARTIFACTS, 'inspector-delivery.png'), fullPage: true });
    resetRecording();
    await page.click('button:has-text("Redeliver")');
    await expect.poll(() => page.textContent('.notice')).toContain('Handed back to the dispatcher');
    await vi.waitFor(async () => expect(await (async () => (await store.get(dead.eventId))?.status === 'processed')(), 'redelivered one processed').toBe(true), { timeout: 5000 });
    await page.reload();
    expect(await page.textContent('h1 .badge')).toBe('processed');
    // Every run stays on view, oldest first: the failed attempt above the redelivery's.
    const rows = await page.$$eval('table.runs tbody tr', (trs) =>
      trs.map((tr) => ['handler', 'attempt', 'outcome'].map((label) => tr.querySelector(`[data-label="${label}"]`)!.textContent!.trim()).join(' ')),
    );
    expect(rows).toEqual(['recordAll 1 succeeded', 'recordBackups 1 failed', 'recordAll 2 succeeded', 'recordBackups 2 succeeded']);
    expect(await page.textContent('table.runs')).toContain('recordBackups is broken');
    await page.screenshot({ path: join(ARTIFACTS, 'inspector-delivery-runs.png'), fullPage: true });

    // Bulk: every dead letter matching the filters, after a count and a confirm step.
    failHandler('recordBackups');
    const more = [await deliver('pod.backup.failed'), await deliver('pod.backup.failed')];
    for (const d of more) await vi.waitFor(async () => expect(await (async () => (await store.get(d.eventId))?.status === 'dead')(), 'dead').toBe(true), { timeout: 5000 });
    resetRecording();
    await page.goto(`${server.url}/_podhook/?status=dead`);
    await page.click('a:has-text("Redeliver these dead letters")');
    expect(await page.textContent('strong.count')).toBe('2');
    await page.click('button:has-text("Redeliver 2")');
    await expect.poll(() => page.textContent('.notice')).toContain('2 handed back');
    for (const d of more) await vi.waitFor(async () => expect(await (async () => (await store.get(d.eventId))?.status === 'processed')(), 'bulk processed').toBe(true), { timeout: 5000 });

    // A backfill of a handler added late, paced at 20/s: its page shows the bar, the rate and the end; Cancel stops it.
    await store.importDeliveries(historyDeliveries({ count: 400, pods: 20, from: Date.now() - 5 * 86_400_000, eventType: 'pod.backup.completed' }));
    await vi.waitFor(async () => expect((await store.handlerRegistrations()).length).toBe(2));
    const { backfill } = await startBackfill(store, handlers, { handler: 'recordBackups', rate: 20 }, Date.now());
    server.runtime.backfills.wake();
    await vi.waitFor(async () => expect((await store.getBackfill(backfill.id))!.requeued).toBeGreaterThanOrEqual(40), { timeout: 10_000 });
    await page.click('header nav a:has-text("Backfills")');
    await page.waitForURL(`${server.url}/_podhook/backfills`);
    const card = page.locator(`section.backfill[data-backfill-id="${backfill.id}"]`);
    expect(await card.locator('h2 .badge').textContent()).toBe('running');
    const bar = card.locator('progress');
    expect(Number(await bar.getAttribute('max'))).toBe(400);
    const value = Number(await bar.getAttribute('value'));
    expect(value).toBeGreaterThanOrEqual(40);
    expect(value).toBeLessThan(400);
    expect(await bar.getAttribute('aria-label')).toBe(`recordBackups: ${value} of 400 deliveries`);
    expect(await card.textContent()).toMatch(/\d+\.\d deliveries\/s over the last minute/);
    expect(Date.parse((await card.locator('dd.eta').textContent())!)).toBeGreaterThan(Date.now());
    await page.screenshot({ path: join(ARTIFACTS, 'inspector-backfills.png'), fullPage: true });
    await card.locator('button:has-text("Cancel")').click();
    await expect.poll(() => page.textContent('.notice')).toContain('Cancelled');
    expect(await card.locator('h2 .badge').textContent()).toBe('cancelled');
    expect(await card.locator('button:has-text("Cancel")').count()).toBe(0);
    const stopped = (await store.getBackfill(backfill.id))!;
    expect(stopped.state).toBe('cancelled');
    expect(recordedCalls().filter((c) => c.handler === 'recordAll' && c.type === 'pod.backup.completed')).toEqual([]);
    await page.screenshot({ path: join(ARTIFACTS, 'inspector-backfills-cancelled.png'), fullPage: true });

    // A phone's width: nothing wider than the screen.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${server.url}/_podhook/deliveries/${dead.eventId}`);
    await page.screenshot({ path: join(ARTIFACTS, 'inspector-phone-delivery.png'), fullPage: true });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.goto(`${server.url}/_podhook/`);
    await page.screenshot({ path: join(ARTIFACTS, 'inspector-phone-list.png'), fullPage: true });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.goto(`${server.url}/_podhook/backfills`);
    await page.screenshot({ path: join(ARTIFACTS, 'inspector-phone-backfills.png'), fullPage: true });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    expect(cspErrors).toEqual([]);
    expect(log.text()).not.toContain(TOKEN);
  }, 60_000);
});
