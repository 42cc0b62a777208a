// `podhook replay` on durable steps, in a spawned podhook process with a fixture registry: a run
// whose step was renamed under it fails again on a plain replay and completes on a fresh one; a
// plain replay of a dead letter resumes after the steps done.
import { describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { STEPS_AFTER_REGISTRY } from '../fixtures/registry-paths.js';
import { stepsBefore } from '../fixtures/step-ops-handlers.js';
import { runCli } from '../helpers/spawn-podhook.js';
import { MISMATCH, openStepsRuntime, seedStepMismatch, TEST_STEP_KEY } from '../helpers/steps-runtime.js';
import { dbIn, useTempDir } from '../helpers/temp-dir.js';

const tempDir = useTempDir();

async function read(path: string, id: string, handler: string) {
  const { store, close } = openSqliteStore(path);
  try {
    const d = (await store.get(id))!;
    const steps = (await store.loadSteps(id, handler)).map((s) => ({ name: s.name, state: s.state, attempts: s.attempts, result: s.result && JSON.parse(s.result).v }));
    return { status: d.status, attempts: d.attempts, lastError: d.lastError, steps };
  } finally {
    close();
  }
}

describe('podhook replay --fresh', () => {
  it('a run whose step was renamed under it: a plain replay fails again the same way, a fresh one runs it from the start', async () => {
    const path = dbIn(tempDir());
    const [id] = (await seedStepMismatch(path)) as [string];
    const env = { DATABASE_PATH: path, STEP_ENCRYPTION_KEY: TEST_STEP_KEY };
    const dead = await read(path, id, 'diagnose');
    expect(dead).toMatchObject({ status: 'dead', attempts: 1 });
    expect(dead.lastError).toContain(MISMATCH);

    const plain = await runCli(['replay', id, '--handlers', STEPS_AFTER_REGISTRY], env);
    expect(plain.code, plain.stderr).toBe(1);
    expect(plain.stdout).toContain(`${id}  pod.backup.failed     dead       FAILED → dead: ${MISMATCH}`);
    const again = await read(path, id, 'diagnose');
    expect(again).toMatchObject({ status: 'dead', attempts: 2 });
    // Nothing of the old run was dropped or mixed with the new code.
    expect(again.steps.map((s) => [s.name, s.state])).toEqual([['queue diagnose', 'done'], ['wait for output', 'sleeping']]);

    const dry = await runCli(['replay', '--fresh', '--dry-run', id, '--handlers', STEPS_AFTER_REGISTRY], env);
    expect(dry.stdout).toContain('would run from the start diagnose');
    expect((await read(path, id, 'diagnose')).steps).toEqual(again.steps);

    const fresh = await runCli(['replay', '--fresh', id, '--handlers', STEPS_AFTER_REGISTRY], env);
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(fresh.stdout).toContain(`${id}  pod.backup.failed     dead       succeeded (diagnose) → processed`);
    const done = await read(path, id, 'diagnose');
    expect(done).toMatchObject({ status: 'processed', lastError: null });
    // The new code's steps from the first: its sleep (received ten minutes ago) already over.
    expect(done.steps.map((s) => [s.name, s.state, s.attempts])).toEqual([['queue logs', 'done', 1], ['wait for output', 'done', 1], ['post', 'done', 1]]);
    expect(done.steps[0]!.result.pid).not.toBe(process.pid);
  });

  it('a plain replay of a dead letter resumes after the steps done: they are given back, not run again', async () => {
    const path = dbIn(tempDir());
    const seed = openStepsRuntime(path, stepsBefore, Date.now());
    const id = await seed.deliver('pod.backup.completed');
    await seed.runUntilIdle();
    await seed.close();
    const dead = await read(path, id, 'flaky');
    expect(dead).toMatchObject({ status: 'dead', lastError: 'flaky: StepError: step "two" (#2, attempt 1) failed: Error: still broken' });
    expect(dead.steps).toEqual([{ name: 'one', state: 'done', attempts: 1, result: { pid: process.pid } }, { name: 'two', state: 'failed', attempts: 1, result: null }]);

    const env = { DATABASE_PATH: path, STEP_ENCRYPTION_KEY: TEST_STEP_KEY, FLAKY_FIXED: '1' };
    const plain = await runCli(['replay', id, '--handlers', STEPS_AFTER_REGISTRY], env);
    expect(plain.code, plain.stderr).toBe(0);
    const done = await read(path, id, 'flaky');
    expect(done.status).toBe('processed');
    // Step one is the record this process made; step two ran in the replay's process, its second try.
    expect(done.steps[0]).toEqual(dead.steps[0]);
    expect(done.steps[1]).toMatchObject({ name: 'two', state: 'done', attempts: 2 });
    expect(done.steps[1]!.result.pid).not.toBe(process.pid);
  });
});
