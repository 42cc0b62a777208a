import { parseArgs, type ParseArgsConfig } from 'node:util';

/** Exit codes shared by every command (documented in `podhook --help`). */
export const EXIT = {
  ok: 0,
  /** The command ran and something failed (a request, a handler, the store). */
  failure: 1,
  /** Bad usage or configuration: nothing was done. */
  usage: 2,
} as const;

export type Options = NonNullable<ParseArgsConfig['options']>;

export interface CommandIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
  stdin: NodeJS.ReadableStream;
  /** Whether stderr is a terminal: progress bars are drawn only there. */
  stderrIsTTY?: boolean;
}

export interface Command<O extends Options = Options> {
  name: string;
  summary: string;
  usage: string;
  /** Help text below the usage line: options, environment, exit codes. */
  help: string;
  options: O;
  allowPositionals?: boolean;
  run(
    args: { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] },
    io: CommandIo,
  ): Promise<number>;
}

/** Identity helper for typing a command's options (as citty's `defineCommand`). */
export function defineCommand<O extends Options>(command: Command<O>): Command<O> {
  return command;
}

/** Usage errors print one line and exit 2. */
export class UsageError extends Error {}

export function parse(command: Command, argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: command.allowPositionals ?? false,
      strict: true,
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

export function helpText(command: Command): string {
  return `${command.summary}\n\nUsage: ${command.usage}\n\n${command.help.trim()}\n`;
}
