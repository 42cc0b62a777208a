import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.js';
import { describeStore, parseConfig } from '../../src/core/config.js';

/** The error parseConfig throws for `env` (a test fails when it throws none). */
function configError(env: Record<string, string>): Error {
  try {
    parseConfig(env);
  } catch (e) {
    return e as Error;
  }
  throw new Error('no error');
}

describe('parseConfig', () => {
  it('applies the documented defaults', () => {
    expect(parseConfig({})).toEqual({
      port: 3000,
      host: '0.0.0.0',
      databasePath: './data/podhook.db',
      databaseUrl: null,
      secrets: [],
      webhookPath: '/webhooks',
      maxBodyBytes: 262144,
      logLevel: 'info',
      retentionDays: 30,
      shutdownGraceMs: 10000,
      dispatch: {
        enabled: true,
        concurrency: 16,
        maxAttempts: 8,
        pollMs: 1000,
        handlerTimeoutMs: 30000,
        leaseMs: 15000,
        retryBaseMs: 2000,
        retryMaxMs: 900000,
        orderHoldMs: 2000,
        handlerThreads: null,
        handlerThreadHeapMb: 256,
      },
      alerts: { webhookUrl: null, downtimeMinutes: 5, minIntervalMinutes: 10 },
      adminToken: null,
      stepEncryptionKey: null,
      metricsToken: null,
      pods: {
        baseUrl: null,
        apiKey: null,
        limits: {
          writes: { capacity: 60, windowMs: 60_000 },
          reads: { capacity: 240, windowMs: 60_000 },
          key_mints: { capacity: 30, windowMs: 3_600_000 },
        },
        wire: { pageSizeParam: 'limit', cursorParam: 'cursor', externalRefParam: 'external_ref', actionProperty: 'action' },
      },
      limits: {
        maxConnections: 1024,
        maxInflightBodyBytes: 33554432,
        headersTimeoutMs: 10000,
        requestTimeoutMs: 30000,
        keepAliveTimeoutMs: 5000,
      },
    });
  });

  it('takes an https alert URL anywhere and an http one only on loopback', () => {
    for (const url of ['https://hooks.example.com/services/T0/B0/x', 'http://127.0.0.1:9000/a', 'http://localhost/a', 'http://[::1]:8080/']) {
      expect(parseConfig({ ALERT_WEBHOOK_URL: url }).alerts.webhookUrl).toBe(url);
    }
    expect(parseConfig({ ALERT_DOWNTIME_MINUTES: '1', ALERT_MIN_INTERVAL_MINUTES: '30' }).alerts).toMatchObject({ downtimeMinutes: 1, minIntervalMinutes: 30 });
  });

  it.each([
    ['http://hooks.example.com/services/T0/B0/tok3n', /ALERT_WEBHOOK_URL may use http:\/\/ only for a loopback host/],
    ['http://10.0.0.5/alert-tok3n', /ALERT_WEBHOOK_URL may use http:\/\/ only for a loopback host/],
    ['ftp://127.0.0.1/tok3n', /ALERT_WEBHOOK_URL must be an https:\/\/ URL/],
    ['hooks.example.com/tok3n', /ALERT_WEBHOOK_URL must be an absolute https:\/\/ URL/],
  ])('refuses ALERT_WEBHOOK_URL=%s without echoing it (its path is often a token)', (url, message) => {
    expect(() => parseConfig({ ALERT_WEBHOOK_URL: url })).toThrow(message);
    expect(() => parseConfig({ ALERT_WEBHOOK_URL: url })).not.toThrow(/tok3n/);
  });

  it('refuses an alert downtime threshold under one minute', () => {
    expect(() => parseConfig({ ALERT_DOWNTIME_MINUTES: '0' })).toThrow(/^invalid configuration: ALERT_DOWNTIME_MINUTES must be at least 1 \(got "0"\)$/);
    expect(() => parseConfig({ ALERT_MIN_INTERVAL_MINUTES: 'ten' })).toThrow(/ALERT_MIN_INTERVAL_MINUTES must be a whole number/);
  });

  it('reads the service variables: the account\'s buckets as calls per window, the names the spec does not show', () => {
    const { pods } = parseConfig({
      SVC_BASE_URL: 'https://compute.example.com',
      SVC_API_KEY: 'sk_from_env',
      SVC_WRITE_LIMIT: '60/2s',
      SVC_READ_LIMIT: '240/m',
      SVC_KEY_MINT_LIMIT: '5/500ms',
      SVC_LIST_PAGE_SIZE_PARAM: 'page_size',
      SVC_ACTION_BODY_PROPERTY: 'type',
    });
    expect(pods).toEqual({
      baseUrl: 'https://compute.example.com',
      apiKey: 'sk_from_env',
      limits: { writes: { capacity: 60, windowMs: 2_000 }, reads: { capacity: 240, windowMs: 60_000 }, key_mints: { capacity: 5, windowMs: 500 } },
      wire: { pageSizeParam: 'page_size', cursorParam: 'cursor', externalRefParam: 'external_ref', actionProperty: 'type' },
    });
    expect(() => parseConfig({ SVC_WRITE_LIMIT: '60 per minute' })).toThrow(/^invalid configuration: SVC_WRITE_LIMIT must be calls per window, such as 60\/1m, 240\/1m, 30\/1h or 60\/2s \(got "60 per minute"\)$/);
    expect(() => parseConfig({ SVC_READ_LIMIT: '0/1m' })).toThrow(/SVC_READ_LIMIT must be calls per window/);
    expect(() => parseConfig({ SVC_LIST_CURSOR_PARAM: 'a b' })).toThrow(/SVC_LIST_CURSOR_PARAM must be 1 to 64 of/);
    expect(() => parseConfig({ SVC_BASE_URL: 'http://compute.example.com' })).toThrow(/SVC_BASE_URL must be https:\/\//);
    expect(parseConfig({ SVC_BASE_URL: 'http://127.0.0.1:4010' }).pods.baseUrl).toBe('http://127.0.0.1:4010');
  });

  it('takes a blank SVC_API_KEY as unset (the stored key is used then)', () => {
    expect(parseConfig({ SVC_API_KEY: '   ' }).pods.apiKey).toBeNull();
    expect(parseConfig({ SVC_API_KEY: ' sk_padded ' }).pods.apiKey).toBe('sk_padded');
  });

  it('never echoes METRICS_TOKEN in an error', () => {
    expect(() => parseConfig({ METRICS_TOKEN: 'short-tok' })).toThrow(/^invalid configuration: METRICS_TOKEN must be at least 16 characters$/);
  });

  it('reads SHUTDOWN_GRACE_MS, and refuses a value that is not a whole number of ms', () => {
    expect(parseConfig({ SHUTDOWN_GRACE_MS: '2500' }).shutdownGraceMs).toBe(2500);
    expect(parseConfig({ SHUTDOWN_GRACE_MS: '0' }).shutdownGraceMs).toBe(0);
    expect(() => parseConfig({ SHUTDOWN_GRACE_MS: '10s' })).toThrow(/^invalid configuration: SHUTDOWN_GRACE_MS must be a whole number from 0 to 3600000 \(got "10s"\)$/);
  });

  it('reads HANDLER_THREADS (0: the receiver\'s thread) and HANDLER_THREAD_HEAP_MB, within their bounds', () => {
    expect(parseConfig({ HANDLER_THREADS: '0', HANDLER_THREAD_HEAP_MB: '64' }).dispatch).toMatchObject({ handlerThreads: 0, handlerThreadHeapMb: 64 });
    expect(parseConfig({ HANDLER_THREADS: '3' }).dispatch.handlerThreads).toBe(3);
    expect(() => parseConfig({ HANDLER_THREADS: '65' })).toThrow(/^invalid configuration: HANDLER_THREADS must be at most 64 \(got "65"\)$/);
    expect(() => parseConfig({ HANDLER_THREAD_HEAP_MB: '8' })).toThrow(/HANDLER_THREAD_HEAP_MB must be at least 16 \(got "8"\)/);
  });

  it('reads STEP_ENCRYPTION_KEY as 64 hex digits or base64 of 32 bytes, and refuses anything else without echoing it', () => {
    expect(parseConfig({ STEP_ENCRYPTION_KEY: 'ab'.repeat(32) }).stepEncryptionKey).toBe('ab'.repeat(32));
    expect(parseConfig({ STEP_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64') }).stepEncryptionKey).toBe(Buffer.alloc(32, 7).toString('base64'));
    for (const bad of ['s3cr3t-step-key-too-short', 'ab'.repeat(31), Buffer.alloc(16).toString('base64')]) {
      expect(() => parseConfig({ STEP_ENCRYPTION_KEY: bad })).toThrow(/^invalid configuration: STEP_ENCRYPTION_KEY must be 32 bytes as 64 hex digits or base64 \(openssl rand -hex 32\)$/);
    }
  });

  it('splits comma-separated secrets, trimming blanks', () => {
    expect(parseConfig({ SVC_WEBHOOK_SECRET: ' new , old,,' }).secrets).toEqual(['new', 'old']);
  });

  it('treats an empty value as unset', () => {
    expect(parseConfig({ PORT: '', LOG_LEVEL: '' })).toMatchObject({ port: 3000, logLevel: 'info' });
  });

  it('names the variable and the value in one line', () => {
    expect(() => parseConfig({ PORT: '3k' })).toThrow(ConfigError);
    expect(() => parseConfig({ PORT: '3k' })).toThrow(/^invalid configuration: PORT must be a whole number from 0 to 65535 \(got "3k"\)$/);
    expect(() => parseConfig({ RETENTION_DAYS: '1' })).toThrow(/RETENTION_DAYS must be at least 2: the sender retries for about 22\.4 hours/);
  });

  it('selects PostgreSQL with DATABASE_URL (winning over DATABASE_PATH) and describes it without the password', () => {
    const config = parseConfig({ DATABASE_URL: 'postgres://podhook:s3cr3t-pw@db.internal:5432/podhook', DATABASE_PATH: '/data/x.db' });
    expect(config.databaseUrl).toBe('postgres://podhook:s3cr3t-pw@db.internal:5432/podhook');
    expect(describeStore(config)).toEqual({ store: 'postgres', database: 'postgres://podhook@db.internal:5432/podhook' });
    expect(describeStore(parseConfig({ DATABASE_PATH: '/data/x.db' }))).toEqual({ store: 'sqlite', database: '/data/x.db' });
    expect(parseConfig({ DATABASE_URL: 'postgresql://u@h/db' }).databaseUrl).toBe('postgresql://u@h/db');
  });

  it.each([
    ['not a url s3cr3t-pw', /^invalid configuration: SVC_BASE_URL is not a URL \(e\.g\. https:\/\/compute\.example\.com\)$/],
    ['ftp://svc:s3cr3t-pw@compute.example.com', /^invalid configuration: SVC_BASE_URL must not carry a user or password/],
    ['https://svc:s3cr3t-pw@compute.example.com', /^invalid configuration: SVC_BASE_URL must not carry a user or password/],
    ['http://compute.example.com/s3cr3t-pw', /^invalid configuration: SVC_BASE_URL must be https:\/\/ \(http only for a local emulator on 127\.0\.0\.1 or localhost; got http:\/\/compute\.example\.com\)$/],
  ])('refuses an invalid SVC_BASE_URL at start, naming the variable and never echoing it whole: %s', (value, message) => {
    const error = configError({ SVC_BASE_URL: value });
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toMatch(message);
    expect(error.message).not.toContain('s3cr3t-pw');
  });

  it.each([
    ['not a url s3cr3t-pw', /DATABASE_URL must be a URL like postgres:/],
    ['mysql://u:s3cr3t-pw@h/db', /DATABASE_URL must start with postgres:\/\/ or postgresql:\/\//],
    ['postgres://u:s3cr3t-pw@h:5432', /DATABASE_URL must name a database/],
  ])('refuses a malformed DATABASE_URL, naming the variable and never echoing it: %s', (value, message) => {
    const error = configError({ DATABASE_URL: value });
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toMatch(message);
    expect(error.message).not.toContain('s3cr3t-pw');
  });
});
