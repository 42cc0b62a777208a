import { describe, expect, it } from 'vitest';
import { createRouter, defineHandler, EVENT_TYPES, patternMatches } from '../../../src/index.js';

describe('router', () => {
  it('matches exact types, prefixes and *', () => {
    expect(patternMatches('pod.created', 'pod.created')).toBe(true);
    expect(patternMatches('pod.created', 'pod.active')).toBe(false);
    expect(patternMatches('pod.backup.*', 'pod.backup.failed')).toBe(true);
    expect(patternMatches('pod.backup.*', 'pod.backups')).toBe(false);
    expect(EVENT_TYPES.filter((t) => patternMatches('pod.backup.*', t))).toEqual(['pod.backup.completed', 'pod.backup.failed']);
    expect(EVENT_TYPES.every((t) => patternMatches('*', t))).toBe(true);
  });

  it('returns several handlers per type in registration order', () => {
    const a = defineHandler('pod.created', { name: 'a' }, () => {});
    const all = defineHandler('*', { name: 'all' }, () => {});
    const b = defineHandler('pod.created', { name: 'b' }, () => {});
    const router = createRouter([a, all, b]);
    expect(router.handlersFor('pod.created').map((h) => h.name)).toEqual(['a', 'all', 'b']);
    expect(router.handlersFor('pod.active').map((h) => h.name)).toEqual(['all']);
  });

  it('names a handler after its function, else its pattern, and refuses duplicate names', () => {
    expect(defineHandler('pod.created', async function welcome() {}).name).toBe('welcome');
    expect(defineHandler('pod.created', async () => {}).name).toBe('pod.created');
    const twice = [defineHandler('pod.created', async () => {}), defineHandler('pod.created', async () => {})];
    expect(() => createRouter(twice)).toThrow(/two handlers are named "pod.created"/);
  });
});
