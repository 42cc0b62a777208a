import type { Dispatcher } from '../dispatch/dispatcher.js';
import type { Logger } from '../observability/logger.js';
import type { BackfillStepper } from './backfill-stepper.js';

export interface BackfillScheduler {
  /** Steps on timers until `stop`. */
  start(): void;
  /** Looks for a backfill at once (one was just started here). */
  wake(): void;
  /**
   * Stops stepping and gives the lease back. Waits for a step in progress at most `graceMs`
   * (default: as long as it takes): a step stuck on an unreachable store does not hold up a
   * shutdown, and its lease then runs out by itself.
   */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Runs a backfill stepper on timers (the Node server): each step when the one before says, after
 * the dispatcher has leased what a step handed over; a failing step is logged once and tried
 * again every second.
 */
export function scheduleBackfills(stepper: BackfillStepper, { dispatcher, logger }: { dispatcher: Pick<Dispatcher, 'drained'>; logger: Logger }): BackfillScheduler {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = true;
  let stepping: Promise<void> | null = null;
  let failing = 0;

  async function next(): Promise<number> {
    try {
      const r = await stepper.step();
      failing = 0;
      // Lets the dispatcher lease what was handed over before the load is read again.
      if (r.kind === 'requeued') await dispatcher.drained();
      return r.nextMs;
    } catch (error) {
      if (failing++ === 0) logger.error({ err: (error as Error).message }, 'backfill step failed; trying again');
      return 1_000;
    }
  }

  function arm(ms: number) {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      if (stopped) return;
      stepping = next().then((ms) => {
        stepping = null;
        if (!stopped) arm(ms);
      });
    }, ms);
    (timer as { unref?: () => void }).unref?.();
  }

  return {
    start() {
      if (!stopped) return;
      stopped = false;
      arm(0);
    },
    wake() {
      if (!stopped && !stepping && !stepper.holding) arm(0);
    },
    async stop(graceMs = Infinity) {
      stopped = true;
      clearTimeout(timer);
      if (stepping) {
        let wait: ReturnType<typeof setTimeout> | undefined;
        const outOfTime = new Promise<void>((r) => {
          if (Number.isFinite(graceMs)) wait = setTimeout(r, graceMs);
        });
        await Promise.race([stepping, outOfTime]);
        clearTimeout(wait);
      }
      await stepper.release();
    },
  };
}
