import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StepNote } from '../fixtures/step-handlers.js';
import { STEP_REGISTRY } from '../fixtures/registry-paths.js';
import { signDelivery, type SignedDelivery } from './sign.js';
import { spawnServer, type ServerProcess } from './spawn-podhook.js';

/** The lines the step-handlers fixture appended to `file` (every process's), oldest first. */
export function readStepNotes(file: string): StepNote[] {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as StepNote);
  } catch {
    return [];
  }
}

/** Lets the step-handlers fixture's waiting step two go on. */
export const openStepGate = (file: string) => writeFileSync(`${file}.go`, '');

/** The record file of the step-handlers fixture in `dir`. */
export const stepRecordFile = (dir: string) => join(dir, 'steps.jsonl');

let sent = 0;
/** A signed delivery for the step-handlers fixture (each body its own: the same content twice would be a replay). */
export function stepDelivery(eventType: string, body: Record<string, unknown> = {}): SignedDelivery {
  return signDelivery({ t: Math.floor(Date.now() / 1000), eventType, body: { ...body, n: ++sent } });
}

/** `podhook serve` with the step-handlers fixture, one handler thread unless `env` says otherwise. */
export function spawnStepServer(env: Record<string, string>): Promise<ServerProcess> {
  return spawnServer({ HANDLER_THREADS: '1', ...env }, { handlers: STEP_REGISTRY });
}
