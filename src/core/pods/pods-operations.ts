import type { PodsClient } from './pods-client.js';

/**
 * The pod client's calls, each one request to the service (`pages` walks `list`): the one list a
 * handler thread's stand-in (and the thread protocol's `pods` ask) derive from.
 */
export const PODS_OPERATIONS = ['list', 'queueAction', 'actions', 'lastResult', 'mintKey', 'chatTicket'] as const satisfies readonly (keyof PodsClient)[];
export type PodsOperationName = (typeof PODS_OPERATIONS)[number];
