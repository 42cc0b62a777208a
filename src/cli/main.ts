import { ConfigError } from '../core/errors.js';
import { closest } from './closest.js';
import { EXIT, UsageError, type Command, type CommandIo } from './command.js';
import { backfillCommand } from './commands/backfill.js';
import { deliveriesCommand } from './commands/deliveries.js';
import { emulateCommand } from './commands/emulate.js';
import { exportCommand } from './commands/export.js';
import { handlersCommand } from './commands/handlers.js';
import { importCommand } from './commands/import.js';
import { listenCommand } from './commands/listen.js';
import { podsCommand } from './commands/pods.js';
import { registerCommand } from './commands/register.js';
import { replayCommand } from './commands/replay.js';
import { schemasCommand } from './commands/schemas.js';
import { secretsCommand } from './commands/secrets.js';
import { sendCommand } from './commands/send.js';
import { serveCommand } from './commands/serve.js';
import { triggerCommand } from './commands/trigger.js';

const COMMANDS: readonly Command[] = [
  serveCommand,
  deliveriesCommand,
  registerCommand,
  secretsCommand,
  podsCommand,
  emulateCommand,
  exportCommand,
  importCommand,
  listenCommand,
  replayCommand,
  backfillCommand,
  sendCommand,
  triggerCommand,
  handlersCommand,
  schemasCommand,
];

function overview(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return `podhook: receive, verify, store and route the pod-hosting service's webhook events.

Usage: podhook <command> [options]      podhook <command> --help

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n')}

Exit codes: 0 success, 1 the command failed, 2 bad usage or configuration
(a command's --help lists its own).
`;
}

/** Runs the CLI; returns the exit code. */
export async function main(argv: string[], io: CommandIo = processIo()): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.stdout(overview());
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    const near = closest(name, COMMANDS.map((c) => c.name));
    io.stderr(`podhook: unknown command "${name}"${near ? `: did you mean podhook ${near}?` : ''} (see podhook --help)\n`);
    return EXIT.usage;
  }
  try {
    return await command.invoke(rest, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`podhook ${command.name}: ${error.message} (see podhook ${command.name} --help)\n`);
      return EXIT.usage;
    }
    if (error instanceof ConfigError) {
      io.stderr(`podhook: ${error.message}\n`);
      return EXIT.usage;
    }
    io.stderr(`podhook ${command.name}: ${(error as Error).message}\n`);
    return EXIT.failure;
  }
}

function processIo(): CommandIo {
  return {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
    env: process.env,
    stdin: process.stdin,
    stderrIsTTY: process.stderr.isTTY === true,
  };
}
