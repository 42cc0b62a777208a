import { PodsError, PodsRateLimited } from '../../core/pods/pods-error.js';
import type { PodsClient } from '../../core/pods/pods-client.js';
import { PODS_OPERATIONS, type PodsOperationName } from '../../core/pods/pods-operations.js';
import type { AskError } from './thread-protocol.js';


/** An error as it crosses between threads. */
export function askError(error: unknown): AskError {
  if (error instanceof PodsRateLimited) {
    return { kind: 'rate_limited', name: error.name, message: error.message, requestId: error.requestId, details: error.details, operation: error.operation, bucket: error.bucket, retryAt: error.retryAt };
  }
  if (error instanceof PodsError) {
    return { kind: 'pods', name: error.name, message: error.message, code: error.code, status: error.status, requestId: error.requestId, details: error.details, operation: error.operation };
  }
  return { kind: 'error', name: error instanceof Error ? error.name : 'Error', message: error instanceof Error ? error.message : String(error) };
}

/** The same error again, on this side. */
export function errorFrom(data: AskError): Error {
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
 * signal cannot cross: `ask` is given it, and tells the receiver to stop when it fires.
 */
export function podsOverPort(ask: (name: PodsOperationName, args: unknown[], signal: AbortSignal | undefined) => Promise<unknown>): PodsClient {
  const client = {
    pages: () => {
      throw new Error('pages are walked by ctx.pods itself, through list');
    },
  } as unknown as Record<string, unknown>;
  for (const name of PODS_OPERATIONS) {
    client[name] = (...args: unknown[]) => {
      const last = args.at(-1) as { signal?: AbortSignal } | undefined;
      let signal: AbortSignal | undefined;
      if (last && typeof last === 'object' && 'signal' in last) {
        const { signal: s, ...rest } = last;
        signal = s;
        args = [...args.slice(0, -1), rest];
      }
      return ask(name, args, signal);
    };
  }
  return client as unknown as PodsClient;
}
