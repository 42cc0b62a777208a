import { Session } from 'node:inspector';
import type { Worker } from 'node:worker_threads';
import { RUNNING_CALL_KEY } from '../call-scope.js';

/** The call whose code a stuck thread runs: its delivery and place in its job. */
export interface StuckCall {
  eventId: string;
  index: number;
}

/**
 * Names the call whose code a thread that stopped answering is running, by pausing the thread
 * through the inspector (its `NodeWorker` domain, which reaches a thread busy in a loop) and
 * reading the call scope's `AsyncLocalStorage` at the paused frame (node/call-scope.ts). Nothing
 * of this runs, and nothing is kept per callback, while no thread is stuck. Resolves `null` when
 * the paused code belongs to no call (a finished call's timer), `undefined` when the thread could
 * not be read within `timeoutMs`. The caller ends the thread afterwards: it is left paused.
 */
export function readStuckCall(worker: Worker, timeoutMs = 2_000): Promise<StuckCall | null | undefined> {
  const session = new Session();
  let finish!: (value: StuckCall | null | undefined) => void;
  const done = new Promise<StuckCall | null | undefined>((resolve) => (finish = resolve));
  const timer = setTimeout(() => finish(undefined), timeoutMs);
  let sessionId: string | undefined;
  let seq = 0;
  const replies = new Map<number, (message: { result?: Record<string, unknown>; error?: unknown }) => void>();
  const send = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<{ result?: Record<string, unknown>; error?: unknown }>((resolve) => {
      const id = ++seq;
      replies.set(id, resolve);
      session.post('NodeWorker.sendMessageToWorker', { sessionId, message: JSON.stringify({ id, method, params }) }, () => {});
    });
  session.on('NodeWorker.attachedToWorker', (m: { params: { sessionId: string; workerInfo: { title: string } } }) => {
    // The inspector's own worker ids are not thread ids (a thread's ESM loader has a worker too): the title names the thread.
    if (sessionId !== undefined || /^\[worker (\d+)\]/.exec(m.params.workerInfo.title)?.[1] !== String(worker.threadId)) return;
    sessionId = m.params.sessionId;
    void send('Debugger.enable').then(() => send('Debugger.pause'));
  });
  session.on('NodeWorker.receivedMessageFromWorker', (m: { params: { sessionId: string; message: string } }) => {
    if (m.params.sessionId !== sessionId) return;
    const message = JSON.parse(m.params.message) as { id?: number; method?: string; params?: { callFrames?: Array<{ callFrameId: string }> }; result?: Record<string, unknown> };
    if (message.id !== undefined) {
      replies.get(message.id)?.(message);
      replies.delete(message.id);
      return;
    }
    if (message.method !== 'Debugger.paused') return;
    // Evaluated in the thread's global scope while it is paused: the async context is the paused code's.
    const expression = `globalThis[Symbol.for(${JSON.stringify(RUNNING_CALL_KEY.description)})]?.() ?? null`;
    void send('Runtime.evaluate', { expression, returnByValue: true }).then((reply) => {
      const value = (reply.result?.result as { value?: unknown } | undefined)?.value;
      if (value === null) return finish(null);
      const call = value as Partial<StuckCall> | undefined;
      finish(call && typeof call.eventId === 'string' && typeof call.index === 'number' ? { eventId: call.eventId, index: call.index } : undefined);
    });
  });
  try {
    session.connect();
    session.post('NodeWorker.enable', { waitForDebuggerOnStart: false }, () => {});
  } catch {
    finish(undefined);
  }
  return done.finally(() => {
    clearTimeout(timer);
    try {
      session.disconnect();
    } catch {
      // already gone
    }
  });
}
