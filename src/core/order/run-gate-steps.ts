import type { Delivery } from '../delivery.js';
import type { DispatchObserver } from '../dispatch/dispatch-observer.js';
import type { HandlerResult, HandlerRunner } from '../dispatch/run-handler.js';
import type { HandlerDefinition } from '../events/define-handler.js';
import type { Logger } from '../observability/logger.js';
import type { GateStep } from './order-gate.js';

export interface RunGateStepsOptions {
  runner: Pick<HandlerRunner, 'run'>;
  logger: Logger;
  observer?: Pick<DispatchObserver, 'orderStale' | 'handlerFinished'>;
}

/**
 * The results of an attempt's gate steps: the runs (ordered ones with their `order` context), a
 * stale one skipped as a `skipped` result, a key that could not be computed as a failure; a wait
 * has no result. The dispatcher and `podhook replay` run them alike.
 */
export function runGateSteps(
  steps: readonly GateStep[],
  delivery: Delivery,
  /** The payload a handler gets (the generated schema's parse, or the body as parsed). */
  payloadFor: (handler: HandlerDefinition) => unknown,
  attemptOf: (handler: HandlerDefinition) => number,
  { runner, logger, observer = {} }: RunGateStepsOptions,
): Promise<HandlerResult[]> {
  return Promise.all(
    steps.flatMap((step): Promise<HandlerResult>[] => {
      const { handler } = step;
      const attempt = attemptOf(handler);
      if (step.kind === 'wait') return [];
      if (step.kind === 'run') {
        if (step.order?.stale) observer.orderStale?.(handler.name, 'run');
        return [runner.run(handler, delivery, payloadFor(handler), attempt, step.order)];
      }
      const skipped = step.kind === 'skip';
      if (skipped) {
        observer.orderStale?.(handler.name, 'skip');
        observer.handlerFinished?.(handler.name, delivery.eventType, 'skipped', 0);
        logger.info({ event_id: delivery.eventId, event_type: delivery.eventType, handler: handler.name, newer_event_id: step.newer }, 'handler skipped: stale');
      }
      const error = skipped ? `stale: skipped, newer event ${step.newer} already ran` : step.error;
      return [Promise.resolve({ handler: handler.name, attempt, ok: skipped, permanent: false, interrupted: false, error, durationMs: 0, outcome: skipped ? 'skipped' : 'failed' })];
    }),
  );
}
