import { expect } from 'vitest';
import { parseConfig } from '../../src/core/config.js';
import type { HandlerDefinition } from '../../src/core/events/define-handler.js';
import { silentLogger } from '../../src/core/observability/logger.js';
import { createNodeRuntime } from '../../src/node/node-runtime.js';
import { stepsAfter, stepsBefore } from '../fixtures/step-ops-handlers.js';
import { signDelivery, TEST_SECRET, toRequest } from './sign.js';

/** A STEP_ENCRYPTION_KEY for tests (64 hex digits). */
export const TEST_STEP_KEY = '5e'.repeat(32);

/**
 * The Node runtime on this SQLite file with these handlers, its dispatcher off (the test runs it)
 * and its clock where the test sets it; one attempt, so a failed step makes a dead letter.
 */
export function openStepsRuntime(path: string, handlers: readonly HandlerDefinition[], now: number) {
  let at = now;
  const config = parseConfig({
    DATABASE_PATH: path,
    SVC_WEBHOOK_SECRET: TEST_SECRET,
    DISPATCHER: 'off',
    DISPATCH_MAX_ATTEMPTS: '1',
    STEP_ENCRYPTION_KEY: TEST_STEP_KEY,
  });
  const runtime = createNodeRuntime({ config, logger: silentLogger, clock: () => at, handlers });
  return {
    store: runtime.store,
    setNow: (ms: number) => void (at = ms),
    /** Receives a signed delivery of this type now; resolves its event id. */
    async deliver(eventType: string): Promise<string> {
      const d = signDelivery({ eventType, t: Math.floor(at / 1000) });
      expect((await runtime.app.request(toRequest(d))).status).toBe(200);
      return d.eventId;
    },
    runUntilIdle: () => runtime.dispatcher.runUntilIdle(),
    close: () => runtime.close(),
  };
}

/**
 * `count` pod.backup.failed deliveries received ten minutes ago (their sleep is over by now):
 * `diagnose` ran its first step and parked, then a deploy renamed that step, and the woken run
 * stopped dead with `step mismatch`.
 */
export async function seedStepMismatch(path: string, count = 1): Promise<string[]> {
  const receivedAt = Date.now() - 10 * 60_000;
  const before = openStepsRuntime(path, stepsBefore, receivedAt);
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push(await before.deliver('pod.backup.failed'));
  await before.runUntilIdle();
  for (const id of ids) expect(await before.store.get(id)).toMatchObject({ status: 'queued', attempts: 0 });
  await before.close();
  const after = openStepsRuntime(path, stepsAfter, receivedAt + 2 * 60_000);
  await after.runUntilIdle();
  for (const id of ids) expect((await after.store.get(id))?.lastError).toContain('step mismatch: recorded "queue diagnose" at #1, now "queue logs"');
  await after.close();
  return ids;
}

/** The message a woken diagnose run stops with after the rename. */
export const MISMATCH = 'diagnose: StepError: step mismatch: recorded "queue diagnose" at #1, now "queue logs"';
