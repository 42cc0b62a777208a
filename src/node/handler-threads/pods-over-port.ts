import { PodsError, PodsRateLimited } from '../../core/pods/pods-error.js';
import type { PodsClient } from '../../core/pods/pods-client.js';
import type { PodsErrorData, PodsOperationName } from './thread-protocol.js';

/** A call's error as it crosses between threads. */
export function podsErrorData(error: unknown): PodsErrorData {
  if (error instanceof PodsRateLimited) {
    return { kind: 'rate_limited', name: error.name, message: error.message, requestId: error.requestId, details: error.details, operation: error.operation, bucket: error.bucket, retryAt: error.retryAt };
  }
  if (error instanceof PodsError) {
    return { kind: 'pods', name: error.name, message: error.message, code: error.code, status: error.status, requestId: error.requestId, details: error.details, operation: error.operation };
  }
  return { kind: 'error', name: error instanceof Error ? error.name : 'Error', message: error instanceof Error ? error.message : String(error) };
}

/** The same error again, on this side. */
export function podsErrorFrom(data: PodsErrorData): Error {
  const common = { requestId: data.requestId ?? null, details: data.details, operation: data.operation };
  if (data.kind === 'rate_limited') return new PodsRateLimited({ ...common, bucket: data.bucket!, retryAt: data.retryAt!, message: data.message });
  if (data.kind === 'pods') return new PodsError(data.code!, data.status!, data.message, common);
  const error = new Error(data.message);
  error.name = data.name;
  return error;
}

/**
 * The pod client a handler thread sees: each call sent to the receiver's thread, which makes it
 * with the deployment's client (the API key and the buckets never enter the thread). A call's
 * signal stays here: a structured clone cannot carry it, and the call ends by its own time limit.
 */
export function podsOverPort(ask: (op: PodsOperationName, args: unknown[]) => Promise<unknown>): PodsClient {
  const strip = (o?: { signal?: AbortSignal }) => {
    if (!o) return o;
    const { signal: _signal, ...rest } = o;
    return rest;
  };
  return {
    list: (q, o) => ask('list', [q, strip(o)]) as ReturnType<PodsClient['list']>,
    pages: () => {
      throw new Error('pages are walked by ctx.pods itself, through list');
    },
    queueAction: (id, a, o) => ask('queueAction', [id, a, strip(o)]) as ReturnType<PodsClient['queueAction']>,
    actions: (id, o) => ask('actions', [id, strip(o)]),
    lastResult: (id, o) => ask('lastResult', [id, strip(o)]),
    mintKey: (id, o) => ask('mintKey', [id, strip(o)]) as ReturnType<PodsClient['mintKey']>,
    chatTicket: (id, o) => ask('chatTicket', [id, strip(o)]) as ReturnType<PodsClient['chatTicket']>,
  };
}
