/** The service's Webhook resource (spec: Resources, Webhook). */
export interface Webhook {
  id: string;
  url: string;
  /** The types it receives; absent or null when it receives every event. */
  event_types?: string[] | null;
  /** False when the account owner turned it off. */
  enabled: boolean;
  /** Set when the service gave up delivering (retry schedule exhausted); not the same as `enabled: false`. */
  disabled_by_us_at: string | null;
  failure_count: number;
  last_error: string | null;
  last_delivery_at: string | null;
  created_at: string;
}

/** The creation response's webhook: the only time the signing secret is shown. */
export interface CreatedWebhook extends Webhook {
  secret: string;
  secret_note?: string;
}

/** Where webhooks are created, below `{base_url}`. */
export const WEBHOOKS_PATH = '/pods/v1/webhooks';

/** Where compute API keys are minted (spec: Authentication), for messages about a missing or wrong key. */
export const API_KEY_HOME = 'the dashboard, under Settings → API Keys';
