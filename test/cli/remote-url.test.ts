// `podhook listen --from`: which URLs may carry the admin token.
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/cli/command.js';
import { remoteUrl } from '../../src/cli/remote-url.js';

describe('remoteUrl (listen --from)', () => {
  it.each([
    'https://hooks.example.com',
    'https://hooks.example.com/podhook/',
    'http://127.0.0.1:3000',
    'http://127.1:3000',
    'http://0x7f000001/',
    'http://[::1]:8787',
    'http://[::ffff:127.0.0.1]/',
    'http://localhost:3000',
    'http://LOCALHOST./',
    'http://dev.localhost:3000',
  ])('accepts %s', (url) => {
    expect(remoteUrl(url).href).toBe(new URL(url).href);
  });

  it.each([
    ['http://hooks.example.com', /must be https:\/\//],
    ['http://10.0.0.7', /must be https:\/\//],
    ['http://[fe80::1]/', /must be https:\/\//],
    ['http://127.0.0.1.example.com/', /must be https:\/\//],
    ['ftp://127.0.0.1/', /must be https:\/\//],
    ['https://user:secret@hooks.example.com', /must not carry credentials/],
    ['hooks.example.com', /must be an absolute URL/],
    [undefined, /give --from URL/],
  ])('refuses %s', (url, message) => {
    expect(() => remoteUrl(url)).toThrow(UsageError);
    expect(() => remoteUrl(url)).toThrow(message);
    if (url?.includes('secret')) expect(() => remoteUrl(url)).not.toThrow(/secret/);
  });
});
