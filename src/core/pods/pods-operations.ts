import { UUID } from '../ingest/receive-delivery.js';
import type { BucketName } from '../limits/bucket-size.js';
import { PodsError } from './pods-error.js';
import type { PodsOperation } from './pods-observer.js';
import { isPodAction, POD_ACTIONS, type ChatTicket, type MintedKey, type PodAction, type PodsPage, type QueuedAction } from './pods-types.js';
import type { PodsWireNames } from './pods-wire.js';
import { answerJson, serviceError, type RawServiceAnswer } from './service-answer.js';
import type { ServiceRequest } from './service-transport.js';

/** The longest key name the service takes (spec: Limits, Key `name`). */
export const MAX_KEY_NAME_LENGTH = 60;
/** The most pods a page may hold (spec: the list's page size, 1 to 100): a page with more is `unexpected_response`. */
export const MAX_PAGE_SIZE = 100;
/** The longest `next_cursor` taken (characters): it goes back into a URL. */
export const MAX_CURSOR_LENGTH = 2_048;

export interface ListPodsQuery {
  /** 1 to 100. */
  pageSize?: number;
  /** A previous page's `next_cursor`. */
  cursor?: string;
  /** Only the pods with this `external_ref` (the caller's own id). */
  externalRef?: string;
}

/** The pod client's calls, by name, with their arguments and values (what crosses between threads). */
export interface PodsCalls {
  list: { args: [query?: ListPodsQuery]; value: PodsPage };
  queueAction: { args: [podId: string, action: PodAction]; value: QueuedAction };
  actions: { args: [podId: string]; value: unknown };
  lastResult: { args: [podId: string]; value: unknown };
  mintKey: { args: [podId: string, name?: string]; value: MintedKey };
  chatTicket: { args: [podId: string]; value: ChatTicket };
}
export type PodsCallName = keyof PodsCalls;

/** What one call sends: its operation (as metrics name it), its bucket and its request. */
export interface PodsRequestPlan {
  operation: PodsOperation;
  bucket: BucketName;
  request: Omit<ServiceRequest, 'requestId' | 'apiKey' | 'signal'>;
}

/** A `PodsError` for input refused before anything was sent (`invalid_request`, status 0, no request id). */
export const localError = (message: string, operation: PodsOperation) => new PodsError('invalid_request', 0, `${message}: nothing was sent`, { requestId: null, operation });

function checkPodId(podId: unknown, operation: PodsOperation): string {
  if (typeof podId !== 'string' || !UUID.test(podId)) throw localError(`pod id must be a uuid (got ${JSON.stringify(podId)})`, operation);
  return podId.toLowerCase();
}

/**
 * The request a call makes, its arguments checked first where the spec bounds them (pod id, action,
 * page size, key name): `invalid_request` (status 0, nothing sent) otherwise. Pure.
 */
export function planPodsRequest<N extends PodsCallName>(name: N, args: PodsCalls[N]['args'], wire: PodsWireNames): PodsRequestPlan {
  switch (name) {
    case 'list': {
      const { pageSize, cursor, externalRef } = (args[0] ?? {}) as ListPodsQuery;
      if (pageSize !== undefined && (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE)) {
        throw localError(`pageSize must be a whole number from 1 to ${MAX_PAGE_SIZE} (got ${pageSize})`, 'list');
      }
      return {
        operation: 'list',
        bucket: 'reads',
        request: {
          method: 'GET',
          path: '/pods/v1/pods',
          query: { [wire.pageSizeParam]: pageSize?.toString(), [wire.cursorParam]: cursor || undefined, [wire.externalRefParam]: externalRef },
        },
      };
    }
    case 'queueAction': {
      const id = checkPodId(args[0], 'queueAction');
      const action = args[1];
      if (!isPodAction(action)) throw localError(`action must be one of ${POD_ACTIONS.join(', ')} (got ${JSON.stringify(action)})`, 'queueAction');
      return { operation: 'queueAction', bucket: 'writes', request: { method: 'POST', path: `/pods/v1/pods/${id}/actions`, body: { [wire.actionProperty]: action } } };
    }
    case 'actions':
    case 'lastResult':
      return { operation: 'actions', bucket: 'reads', request: { method: 'GET', path: `/pods/v1/pods/${checkPodId(args[0], 'actions')}/actions` } };
    case 'mintKey': {
      const id = checkPodId(args[0], 'mintKey');
      const keyName = args[1];
      if (keyName !== undefined) {
        const length = typeof keyName === 'string' ? [...keyName].length : 0;
        if (typeof keyName !== 'string' || length === 0 || length > MAX_KEY_NAME_LENGTH) {
          throw localError(`a key name is 1 to ${MAX_KEY_NAME_LENGTH} characters (got ${length})`, 'mintKey');
        }
      }
      return { operation: 'mintKey', bucket: 'key_mints', request: { method: 'POST', path: `/pods/v1/pods/${id}/keys`, body: keyName === undefined ? {} : { name: keyName } } };
    }
    case 'chatTicket':
      return { operation: 'chatTicket', bucket: 'writes', request: { method: 'POST', path: `/pods/v1/pods/${checkPodId(args[0], 'chatTicket')}/chat-ticket`, body: {} } };
    default:
      throw localError(`no such call ${JSON.stringify(name)}`, 'list');
  }
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * (b) Decodes a call's answer into its typed value, or throws the `PodsError` it stands for: a
 * non-2xx answer's error (`serviceError`), or `unexpected_response` for a 2xx that is not JSON
 * or lacks what the call returns (a page without a pods list or with more than it may hold, a
 * cursor too long, a poll answer that is no JSON object, …). Pure (Web APIs only): the thread
 * that made the request or the handler's own thread can run it.
 *
 * @example
 * const raw = await client.answer('list', [{ pageSize: 100 }]); // on the thread holding the key
 * const page = decodePodsAnswer('list', raw, [{ pageSize: 100 }]); // on any thread
 */
export function decodePodsAnswer<N extends PodsCallName>(name: N, raw: RawServiceAnswer, args: PodsCalls[N]['args']): PodsCalls[N]['value'] {
  const operation: PodsOperation = name === 'lastResult' ? 'actions' : (name as PodsOperation);
  const error = serviceError(raw);
  if (error) {
    error.operation ??= operation;
    throw error;
  }
  const json = answerJson(raw, operation);
  const unexpected = (what: string) => new PodsError('unexpected_response', raw.status, `the service answered HTTP ${raw.status} ${what}`, { requestId: raw.requestId, operation });
  const field = (key: string): Record<string, unknown> => {
    const value = isObject(json) ? json[key] : undefined;
    if (!isObject(value)) throw unexpected(`without ${key}`);
    return value;
  };
  switch (name) {
    case 'list': {
      if (!isObject(json) || !Array.isArray(json.pods)) throw unexpected('without a pods list');
      const asked = ((args[0] ?? {}) as ListPodsQuery).pageSize ?? MAX_PAGE_SIZE;
      if (json.pods.length > asked) throw unexpected(`with ${json.pods.length} pods on a page of at most ${asked}`);
      const next = json.next_cursor;
      if (typeof next === 'string' && next.length > MAX_CURSOR_LENGTH) throw unexpected(`with a next_cursor of ${next.length} characters (at most ${MAX_CURSOR_LENGTH})`);
      return { pods: json.pods, next_cursor: typeof next === 'string' && next !== '' ? next : null } as PodsCalls[N]['value'];
    }
    case 'queueAction':
      return field('action') as unknown as PodsCalls[N]['value'];
    case 'actions':
      if (!isObject(json)) throw unexpected('with a poll answer that is not a JSON object');
      return json as PodsCalls[N]['value'];
    case 'lastResult': {
      if (!isObject(json)) throw unexpected('with a poll answer that is not a JSON object');
      if (Object.hasOwn(json, 'last_result')) return json.last_result as PodsCalls[N]['value'];
      const nested = json.action;
      return (isObject(nested) && Object.hasOwn(nested, 'last_result') ? nested.last_result : undefined) as PodsCalls[N]['value'];
    }
    case 'mintKey':
      return { key: field('key'), endpoint: field('endpoint') } as unknown as PodsCalls[N]['value'];
    case 'chatTicket':
      return field('chat') as unknown as PodsCalls[N]['value'];
    default:
      throw unexpected(`to a call podhook does not know (${String(name)})`);
  }
}
