import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.js';
import { parseConfig } from '../../src/core/config.js';

describe('parseConfig', () => {
  it('applies the documented defaults', () => {
    expect(parseConfig({})).toEqual({
      port: 3000,
      host: '0.0.0.0',
      databasePath: './data/podhook.db',
      secrets: [],
      webhookPath: '/webhooks',
      maxBodyBytes: 262144,
      logLevel: 'info',
      retentionDays: 30,
      dispatch: {
        enabled: true,
        concurrency: 16,
        maxAttempts: 8,
        pollMs: 1000,
        handlerTimeoutMs: 30000,
        retryBaseMs: 2000,
        retryMaxMs: 900000,
      },
      adminToken: null,
    });
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
});
