import type { HandlerContext } from '../events/define-handler.js';
import type { Logger } from '../observability/logger.js';
import type { OrderContext } from '../order/order-types.js';
import type { HandlerSteps, HandlerStepApi } from '../steps/handler-steps.js';
import type { GateContext } from './handler-runner.js';

/**
 * The context one handler call gets. Its durable steps are made when the handler first asks for
 * one (a handler without steps reads and writes nothing); its `step`, `sleep` and `sleepUntil`
 * are the call's own functions, so a handler may destructure them as it does `log` and `signal`.
 */
export class RunContext implements HandlerContext {
  order?: OrderContext;
  private made: HandlerSteps | undefined;
  private ended = false;
  readonly step: HandlerStepApi['step'];
  readonly sleep: HandlerStepApi['sleep'];
  readonly sleepUntil: HandlerStepApi['sleepUntil'];

  constructor(
    readonly log: Logger,
    private readonly signalOf: () => AbortSignal,
    makeSteps: () => HandlerSteps,
    context?: GateContext,
  ) {
    if (context?.order) this.order = context.order;
    const steps = () => {
      if (this.made) return this.made;
      this.made = makeSteps();
      // Asked for first after the call ended: refused as any step after the return is.
      this.made.closed = this.ended;
      return this.made;
    };
    this.step = (name, fn, options) => steps().step(name, fn, options);
    this.sleep = (name, duration) => steps().sleep(name, duration);
    this.sleepUntil = (name, at) => steps().sleepUntil(name, at);
  }

  /** The handler's call ended: a step asked for from now on is refused, whether or not it used steps before. */
  end(): void {
    this.ended = true;
    if (this.made) this.made.closed = true;
  }

  get signal(): AbortSignal {
    return this.signalOf();
  }

  /** The call's steps, if it used any. */
  get steps(): HandlerSteps | undefined {
    return this.made;
  }
}
