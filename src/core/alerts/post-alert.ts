/** Sends one alert's JSON; resolves with the HTTP status, rejects when nothing was answered. */
export type AlertPost = (json: string) => Promise<number>;

/** Waits between tries (tests pass one that only records). */
export type Sleep = (ms: number) => Promise<void>;

/** The pauses before the second, third and fourth try: four tries within about 21 s (a Worker's waitUntil lasts about 30 s). */
export const ALERT_RETRY_DELAYS_MS: readonly number[] = [1_000, 4_000, 16_000];

export type PostOutcome = { ok: true; tries: number } | { ok: false; tries: number; status: number | null; error: string | null };

export interface PostAlertOptions {
  sleep: Sleep;
  retryDelaysMs?: readonly number[];
}

/** 408, 429 and 5xx may pass on a later try; any other answer will not. */
const retryable = (status: number) => status === 408 || status === 429 || status >= 500;

/**
 * POSTs an alert, trying again after each delay when the receiver cannot be reached or answers
 * 408, 429 or 5xx. Never throws.
 */
export async function postAlert(post: AlertPost, json: string, { sleep, retryDelaysMs = ALERT_RETRY_DELAYS_MS }: PostAlertOptions): Promise<PostOutcome> {
  let status: number | null = null;
  let error: string | null = null;
  for (let tries = 1; ; tries++) {
    try {
      status = await post(json);
      error = null;
      if (status >= 200 && status < 300) return { ok: true, tries };
      if (!retryable(status)) return { ok: false, tries, status, error };
    } catch (e) {
      status = null;
      error = e instanceof Error ? e.message : String(e);
    }
    const delay = retryDelaysMs[tries - 1];
    if (delay === undefined) return { ok: false, tries, status, error };
    await sleep(delay);
  }
}

/**
 * The `AlertPost` for a URL through the Web-standard `fetch` (Node and Workers alike). Redirects
 * are not followed: the alert goes only where `ALERT_WEBHOOK_URL` says.
 */
export function createFetchPost(url: string, { fetch: fetchImpl = fetch, timeoutMs = 10_000 }: { fetch?: typeof fetch; timeoutMs?: number } = {}): AlertPost {
  return async function postToAlertUrl(json) {
    const response = await fetchImpl(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: json,
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.body?.cancel();
    return response.status;
  };
}
