/** How one ingest request ended, as metrics and logs see it. */
export interface IngestOutcome {
  outcome: 'accepted' | 'duplicate' | 'ignored' | 'dead' | 'quarantined' | 'rejected';
  status: number;
  reason?: string;
  eventType?: string;
  /** The event id: the stored one, or a refused request's when it has a uuid's shape. */
  eventId?: string;
  latencyMs: number;
}
