/** A handler call's time limit ran out. */
export class HandlerTimeoutError extends Error {
  constructor(ms: number) {
    super(`timed out after ${ms} ms`);
    this.name = 'HandlerTimeoutError';
  }
}

/**
 * One handler call that may be ended early: its time limit, shutdown or a lost lease
 * (`interrupted`), or an error its own code left behind (`fail`). Lean, as it runs per call: its
 * `AbortController` is made only when the handler reads its signal.
 */
export class RunningCall {
  private reject: ((reason: unknown) => void) | undefined;
  private controller: AbortController | undefined;
  private reason: unknown;
  private ended = false;
  /** Ended by shutdown or a lost lease rather than by its time limit or its own error. */
  interrupted = false;
  /** The handler's own code settled: an end after this (before `finish`) is an error it left behind as it returned. */
  private returned = false;
  /** An error the call's code left behind as it returned (a promise left to reject): it fails the call. */
  leftBehind: unknown;

  constructor(
    readonly eventId: string,
    /** The call's place in its job. */
    readonly index: number,
    readonly handler: string,
  ) {}

  /** Settles with the handler, or rejects once ended: a handler ignoring its signal is no longer awaited. */
  race<T>(work: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.ended) return reject(this.reason);
      this.reject = reject;
      work.then((value) => {
        this.returned = true;
        resolve(value);
      }, reject);
    });
  }

  /** Made only when read, as most handlers never read it. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.ended) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  /** Whether the call was ended (time limit, abort, its own stray error). */
  get isEnded(): boolean {
    return this.ended;
  }

  /** The call settled by itself: from now on it is ended, its signal untouched. */
  finish() {
    this.ended = true;
  }

  /** Ends the call with `reason`: its signal fires and it settles at once as that failure. */
  end(reason: unknown, interrupted = false) {
    if (this.ended) return;
    if (this.returned && !interrupted) {
      this.leftBehind ??= reason;
      return;
    }
    this.ended = true;
    this.reason = reason;
    this.interrupted = interrupted;
    this.controller?.abort(reason);
    this.reject?.(reason);
  }
}
