import { describeStore, parseConfig } from '../../core/config.js';
import { buildPodsReport, POD_DRIFT_KINDS, type PodsReport } from '../../core/pods/pods-report.js';
import { configuredPods } from '../../core/pods/configured-pods.js';
import { createPodLocator } from '../../core/pods/pod-locator.js';
import { PodsError, PodsRateLimited } from '../../core/pods/pods-error.js';
import { loadHandlerRegistry } from '../../node/handler-registry.js';
import { openConfiguredStore, type OpenedStore } from '../../store/node-store.js';
import { defineCommand, EXIT, UsageError } from '../command.js';
import { formatTable } from '../format-table.js';
import { HANDLERS_HELP, HANDLERS_OPTION } from '../handlers-option.js';
import { storeExists } from '../store-exists.js';

/** `podhook pods`' exit codes beyond the shared ones. */
export const PODS_EXIT = { ...EXIT, drift: 3 } as const;

/** How long `podhook pods` waits for the read bucket before giving up. */
const MAX_WAIT_MS = 5 * 60_000;

export const podsCommand = defineCommand({
  name: 'pods',
  summary: "List the account's pods beside what podhook holds for each; --drift shows where they disagree.",
  usage: 'podhook pods [--drift] [--json] [--handlers MODULE] [--page-size N]',
  help: `Lists every pod the service lists for the account (GET $SVC_BASE_URL/pods/v1/pods, page by
page, within the account's read bucket: SVC_READ_LIMIT, shared with every podhook on this
database) beside what podhook holds for it: the last event received and when.

  --drift            only the pods where the service and podhook disagree:
                       unknown_to_podhook    listed, but podhook holds no event naming it
                       destroyed_but_listed  podhook's last event for it is pod.destroyed, yet it
                                             is still listed
                       not_listed            podhook holds events for it (the last not
                                             pod.destroyed) and the service no longer lists it
  --json             the report as JSON (generated_at, listed, held, drift counts, pods, pod_ids)
${HANDLERS_HELP}
                     podhook reads each delivery's pod id where its registry says: orderFields,
                     else the payloadFields \`podhook schemas\` learned. Deliveries of a type with
                     neither are tied to no pod (a warning names the types), so their pods may
                     show as unknown_to_podhook.
  --page-size N      pods per request, 1 to 100 (default 100)

Environment:
  SVC_BASE_URL    the compute host
  SVC_API_KEY     the compute API key, sent as X-API-Key; unset: the key stored with
                  podhook secrets add --api-key
  DATABASE_URL / DATABASE_PATH  what podhook holds, as for the server

podhook holds what retention left: processed deliveries older than RETENTION_DAYS are gone.
Exit codes: 0 done (with --drift: no disagreement), 1 the service or the database failed,
2 bad usage or configuration (no SVC_BASE_URL, no API key, no database), 3 with --drift: some
pods disagree. On a service failure its code and x-request-id are printed.`,
  options: {
    drift: { type: 'boolean' },
    json: { type: 'boolean' },
    'page-size': { type: 'string' },
    ...HANDLERS_OPTION,
  },
  async run({ values }, io) {
    const say = (line: string) => io.stderr(`podhook pods: ${line}\n`);
    const sizeText = values['page-size'] ?? '100';
    if (!/^\d{1,3}$/.test(sizeText) || Number(sizeText) < 1 || Number(sizeText) > 100) throw new UsageError('--page-size must be a whole number from 1 to 100');
    const config = parseConfig(io.env);
    if (!storeExists(config)) {
      say(`no database at ${describeStore(config).database}: podhook holds nothing there (set DATABASE_PATH or DATABASE_URL)`);
      return EXIT.usage;
    }
    const registry = await loadHandlerRegistry(values.handlers).catch((error: Error) => {
      say(`${error.message}: pod ids cannot be read from deliveries`);
      return null;
    });
    const locator = createPodLocator({ fields: registry?.payloads.fields, orderFields: registry?.payloads.orderFields });

    let opened: OpenedStore;
    try {
      opened = await openConfiguredStore(config);
    } catch (error) {
      say(`cannot open the database at ${describeStore(config).database} (${(error as Error).message})`);
      return EXIT.failure;
    }
    try {
      const pods = await configuredPods({
        config: config.pods,
        store: opened.store,
        userAgent: 'podhook-cli',
        maxWaitMs: MAX_WAIT_MS,
        sleep: io.sleep,
        observer: { wait: ({ bucket, waitedMs }) => say(`waited ${Math.ceil(waitedMs / 1000)} s for the account's ${bucket} bucket`) },
      });
      if (!pods.ok) {
        say(`${pods.message}. Nothing was sent.`);
        return EXIT.usage;
      }
      let report: PodsReport;
      try {
        report = await buildPodsReport({ client: pods.client, store: opened.store, locator, clock: Date.now, driftOnly: values.drift === true, pageSize: Number(sizeText) });
      } catch (error) {
        if (error instanceof PodsError) return reportServiceError(error, say);
        throw error;
      }
      const unattributed = Object.entries(report.pod_ids.unattributed);
      if (unattributed.length > 0) {
        const n = unattributed.reduce((sum, [, count]) => sum + count, 0);
        say(
          `${n} stored deliver${n === 1 ? 'y names' : 'ies name'} no pod podhook can read (${unattributed.map(([t, c]) => `${t}: ${c}`).join(', ')}): ` +
            (report.pod_ids.source === 'none'
              ? 'the registry names no pod id field; run `podhook schemas` on real deliveries or export orderFields from handlers/index.ts. '
              : 'their payloads have no pod id where the registry says. ') +
            'Their pods may show as unknown_to_podhook.',
        );
      }
      io.stdout(values.json ? `${JSON.stringify(report, null, 2)}\n` : table(report, values.drift === true));
      const disagreeing = POD_DRIFT_KINDS.reduce((sum, k) => sum + report.drift[k], 0);
      return values.drift && disagreeing > 0 ? PODS_EXIT.drift : EXIT.ok;
    } finally {
      await opened.close();
    }
  },
});

function table(report: PodsReport, driftOnly: boolean): string {
  const counts = POD_DRIFT_KINDS.map((k) => `${report.drift[k]} ${k}`).join(', ');
  const head = `${report.listed} pod${report.listed === 1 ? '' : 's'} listed by the service, ${report.held} held by podhook; disagreeing: ${counts}.\n`;
  if (report.pods.length === 0) return `${head}${driftOnly ? 'The service and podhook agree on every pod.\n' : ''}`;
  const rows = report.pods.map((p) => ({
    pod_id: p.pod_id,
    name: p.name ?? '',
    status: p.listed ? p.status : 'not listed',
    last_event: p.last_event_type ?? '(none)',
    at: p.last_event_at ?? '',
    drift: p.drift ?? '',
  }));
  return head + formatTable(['pod_id', 'name', 'status', 'last_event', 'at', 'drift'], rows, 40);
}

function reportServiceError(error: PodsError, say: (line: string) => void): number {
  if (error instanceof PodsRateLimited) {
    say(`the account's ${error.bucket} bucket has no token before ${new Date(error.retryAt).toISOString()}: try again then`);
  } else if (error.code === 'unauthorized') {
    say('the service refused the API key (unauthorized): check SVC_API_KEY or the stored key (podhook secrets list)');
  } else {
    say(`the service failed (${error.code}): ${error.message}`);
  }
  if (error.requestId) say(`request id: ${error.requestId}`);
  return EXIT.failure;
}
