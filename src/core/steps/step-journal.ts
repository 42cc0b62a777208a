import type { RecordedRun, StepRecord, StepStore } from './step-record.js';
import type { WaitAnswer, WaitAsk } from '../waits/waited-event.js';

/** Where one handler run's steps are read and recorded. */
export interface StepJournal {
  /** The steps recorded by earlier runs, by position, and the run's generation (read once per run, when its first step asks). */
  load(): Promise<RecordedRun>;
  /** Records a step; rejects when it could not be (the run lost its delivery's lease): the run must stop. */
  save(step: StepRecord): Promise<void>;
  /** A wait for a later event (`ctx.waitForEvent`): recorded under the run's claim, its match looked for. Absent where no receiver keeps waits. */
  wait?(ask: WaitAsk): Promise<WaitAnswer>;
}

/** The journal of one run: which delivery, which handler, under which claim. */
export type StepJournals = (run: { eventId: string; handler: string; claimId: string }) => StepJournal;

/**
 * Journals on the store, each write fenced by the run's claim, a failed step's error redacted
 * where its row is written (wherever the handler ran: a handler thread knows no secret).
 */
export function storeJournals(
  store: Pick<StepStore, 'loadRunSteps' | 'saveStep'>,
  redact: (text: string) => string = (t) => t,
  waits?: { check(ask: WaitAsk, claimId: string): Promise<WaitAnswer> },
): StepJournals {
  return ({ eventId, handler, claimId }) => ({
    ...(waits && { wait: (ask: WaitAsk) => waits.check(ask, claimId) }),
    load: () => store.loadRunSteps(eventId, handler),
    async save(step) {
      const row = step.error === null ? step : { ...step, error: redact(step.error) };
      if (!(await store.saveStep(row, claimId))) throw new Error(`lease lost: step "${step.name}" was not recorded, another claim holds the delivery`);
    },
  });
}

/** Journals in memory (the handler test kit): every run of a handler for an event sees the steps the earlier ones recorded. */
export function memoryJournals(records: StepRecord[] = []): StepJournals & { records: StepRecord[] } {
  const journals: StepJournals = ({ eventId, handler }) => ({
    load: async () => ({ steps: records.filter((r) => r.eventId === eventId && r.handler === handler).sort((a, b) => a.seq - b.seq).map((r) => ({ ...r })), generation: '' }),
    async save(step) {
      const at = records.findIndex((r) => r.eventId === step.eventId && r.handler === step.handler && r.seq === step.seq);
      if (at >= 0) records[at] = { ...step };
      else records.push({ ...step });
    },
  });
  return Object.assign(journals, { records });
}
