import type { Clock } from '../clock.js';
import { configuredPods, type ConfiguredPodsOptions } from './configured-pods.js';
import type { AnsweringPodsClient } from './pods-client.js';
import { PodsRateLimited } from './pods-error.js';

/** How often a missing configuration is looked for again (a key stored meanwhile is found). */
const RETRY_CONFIG_MS = 5_000;

export interface PodsAccessOptions extends ConfiguredPodsOptions {
  clock: Clock;
  /** A handler's call found its bucket empty beyond its time left: its run parks until `retryAt`. */
  onParked?(bucket: string, retryAt: number): void;
}

/**
 * The deployment's pod client for handlers (`ctx.pods`), made when a handler first calls the
 * service and shared by every run of this receiver. While it cannot be made (no SVC_BASE_URL, no
 * API key) each call fails with what to set, looked for again every few seconds: a key stored
 * with `podhook secrets add --api-key` is picked up without a restart. Once made, it reads the
 * key before each request (`createApiKeySource`): a key rotated later is used within a second.
 */
export function createPodsAccess({ clock, onParked, ...options }: PodsAccessOptions): () => Promise<AnsweringPodsClient> {
  let made: Promise<AnsweringPodsClient> | undefined;
  let failedAt = -Infinity;
  let failure: Error | undefined;
  return () => {
    if (made) return made;
    if (failure && clock() - failedAt < RETRY_CONFIG_MS) return Promise.reject(failure);
    const attempt = configuredPods({ ...options, clock }).then((pods) => {
      if (!pods.ok) throw new Error(`ctx.pods: ${pods.message}`);
      return reportingParks(pods.client, onParked);
    });
    made = attempt;
    attempt.catch((error: Error) => {
      made = undefined;
      failure = error;
      failedAt = clock();
    });
    return attempt;
  };
}

/** The client, telling `onParked` of each call that gives up for an empty bucket. */
function reportingParks(client: AnsweringPodsClient, onParked: PodsAccessOptions['onParked']): AnsweringPodsClient {
  if (!onParked) return client;
  const watch = <T>(p: Promise<T>): Promise<T> =>
    p.catch((error: unknown) => {
      if (error instanceof PodsRateLimited) onParked(error.bucket, error.retryAt);
      throw error;
    });
  return {
    answer: (name, args, o) => watch(client.answer(name, args, o)),
    list: (q, o) => watch(client.list(q, o)),
    pages: client.pages.bind(client),
    queueAction: (id, a, o) => watch(client.queueAction(id, a, o)),
    actions: (id, o) => watch(client.actions(id, o)),
    lastResult: (id, o) => watch(client.lastResult(id, o)),
    mintKey: (id, o) => watch(client.mintKey(id, o)),
    chatTicket: (id, o) => watch(client.chatTicket(id, o)),
  };
}
