import type { Delivery } from '../delivery.js';
import { PodhookError } from '../errors.js';
import { parseExportLine } from './delivery-export.js';

/** The admin API's export route, below the remote's base URL. */
export const EXPORT_ROUTE = '_podhook/api/export';

export interface ExportPageQuery {
  /** The remote's cursor of the next page; without it the page starts at `since`. */
  cursor?: string | null;
  /** Epoch ms: only deliveries received at or after it (ignored by the remote after a cursor). */
  since?: number;
  /** One exact event type, filtered by the remote. */
  type?: string;
  /** Long poll: how long the remote may hold the request for a newer delivery (0 to 25 s). */
  waitSeconds: number;
  limit: number;
  signal?: AbortSignal;
}

export interface ExportPage {
  deliveries: Delivery[];
  /** `x-podhook-next-cursor`: where the next page starts (absent when nothing was ever read). */
  next: string | null;
}

/** The remote refused the admin token (401): asking again will not help. */
export class RemoteUnauthorizedError extends PodhookError {
  constructor(remote: string) {
    super('remote_unauthorized', 401, `${remote} refused the admin token (401): check --token or PODHOOK_ADMIN_TOKEN against the ADMIN_TOKEN set there`);
  }
}

/** The remote answered something asking again will not change (no admin API, a refused query). */
export class RemoteRefusedError extends PodhookError {
  constructor(message: string, status: number) {
    super('remote_refused', status, message);
  }
}

/** The remote could not be reached or failed for now (network, 5xx, 429): worth retrying. */
export class RemoteUnavailableError extends PodhookError {
  constructor(message: string, cause?: unknown) {
    super('remote_unavailable', 503, message, { cause });
  }
}

export interface ExportClientOptions {
  /** The remote's base URL (`https://hooks.example.com`, or with a path prefix). */
  baseUrl: string;
  /** The remote's ADMIN_TOKEN: sent as a bearer token, never put in a message. */
  token: string;
  fetch?: typeof fetch;
}

/**
 * Reads a remote podhook's `GET /_podhook/api/export` (JSON Lines, oldest first, the next page's
 * cursor in `x-podhook-next-cursor`), read-only: it sends nothing but GETs.
 */
export function createExportClient({ baseUrl, token, fetch: fetchImpl = fetch }: ExportClientOptions) {
  const base = new URL(baseUrl);
  base.pathname = base.pathname.endsWith('/') ? base.pathname : `${base.pathname}/`;
  const endpoint = new URL(EXPORT_ROUTE, base);
  const remote = `${base.origin}${base.pathname.replace(/\/+$/, '')}`;

  return {
    /** The remote's name in messages and the cursor table: origin and path, no query. */
    remote,
    async page({ cursor, since, type, waitSeconds, limit, signal }: ExportPageQuery): Promise<ExportPage> {
      const url = new URL(endpoint);
      if (cursor) url.searchParams.set('cursor', cursor);
      else if (since !== undefined) url.searchParams.set('since', new Date(since).toISOString());
      if (type !== undefined) url.searchParams.set('type', type);
      url.searchParams.set('limit', String(limit));
      if (waitSeconds > 0) url.searchParams.set('wait', String(waitSeconds));
      let response: Response;
      try {
        response = await fetchImpl(url, { headers: { authorization: `Bearer ${token}`, accept: 'application/x-ndjson' }, signal, redirect: 'manual' });
      } catch (error) {
        if (signal?.aborted) throw error;
        throw new RemoteUnavailableError(`${remote} could not be reached (${networkReason(error)})`, error);
      }
      if (response.status === 401) {
        await response.body?.cancel();
        throw new RemoteUnauthorizedError(remote);
      }
      if (response.status >= 500 || response.status === 429 || response.status === 408) {
        await response.body?.cancel();
        throw new RemoteUnavailableError(`${remote} answered ${response.status}`);
      }
      if (response.status >= 300 && response.status < 400) {
        await response.body?.cancel();
        // Not followed: the token goes to the host named in --from and nowhere else.
        const location = response.headers.get('location');
        throw new RemoteRefusedError(`${remote} redirects the export${location ? ` to ${location.slice(0, 200)}` : ''}: give the final URL as --from (redirects are not followed)`, response.status);
      }
      if (response.status !== 200) {
        const detail = response.status === 404
          ? 'no admin API there: set ADMIN_TOKEN on that podhook (the admin API is off without it), and check the URL'
          : await errorMessage(response);
        throw new RemoteRefusedError(`${remote} answered ${response.status} to the export: ${detail}`, response.status);
      }
      let text: string;
      try {
        text = await response.text();
      } catch (error) {
        if (signal?.aborted) throw error;
        throw new RemoteUnavailableError(`${remote}: the answer was cut off (${networkReason(error)})`, error);
      }
      const deliveries: Delivery[] = [];
      for (const line of text.split('\n')) {
        if (line.trim() === '') continue;
        try {
          deliveries.push(parseExportLine(line));
        } catch (error) {
          throw new RemoteRefusedError(`${remote} sent a record this podhook cannot read: ${(error as Error).message}`, 502);
        }
      }
      return { deliveries, next: response.headers.get('x-podhook-next-cursor') };
    },
  };
}

export type ExportClient = ReturnType<typeof createExportClient>;

/** The network error's own code (ECONNREFUSED, ENOTFOUND, ...) when the runtime gives one. */
function networkReason(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}

async function errorMessage(response: Response): Promise<string> {
  const text = await response.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { error?: { message?: string } };
    if (body.error?.message) return body.error.message;
  } catch {
    // not the admin API's error shape: show its start
  }
  return text.slice(0, 200) || response.statusText;
}
