/** What a durable step of a handler run left in the store (`handler_steps`), by its position in the run. */
export interface StepRecord {
  eventId: string;
  handler: string;
  /** Its position in the handler's run, from 1: a step is found again by position, its name checked. */
  seq: number;
  name: string;
  kind: 'step' | 'sleep' | 'wait';
  /** `done`: its result is recorded (a sleep: it woke; a wait: its event, or null at its timeout); `failed`: its last try threw; `sleeping`: a sleep or a wait not over. */
  state: 'done' | 'failed' | 'sleeping';
  /** How many times its function ran (a sleep: 1). */
  attempts: number;
  /** Its result as recorded: JSON text (`encodeResult`), or a sealed one when `sensitive`; null until done. */
  result: string | null;
  /** The result is sealed with STEP_ENCRYPTION_KEY and is shown nowhere. */
  sensitive: boolean;
  /** The result's size in bytes (JSON, before sealing); null until done. */
  resultBytes: number | null;
  /** The last try's error, as one line (redacted like every handler error). */
  error: string | null;
  /** A sleep's wake time, a wait's timeout (epoch ms). */
  wakeAt: number | null;
  /** When its last try started and ended (epoch ms), and how long it took. */
  startedAt: number;
  finishedAt: number | null;
  durationMs: number | null;
}

/**
 * The position of a run's generation marker: `replay --fresh` and a backfill drop a handler's steps
 * and record a new generation here (its `result`), so the fresh run's idempotency keys are new.
 */
export const FRESH_SEQ = 0;

/** A run's generation marker (at `FRESH_SEQ`): a new random generation, recorded when its steps are dropped. */
export function freshMarker(eventId: string, handler: string, now: number): StepRecord {
  return {
    eventId, handler, seq: FRESH_SEQ, name: '(fresh run)', kind: 'step', state: 'done', attempts: 1, result: crypto.randomUUID(), sensitive: false,
    resultBytes: null, error: null, wakeAt: null, startedAt: now, finishedAt: null, durationMs: null,
  };
}

/** A run's recorded steps and its generation (the idempotency keys follow it). */
export interface RecordedRun {
  steps: StepRecord[];
  generation: string;
}

/** A sleeping step of a delivery whose run is parked: which handler, which step, until when. */
export interface ParkedRun {
  eventId: string;
  handler: string;
  step: string;
  wakeAt: number;
  /** A run parked at `ctx.waitForEvent`: the types it waits for and the pod (its timeout is `wakeAt`); absent at a sleep. */
  waitingFor?: { types: string[]; podId: string };
}

/** The store's side of durable steps (a role of `DeliveryStore`). */
export interface StepStore {
  /** The recorded steps of one handler's run of one delivery, by position. */
  loadSteps(eventId: string, handler: string): Promise<StepRecord[]>;
  /** The same, with the run's generation (`FRESH_SEQ`'s marker; '' before any fresh run): what a run reads. */
  loadRunSteps(eventId: string, handler: string): Promise<RecordedRun>;
  /**
   * Records a step (insert or replace at its position), only while `claimId` holds the delivery:
   * a run that lost its lease records nothing. Resolves whether it was recorded; durable when it
   * resolves, so what follows in the handler never runs before its step is on record.
   */
  saveStep(step: StepRecord, claimId: string): Promise<boolean>;
  /** The recorded steps of these deliveries (the admin API, the inspector), by handler and position. */
  stepsOf(eventIds: readonly string[]): Promise<StepRecord[]>;
  /** Drops a delivery's recorded steps (every handler's, or one's): `replay --fresh`. Resolves how many. */
  dropSteps(eventId: string, handler?: string): Promise<number>;
  /** The runs parked at a sleep among these deliveries (queued and not leased, with a sleeping step). */
  parkedRuns(eventIds: readonly string[]): Promise<ParkedRun[]>;
  /** For metrics: runs parked now (not a woken one running), and the earliest wake among them (epoch ms), or null. */
  parkStats(): Promise<{ parked: number; earliestWakeAt: number | null }>;
}
