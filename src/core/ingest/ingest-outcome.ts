/** How one ingest request ended, as metrics and logs see it. */
export interface IngestOutcome {
  outcome: 'accepted' | 'duplicate' | 'ignored' | 'dead' | 'quarantined' | 'rejected';
  status: number;
  reason?: string;
  eventType?: string;
  latencyMs: number;
}
