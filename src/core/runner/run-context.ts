import type { HandlerContext } from '../events/define-handler.js';
import type { Logger } from '../observability/logger.js';
import type { OrderContext } from '../order/order-types.js';
import type { HandlerSteps, HandlerStepApi } from '../steps/handler-steps.js';
import { handlerPods } from '../pods/handler-pods.js';
import type { PodsClient } from '../pods/pods-client.js';
import type { GateContext } from './handler-runner.js';
import { StepError } from '../steps/step-errors.js';

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
  readonly waitForEvent: HandlerStepApi['waitForEvent'];
  private podsOf: PodsClient | undefined;
  /** Calls to the service made outside any step so far. */
  private outsideCalls = 0;

  constructor(
    readonly log: Logger,
    private readonly signalOf: () => AbortSignal,
    makeSteps: () => HandlerSteps,
    context?: GateContext,
    /**
     * The deployment's pod client, the handler's time left (the longest a call may wait for its
     * bucket), and the run (`<event id>.<handler>.<attempt>`) a call outside any step takes its
     * request id from.
     */
    private readonly podsAccess?: { client: () => Promise<PodsClient>; timeLeftMs: () => number; run: string },
  ) {
    if (context?.order) this.order = context.order;
    const steps = () => {
      if (!this.made) {
        this.made = makeSteps();
        // Asked for first after the call ended: refused like any step after it.
        this.made.closed = this.ended;
      }
      return this.made;
    };
    this.step = (name, fn, options) => steps().step(name, fn, options);
    this.sleep = (name, duration) => steps().sleep(name, duration);
    this.sleepUntil = (name, at) => steps().sleepUntil(name, at);
    this.waitForEvent = (name, options) => steps().waitForEvent(name, options);
  }

  /** The handler's call ended: a step asked for from now on is refused, whether or not it used steps before. */
  end(): void {
    this.ended = true;
    if (this.made) this.made.closed = true;
  }

  get signal(): AbortSignal {
    return this.signalOf();
  }

  /** Made when first read, as most handlers never call the service. A call made once the run ended is refused, as a late step is. */
  get pods(): PodsClient {
    const client = this.podsAccess?.client ?? NO_PODS;
    return (this.podsOf ??= handlerPods(() => (this.ended ? Promise.reject(afterReturn()) : client()), {
      // Inside a step: the step's key; outside any: the run's, then the call's place in the run.
      requestId: () => this.made?.nextRequestId() ?? (this.podsAccess ? `${this.podsAccess.run}.${++this.outsideCalls}` : undefined),
      timeLeftMs: () => this.podsAccess?.timeLeftMs() ?? 0,
      signal: this.signal,
    }));
  }

  /** Parked outside any step (an empty bucket of the service's): until when. */
  parkedUntil: number | undefined;

  /** The run parks until then, though no step asked for it. */
  parkOutsideSteps(at: number): void {
    this.parkedUntil = at;
  }

  /** The call's steps, if it used any. */
  get steps(): HandlerSteps | undefined {
    return this.made;
  }
}

const afterReturn = () => new StepError('step_after_return', 'ctx.pods was called after the handler returned: await every call before returning', true);

const NO_PODS = () => Promise.reject(new Error('ctx.pods: this runner has no pod client (podhook serve and the Worker make one from SVC_BASE_URL and the API key)'));
