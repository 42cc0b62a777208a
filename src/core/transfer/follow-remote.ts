import type { Clock } from '../clock.js';
import type { ClaimResult, Delivery } from '../delivery-store.js';
import { patternMatches } from '../dispatch/router.js';
import type { EventPattern } from '../events/define-handler.js';
import { RemoteUnavailableError, type ExportClient } from './export-client.js';
import type { ListenCursorStore, ListenPosition } from './listen-cursor-store.js';

export interface FollowRemoteOptions {
  client: Pick<ExportClient, 'remote' | 'page'>;
  store: ListenCursorStore;
  /** Stores a page's deliveries locally (`createImporter`), one result per delivery. */
  importDeliveries: (deliveries: readonly Delivery[]) => Promise<ClaimResult[]>;
  /** Where to start when this remote was never followed from here (epoch ms). */
  since: number;
  /** Only these types (patterns as handlers take them); null for all. */
  types?: readonly EventPattern[] | null;
  /** Fetch what is there, then resolve; otherwise follow until `signal` aborts. */
  once?: boolean;
  signal: AbortSignal;
  /** A page was stored (the dispatcher should look for due deliveries); called for empty pages too. */
  onStored: (stored: ReadonlyArray<{ delivery: Delivery; result: ClaimResult }>) => void;
  /** The remote is unavailable; the next try is in `delayMs`. */
  onRetry: (error: RemoteUnavailableError, delayMs: number, attempt: number) => void;
  /** The remote answers again after `onRetry`. */
  onRecovered?: () => void;
  /** A position was saved for this remote: `since` does not apply. */
  onResume?: () => void;
  clock: Clock;
  /** Resolves after `ms`, or at once when `signal` aborts. */
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  /** How long the remote may hold a request (its export caps `wait` at 25 s). */
  waitSeconds?: number;
  /** A remote that answers an empty page at once (the Worker) is asked again after this. */
  pollMs?: number;
  pageSize?: number;
  backoff?: { baseMs: number; maxMs: number };
  /** `once`: consecutive failures before giving up (following retries for ever). */
  onceMaxAttempts?: number;
  /**
   * The look-back sweep: how far behind the newest delivery seen it reads again, and how often
   * (following; `once` sweeps at its end). A row committed remotely after a later-received one
   * was already read lies behind the cursor; only a read by time finds it. Null: no sweep.
   */
  sweep?: { lookbackMs: number; everyMs: number } | null;
}

/**
 * `podhook listen`'s loop: pages through a remote's export from the saved position (or `since`),
 * stores each page locally and saves the position after it, then long-polls for newer
 * deliveries. Never writes to the remote. Throws what asking again cannot fix (a 401, no admin
 * API); retries the rest with exponential backoff.
 */
export async function followRemote({
  client,
  store,
  importDeliveries,
  since,
  types = null,
  once = false,
  signal,
  onStored,
  onRetry,
  onRecovered = () => {},
  onResume = () => {},
  clock,
  sleep,
  waitSeconds = 25,
  pollMs = 2_000,
  pageSize = 100,
  backoff = { baseMs: 1_000, maxMs: 30_000 },
  onceMaxAttempts = 5,
  sweep = { lookbackMs: 10_000, everyMs: 30_000 },
}: FollowRemoteOptions): Promise<{ resumed: boolean }> {
  const saved = await store.readListenPosition(client.remote);
  let position: ListenPosition = saved ?? { cursor: null, since };
  // Saved at once, so a listen stopped before any delivery came starts here again, not at "now".
  if (!saved) await store.writeListenPosition(client.remote, position, clock());
  else onResume();
  // One exact type is filtered by the remote; patterns and lists here.
  const serverType = types?.length === 1 && !types[0]!.includes('*') ? types[0] : undefined;
  // A delivery the remote quarantined as a conflict was never dispatched there: it is not run here either.
  const wanted = (d: Delivery) => d.status !== 'quarantined' && (types === null || types.some((p) => patternMatches(p, d.eventType)));
  let failures = 0;
  /** The newest `received_at` read from the remote in this run: where the sweep looks back from. */
  let newest: number | null = null;
  let sweptAt = clock();

  /** Reads the look-back window again by time and stores what the cursor passed over; best effort. */
  const lookBack = async (upTo: number, { lookbackMs }: { lookbackMs: number }) => {
    let cursor: string | null = null;
    try {
      for (;;) {
        const page = await client.page({ cursor, since: upTo - lookbackMs, type: serverType, waitSeconds: 0, limit: pageSize, signal });
        // Newer rows are the cursor's to read, so each is stored and reported once.
        const rows = page.deliveries.filter((d) => d.receivedAt <= upTo && wanted(d)).map(queuedHere);
        const results = await importDeliveries(rows);
        const missed = rows.map((delivery, i) => ({ delivery, result: results[i]! })).filter((r) => r.result.outcome !== 'duplicate');
        if (missed.length > 0) onStored(missed);
        if (page.deliveries.length < pageSize || page.deliveries.at(-1)!.receivedAt > upTo || !page.next) return;
        cursor = page.next;
      }
    } catch (error) {
      if (!(error instanceof RemoteUnavailableError)) throw error; // the next sweep tries again
    }
  };

  while (!signal.aborted) {
    const wait = once ? 0 : waitSeconds;
    const asked = clock();
    let page;
    try {
      page = await client.page({ cursor: position.cursor, since: position.since, type: serverType, waitSeconds: wait, limit: pageSize, signal });
    } catch (error) {
      if (signal.aborted) break;
      if (!(error instanceof RemoteUnavailableError)) throw error;
      failures++;
      if (once && failures >= onceMaxAttempts) throw error;
      const delay = Math.min(backoff.maxMs, backoff.baseMs * 2 ** (failures - 1));
      onRetry(error, delay, failures);
      await sleep(delay, signal);
      continue;
    }
    if (failures > 0) onRecovered();
    failures = 0;
    for (const d of page.deliveries) newest = Math.max(newest ?? d.receivedAt, d.receivedAt);
    const rows = page.deliveries.filter(wanted).map(queuedHere);
    const results = await importDeliveries(rows);
    onStored(rows.map((delivery, i) => ({ delivery, result: results[i]! })));
    if (page.next && page.next !== position.cursor) {
      position = { ...position, cursor: page.next };
      await store.writeListenPosition(client.remote, position, clock());
    }
    if (page.deliveries.length >= pageSize) continue; // more is waiting
    if (sweep && newest !== null && (once || clock() - sweptAt >= sweep.everyMs)) {
      await lookBack(newest, sweep);
      sweptAt = clock();
    }
    if (once) break;
    // An empty page before the wait was up: the remote does not hold requests (the Worker).
    if (page.deliveries.length === 0 && clock() - asked < wait * 1000 - 1_000) await sleep(pollMs, signal);
  }
  return { resumed: saved !== null };
}

/** Whatever its status there, a delivery starts here as new: queued, due now, no attempts. */
const queuedHere = (d: Delivery): Delivery => ({ ...d, status: 'queued', attempts: 0, lastError: null, nextAttemptAt: d.receivedAt, processedAt: null });

