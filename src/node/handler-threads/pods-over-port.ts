import { PodsError, PodsRateLimited } from '../../core/pods/pods-error.js';
import { typedPodsCalls, type PodsCallOptions, type PodsClient } from '../../core/pods/pods-client.js';
import type { PodsCallName, PodsCalls } from '../../core/pods/pods-operations.js';
import type { RawServiceAnswer } from '../../core/pods/service-answer.js';
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
 * The pod client a handler thread sees: each call's request is made on the receiver's thread,
 * with the deployment's client (the API key and the buckets never enter this thread), and its
 * answer comes back as read, its bytes transferred, to be decoded here. A call's signal cannot
 * cross: `ask` is given it, and tells the receiver to stop when it fires.
 */
export function podsOverPort(ask: (name: PodsCallName, args: [PodsCalls[PodsCallName]['args'], PodsCallOptions], signal: AbortSignal | undefined) => Promise<RawServiceAnswer>): PodsClient {
  return typedPodsCalls((name, args, { signal, ...options }: PodsCallOptions = {}) => ask(name, [args, options], signal));
}
