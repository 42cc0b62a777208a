import { serve } from '@hono/node-server';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServiceEmulator, type ServiceEmulator, type ServiceEmulatorOptions } from './create-service-emulator.js';

export interface StartEmulatorOptions extends ServiceEmulatorOptions {
  /** 0 picks a free port. */
  port?: number;
  host?: string;
}

export interface RunningEmulator {
  /** Its `{base_url}`, e.g. `http://127.0.0.1:4010`. */
  url: string;
  port: number;
  emulator: ServiceEmulator;
  close(): Promise<void>;
}

/** Serves the service emulator over HTTP on Node (loopback by default) and resolves once it listens. */
export async function startEmulator({ port = 0, host = '127.0.0.1', ...options }: StartEmulatorOptions): Promise<RunningEmulator> {
  const emulator = createServiceEmulator(options);
  const server = await new Promise<Server>((resolve, reject) => {
    const s = serve({ fetch: emulator.app.fetch, port, hostname: host }) as Server;
    s.once('listening', () => resolve(s));
    s.once('error', reject);
  });
  const { port: bound } = server.address() as AddressInfo;
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${shown.includes(':') ? `[${shown}]` : shown}:${bound}`,
    port: bound,
    emulator,
    close() {
      closing ??= new Promise<void>((resolve) => {
        emulator.close();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
