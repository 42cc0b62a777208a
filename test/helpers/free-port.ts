import { createServer } from 'node:net';

/**
 * A port nobody listens on now on 127.0.0.1 (for a server whose port must be known before it
 * starts), from the kernel. Fixed or random picks from a range collided: ports above 32767 are
 * also the kernel's ephemeral range, which clients' own connections draw from (a bench series
 * once failed with EADDRINUSE that way). The tests and the bench use this one.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}
