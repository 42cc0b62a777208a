/** The service's resources as the pod client hands them back (spec: Resources and their fields). */

/** The six actions a pod can be asked for (spec: Queued action). */
export const POD_ACTIONS = ['restart', 'stop', 'redeploy', 'update', 'diagnose', 'logs'] as const;
export type PodAction = (typeof POD_ACTIONS)[number];

/** Actions whose output is written back and read later as `last_result` (spec: rule 2 of the actions route). */
export const ACTIONS_WITH_RESULT: readonly PodAction[] = ['diagnose', 'logs'];

export const isPodAction = (value: unknown): value is PodAction => typeof value === 'string' && (POD_ACTIONS as readonly string[]).includes(value);

/** A pod as `GET /pods/v1/pods` lists it. Values the spec does not show are typed as open strings. */
export interface Pod {
  id: string;
  name: string;
  slug: string;
  external_ref: string;
  /** `provisioning` is the only value shown. */
  status: 'provisioning' | (string & {});
  tier: 'starter' | (string & {});
  model: string;
  ai: { mode: 'managed' | (string & {}) };
  capabilities: {
    endpoint: boolean;
    wallet: boolean;
    platform_tools: boolean;
    connectors: boolean;
    channels: boolean;
    scheduler: boolean;
    backups: boolean;
  };
  endpoint: { base_url: string };
  billing: { expires_at: string; auto_renew: boolean; is_trial: boolean };
  created_at: string;
}

/** One page of the pod list, as the service answers it. */
export interface PodsPage {
  pods: Pod[];
  /** The next page's cursor; null (or absent, or empty) on the last page. */
  next_cursor: string | null;
}

/** The answer to queueing an action (202): nothing has happened yet. */
export interface QueuedAction {
  queued: string;
  /** True when the action produces output, read later as `last_result` from the poll route. */
  result_available: boolean;
  /** `/pods/v1/pods/{id}/actions` */
  poll: string;
  note: string;
}

/** A pod endpoint key: `secret` is in the minting answer only, once. */
export interface PodEndpointKey {
  id: string;
  name: string;
  secret: string;
  secret_note: string;
  prefix: string;
  last4: string;
  daily_request_cap: number;
  created_at: string;
}

/** The key-minting answer: the key and where it is used (`POST {base_url}/chat/completions`, model `agent-pod`). */
export interface MintedKey {
  key: PodEndpointKey;
  endpoint: { base_url: string; model: string };
}

/** A chat ticket for the pod's WebSocket: `websocket_url` contains the ticket and is a secret (never persist it). */
export interface ChatTicket {
  ticket: string | null;
  expires_in_seconds: number;
  scope: 'chat' | 'full';
  shared_session: string | null;
  websocket_url: string;
}
