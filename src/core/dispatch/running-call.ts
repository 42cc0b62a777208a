/** A handler call's time limit ran out. */
export class HandlerTimeoutError extends Error {
  constructor(ms: number) {
    super(`timed out after ${ms} ms`);
    this.name = 'HandlerTimeoutError';
  }
}

/** One handler call that may be ended early (time limit, shutdown); lean, as it runs per delivery. */
export class RunningCall {
  constructor(readonly eventId: string) {}
  private reject: ((reason: Error) => void) | undefined;
  private controller: AbortController | undefined;
  private reason: Error | undefined;
  /** Ended by shutdown or a lost lease rather than by its time limit. */
  interrupted = false;

  /** Settles with the handler, or rejects once ended: a handler ignoring its signal is no longer awaited. */
  race<T>(work: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.reason) return reject(this.reason);
      this.reject = reject;
      work.then(resolve, reject);
    });
  }

  /** Made only when read, as most handlers never read it. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.reason) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  end(reason: Error, interrupted = false) {
    if (this.reason) return;
    this.reason = reason;
    this.interrupted = interrupted;
    this.controller?.abort(reason);
    this.reject?.(reason);
  }
}
